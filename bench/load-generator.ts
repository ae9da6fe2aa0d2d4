/**
 * The load process: a second process on the same machine that generates all traffic, so the
 * server under test never shares its event loop with the load generator. It runs one job at a
 * time on request from bench/run.ts.
 */
import { announceReady, serveCalls } from './lib/child.js';
import { runAutocannon, runFlows, runRefreshes, type HttpScenario, type LoopOptions } from './lib/drivers.js';
import { runFlow, type OAuthTarget } from './lib/oauth-client.js';
import { createAgent } from './lib/http.js';

serveCalls(
  {
    http: (scenario: HttpScenario) => runAutocannon(scenario),
    flows: (params: { target: OAuthTarget; options: LoopOptions }) => runFlows(params.target, params.options),
    refreshes: (params: { target: OAuthTarget; refreshTokens: string[]; options: LoopOptions }) =>
      runRefreshes(params.target, params.refreshTokens, params.options),
    /** Runs `count` flows (16 at a time) and returns their refresh tokens, for the refresh benchmark. */
    'mint-refresh-tokens': async (params: { target: OAuthTarget; count: number }) => {
      const agent = createAgent(16);
      try {
        const tokens = await Promise.all(Array.from({ length: params.count }, () => runFlow(params.target, agent)));
        return tokens.map((token) => token.refresh_token!);
      } finally {
        agent.destroy();
      }
    },
  },
  async () => {},
);
announceReady({ pid: process.pid });
