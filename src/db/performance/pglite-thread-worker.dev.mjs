// Entry of the embedded database's thread when Fieldgate runs from its TypeScript sources (tsx, vitest): a worker
// thread has no TypeScript loader of its own, so this registers tsx, then loads the worker. Built code starts
// pglite-thread-worker.js directly.
import { register } from 'tsx/esm/api';

register();
await import('./pglite-thread-worker.ts');
