/**
 * The load process: a second process on the same machine that generates all traffic, so the
 * server under test never shares its event loop with the load generator. It runs one job at a
 * time on request from bench/run.ts.
 */
import { announceReady, serveCalls } from './lib/child.js';
import { createSender, runFlows, runHttp, runRefreshes, type ClientStack, type HttpScenario, type LoopOptions } from './lib/drivers.js';
import { runFlow, type OAuthTarget } from './lib/oauth-client.js';

serveCalls(
  {
    http: (scenario: HttpScenario & { client?: ClientStack }) => runHttp(scenario, scenario.client),
    flows: (params: { target: OAuthTarget; options: LoopOptions; client?: ClientStack }) => runFlows(params.target, params.options, params.client),
    refreshes: (params: { target: OAuthTarget; refreshTokens: string[]; options: LoopOptions; client?: ClientStack }) =>
      runRefreshes(params.target, params.refreshTokens, params.options, params.client),
    /** Runs `count` flows (16 at a time) and returns their refresh tokens, for the refresh benchmark. */
    'mint-refresh-tokens': async (params: { target: OAuthTarget; count: number; client?: ClientStack }) => {
      const { send, close } = createSender(params.client ?? 'node', 16);
      try {
        const tokens = await Promise.all(Array.from({ length: params.count }, () => runFlow(params.target, send)));
        return tokens.map((token) => token.refresh_token!);
      } finally {
        await close();
      }
    },
  },
  async () => {},
);
announceReady({ pid: process.pid });
