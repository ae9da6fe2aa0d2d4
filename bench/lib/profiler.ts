/**
 * CPU profiles of a server process, one per scenario. This drives the same V8 sampling
 * profiler as `node --cpu-prof`, but through node:inspector so that each scenario's measured
 * window gets its own .cpuprofile instead of one profile mixing the whole run.
 */
import { Session } from 'node:inspector/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function profilerCalls(directory: string | undefined) {
  let session: Session | undefined;
  return {
    async 'profile-start'(): Promise<boolean> {
      if (!directory) return false;
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 200 });
      await session.post('Profiler.start');
      return true;
    },
    async 'profile-stop'(params: { name: string }): Promise<string | undefined> {
      if (!directory || !session) return undefined;
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      session = undefined;
      mkdirSync(directory, { recursive: true });
      const file = path.join(directory, `${params.name}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}
