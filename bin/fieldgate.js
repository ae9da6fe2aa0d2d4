#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx, so a checkout needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
