/** Front-door static files, all from this origin (our scripts, GraphiQL and Swagger UI from npm): nothing from a CDN. */
import express from 'express';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** public/front-door, found from src/front-door and from dist/front-door alike. */
const OWN_ASSETS = fileURLToPath(new URL('../../public/front-door', import.meta.url));
const GRAPHIQL_ASSETS = path.join(path.dirname(require.resolve('@graphql-yoga/graphiql/package.json')), 'dist');
const SWAGGER_UI_ASSETS = path.dirname(require.resolve('swagger-ui-dist/package.json'));

export const ASSETS_PATH = '/assets';

export function assetsRouter(): express.Router {
  const router = express.Router();
  const options = { fallthrough: true, index: false, maxAge: '1h' } as const;
  router.use(`${ASSETS_PATH}/fieldgate`, express.static(OWN_ASSETS, options));
  router.use(`${ASSETS_PATH}/graphiql`, express.static(GRAPHIQL_ASSETS, options));
  router.use(`${ASSETS_PATH}/swagger-ui`, express.static(SWAGGER_UI_ASSETS, options));
  return router;
}
