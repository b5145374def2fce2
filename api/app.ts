/**
 * The two HTTP hosts. The main host (PORT) serves the partner rental API (/v1, /v2), TOMP
 * (/edge/tomp), the feeds (/v1/partner-apis, /gbfs/v2) and ops routes (/healthz, /readyz,
 * /metrics, /openapi, /docs). The legacy MDS host (LEGACY_PORT) serves /token and /en/{zoneID}.
 * Each family is a router with its own error format; the order below puts the more specific
 * prefixes first so that `/v1/partner-apis` never reaches the partner API's 404.
 */
import Koa from 'koa';
import type { AppContext } from '../lib/context.js';
import { safety } from './middleware/safety.js';
import { partnerRoutes } from './partner/router.js';
import { tompRoutes } from './tomp/router.js';
import { feedRoutes } from './feeds/router.js';
import { legacyRoutes } from './legacy/router.js';
import { opsRoutes } from './ops/router.js';
import { publicRoutes } from './public/router.js';
import { docsRoutes } from './docs/router.js';

export function buildApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(safety(ctx.log));
  // first after safety: the feed files are the hottest routes, and their prefixes are disjoint
  // from the ops, public and docs paths, so no other router needs to look at them
  app.use(feedRoutes(ctx));
  app.use(opsRoutes(ctx));
  app.use(publicRoutes(ctx));
  app.use(docsRoutes(ctx));
  app.use(tompRoutes(ctx));
  app.use(partnerRoutes(ctx));
  return app;
}

export function buildLegacyApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(safety(ctx.log, 'legacy'));
  app.use(legacyRoutes(ctx));
  return app;
}
