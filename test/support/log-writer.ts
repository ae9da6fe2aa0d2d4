/**
 * A process that logs through the service's stdout logger, for test/logging.test.ts: `node bin/run-ts.js
 * test/support/log-writer.ts MODE COUNT` writes COUNT numbered lines, then `wait`s for stdin to close, `exit`s at once,
 * or `throw`s.
 */
import { createLogger } from '../../src/logger.js';

const [mode = 'wait', count = '1'] = process.argv.slice(2);
const logger = createLogger('info');
for (let i = 1; i <= Number(count); i++) logger.info({ line: i }, 'numbered line');
if (mode === 'exit') process.exit(0);
if (mode === 'throw') throw new Error('the process fails after logging');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
