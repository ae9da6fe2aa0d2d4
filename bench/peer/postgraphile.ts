/**
 * The peer of target 5: PostGraphile v5 (Amber preset) serving the tables Fieldgate migrated and
 * seeded, on the same PostgreSQL database, at POST /graphql. Needs Node >= 22: bench/run.ts runs
 * it under the Node 24 it installs into bench/.node24. No authentication (PostGraphile checks no
 * token; Fieldgate's token check is work the comparison keeps on Fieldgate's side), no GraphiQL,
 * no schema watching, a pg pool of as many connections as Fieldgate's (PEER_POOL_SIZE, from the orchestrator).
 */
import http from 'node:http';
import { postgraphile } from 'postgraphile';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/node';
import { announceFailure } from '../lib/child.js';
import { servePeer } from '../lib/peer-server.js';

async function main(): Promise<void> {
  const connectionString = process.env.DATABASE_URL;
  if (!connectionString) throw new Error('DATABASE_URL is required');
  const pgl = postgraphile({
    extends: [PostGraphileAmberPreset],
    pgServices: [makePgService({ connectionString, schemas: ['public'], poolConfig: { max: Number(process.env.PEER_POOL_SIZE) || 10 } })],
    grafserv: { graphqlPath: '/graphql', graphiql: false, watch: false },
    grafast: { explain: false },
  });
  const serv = pgl.createServ(grafserv);
  const server = http.createServer();
  server.on('error', (error) => console.error(error));
  await serv.addTo(server);
  await servePeer(server, { release: () => pgl.release(), details: { node: process.version } });
}

main().catch(announceFailure);
