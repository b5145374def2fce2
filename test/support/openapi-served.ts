/**
 * The OpenAPI documents as an https deployment serves them (GET /openapi/{name}.json of api/docs),
 * for the tests that hand them to integrators' tools (test/openapi-lint.test.ts,
 * test/openapi-client.test.ts). A local `make run` serves the same documents for
 * http://localhost; the production shape is what the linters' server-URL rules are about.
 */
import Koa from 'koa';
import request from 'supertest';
import { docsRoutes } from '../../api/docs/router.js';
import { DOCUMENT_NAMES, type DocumentName } from '../../api/docs/documents.js';
import { testConfig } from '../../lib/core/config.js';
import type { AppContext } from '../../lib/domain/context.js';

const SERVED_URLS = { PUBLIC_BASE_URL: 'https://api.mobility.test', PUBLIC_LEGACY_URL: 'https://mds.mobility.test' } as const;

/** Each document's body as served. */
export async function servedDocuments(): Promise<Record<DocumentName, string>> {
  const config = testConfig(SERVED_URLS);
  const app = new Koa();
  // the docs routes read nothing of the context but its configuration
  app.use(docsRoutes({ config } as AppContext));
  const out = {} as Record<DocumentName, string>;
  for (const name of DOCUMENT_NAMES) out[name] = (await request(app.callback()).get(`/openapi/${name}.json`).expect(200)).text;
  return out;
}
