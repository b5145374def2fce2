/**
 * The API documentation of the main host: GET /openapi/{partner,tomp,feeds,legacy}.json (the OpenAPI
 * 3.1 documents of api/openapi, built once from the configuration), GET /asyncapi.json (the AsyncAPI
 * 3.0 document of the vehicle protocol, which Swagger UI does not render: the page links it as JSON,
 * docs/vehicles.md is its guide) and GET /docs, a Swagger UI
 * page with a selector for the documents. Swagger UI comes from the bundled swagger-ui-dist
 * package and is served from node_modules under /docs/assets/: the page loads nothing from
 * elsewhere, so it works offline and behind a strict Content-Security-Policy (no inline script).
 */
import type Koa from 'koa';
import Router from '@koa/router';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { AppContext } from '../../lib/domain/context.js';
import { ASYNCAPI_TITLE, DOCUMENT_NAMES, DOCUMENT_TITLES, openApiDocuments, vehiclesAsyncApi, type DocumentName } from './documents.js';
import { docsPage, docsScript, DOCS_CSS } from './page.js';

const SWAGGER_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files of swagger-ui-dist the page uses; nothing else under node_modules is reachable. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // React sets style attributes; images are the bundled favicons and data: URIs of the UI
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Read once and kept (about 2 MB in all): the docs page is rarely hit, the files never change while we run. */
const assetCache = new Map<string, Promise<{ bytes: Buffer; mtime: Date }>>();
function loadAsset(file: string): Promise<{ bytes: Buffer; mtime: Date }> {
  let p = assetCache.get(file);
  if (!p) {
    const path = join(SWAGGER_DIR, file);
    p = Promise.all([readFile(path), stat(path)]).then(([bytes, info]) => ({ bytes, mtime: info.mtime }));
    p.catch(() => assetCache.delete(file));
    assetCache.set(file, p);
  }
  return p;
}

export function docsRoutes(ctx: AppContext): Koa.Middleware {
  const docs = openApiDocuments(ctx.config);
  const bodies = Object.fromEntries(DOCUMENT_NAMES.map((n) => [n, JSON.stringify(docs[n], null, 2)])) as Record<DocumentName, string>;
  const list = DOCUMENT_NAMES.map((n) => ({ key: n, name: DOCUMENT_TITLES[n], url: `/openapi/${n}.json` }));
  const asyncApi = JSON.stringify(vehiclesAsyncApi(ctx.config), null, 2);
  const page = docsPage(list, [{ name: ASYNCAPI_TITLE, url: '/asyncapi.json' }]);
  const script = docsScript(list);
  const router = new Router();

  router.get('/openapi/:name.json', (koa) => {
    const name = koa.params.name as DocumentName;
    if (!(DOCUMENT_NAMES as readonly string[]).includes(name)) {
      koa.status = 404;
      koa.body = { error: 'not_found', error_description: `no such document; try ${DOCUMENT_NAMES.map((n) => `/openapi/${n}.json`).join(', ')}` };
      return;
    }
    koa.type = 'application/json; charset=utf-8';
    koa.set('Cache-Control', 'public, max-age=300');
    koa.set('Access-Control-Allow-Origin', '*'); // a public description: other tools may load it
    koa.body = bodies[name];
  });

  router.get('/asyncapi.json', (koa) => {
    koa.type = 'application/json; charset=utf-8';
    koa.set('Cache-Control', 'public, max-age=300');
    koa.set('Access-Control-Allow-Origin', '*');
    koa.body = asyncApi;
  });

  const html = (koa: Koa.Context) => {
    koa.type = 'text/html; charset=utf-8';
    koa.set('Content-Security-Policy', CSP);
    koa.set('Cache-Control', 'no-cache');
    koa.body = page;
  };
  router.get('/docs', html);
  router.get('/docs/', html);

  router.get('/docs/init.js', (koa) => {
    koa.type = 'text/javascript; charset=utf-8';
    koa.set('Cache-Control', 'no-cache');
    koa.body = script;
  });
  router.get('/docs/docs.css', (koa) => {
    koa.type = 'text/css; charset=utf-8';
    koa.body = DOCS_CSS;
  });

  router.get('/docs/assets/:file', async (koa) => {
    const file = String(koa.params.file);
    const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!type) {
      koa.status = 404;
      koa.body = { error: 'not_found', error_description: 'no such asset' };
      return;
    }
    const asset = await loadAsset(file);
    koa.type = type;
    koa.lastModified = asset.mtime;
    // the bundle changes only with the installed package version
    koa.set('Cache-Control', 'public, max-age=86400');
    koa.body = asset.bytes;
  });

  return router.routes() as unknown as Koa.Middleware;
}
