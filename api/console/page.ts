/**
 * The operator console page at /console: a static shell (HTML, script, style) and Leaflet's files,
 * read once at start from api/console/assets and node_modules/leaflet (bundled with the app, no
 * CDN, no map tiles). The shell holds no data: it asks for the ops key and reads everything from
 * /console/api (api/console/router.ts), which answers 401 without it. A browser cannot send a
 * header with its first page load, which is why the shell itself is public.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../../lib/core/paths.js';

const here = join(ROOT, 'api', 'console');
const leafletDist = dirname(createRequire(import.meta.url).resolve('leaflet/dist/leaflet.js'));

interface Asset {
  body: Buffer;
  type: string;
}

function load(path: string, type: string): Asset {
  return { body: readFileSync(path), type };
}

export function consolePage(): Koa.Middleware {
  const assets: Record<string, Asset> = {
    'console.js': load(join(here, 'assets', 'console.js'), 'application/javascript; charset=utf-8'),
    'console.css': load(join(here, 'assets', 'console.css'), 'text/css; charset=utf-8'),
    'leaflet.js': load(join(leafletDist, 'leaflet.js'), 'application/javascript; charset=utf-8'),
    'leaflet.css': load(join(leafletDist, 'leaflet.css'), 'text/css; charset=utf-8'),
  };
  const html = load(join(here, 'assets', 'console.html'), 'text/html; charset=utf-8');
  const router = new Router();
  router.get(['/console', '/console/'], (koa) => {
    koa.set('Cache-Control', 'no-cache');
    // the page runs only its own scripts and talks only to this host
    koa.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
    koa.type = html.type;
    koa.body = html.body;
  });
  router.get('/console/assets/:file', (koa) => {
    const a = assets[koa.params.file];
    if (!a) {
      koa.status = 404;
      koa.type = 'text/plain';
      koa.body = 'no such asset';
      return;
    }
    koa.set('Cache-Control', 'public, max-age=300');
    koa.type = a.type;
    koa.body = a.body;
  });
  return router.routes() as unknown as Koa.Middleware;
}
