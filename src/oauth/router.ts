import express from 'express';
import type { Runtime } from '../runtime.js';

/** The authorization server's endpoints and pages. */
export function createOAuthRouter(_runtime: Runtime): express.Router {
  return express.Router();
}
