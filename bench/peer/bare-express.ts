/**
 * Baseline of target 3: a bare Express 5 route in a process of its own — fixed JSON, no
 * middleware, no database — the ceiling a REST read in a separate server is compared with.
 */
import http from 'node:http';
import express from 'express';
import { announceFailure } from '../lib/child.js';
import { servePeer } from '../lib/peer-server.js';

async function main(): Promise<void> {
  const app = express();
  app.get('/bare', (_req, res) => {
    res.json({ id: 1, name: 'Trail Backpack' });
  });
  await servePeer(http.createServer(app));
}

main().catch(announceFailure);
