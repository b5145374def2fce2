/**
 * The two HTTP hosts. The main host (PORT) serves the partner rental API (/v1, /v2), TOMP
 * (/edge/tomp), the feeds (/v1/partner-apis, /gbfs/v2) and ops routes (/healthz, /readyz, /openapi,
 * /docs; /metrics only with METRICS_TOKEN). Metrics have their own loopback listener (buildMetricsApp). The legacy MDS host (LEGACY_PORT) serves /token and /en/{zoneID}.
 * Each family is a router with its own error format; the order below puts the more specific
 * prefixes first so that `/v1/partner-apis` never reaches the partner API's 404.
 *
 * Servers listen with `withHotPath(app)`: the hourly feed files the caches can answer completely are
 * answered on the raw request before Koa (api/feeds/hot-path.ts); everything else goes to
 * `app.callback()`. Koa alone answers every request the same (tests use `app.callback()`); the hot
 * path only saves Koa's per-request cost on the hottest route.
 */
import Koa from 'koa';
import type { RequestListener } from 'node:http';
import type { AppContext } from '../lib/context.js';
import { requestEnvelope, requestTelemetry } from './middleware/request-envelope.js';
import { buildFeedDeps } from './feeds/auth.js';
import { hourFileHotPath, type HotPath } from './feeds/hot-path.js';
import { FEED_HOT_FILES } from './feeds/router.js';
import { LEGACY_HOT_FILES } from './legacy/router.js';
import { partnerRoutes } from './partner/router.js';
import { tompRoutes } from './tomp/router.js';
import { feedRoutes } from './feeds/router.js';
import { legacyRoutes } from './legacy/router.js';
import { metricsRoutes, opsRoutes } from './ops/router.js';
import { publicRoutes } from './public/router.js';
import { docsRoutes } from './docs/router.js';
import { consoleRoutes } from './console/router.js';
import { consolePage } from './console/page.js';
import { admissionFor } from '../lib/http/admission.js';

export function buildApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestEnvelope(ctx.log));
  // the hot path shares the feed routes' caches: what the ordinary route fills, it answers from
  const feeds = buildFeedDeps(ctx);
  hotPaths.set(app, hourFileHotPath(feeds, FEED_HOT_FILES, requestTelemetry(ctx.log)));
  // first after the request envelope: the feed files are the hottest routes, and their prefixes are disjoint
  // from the ops, public and docs paths, so no other router needs to look at them
  app.use(feedRoutes(ctx, feeds));
  app.use(opsRoutes(ctx));
  app.use(consolePage());
  app.use(consoleRoutes(ctx));
  app.use(publicRoutes(ctx));
  app.use(docsRoutes(ctx));
  // one admission limit for the two families whose requests hold database work
  const admission = admissionFor(ctx.config);
  app.use(tompRoutes(ctx, admission));
  app.use(partnerRoutes(ctx, admission));
  return app;
}

export function buildLegacyApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestEnvelope(ctx.log, 'legacy'));
  const feeds = buildFeedDeps(ctx);
  hotPaths.set(app, hourFileHotPath(feeds, LEGACY_HOT_FILES, requestTelemetry(ctx.log, 'legacy')));
  app.use(legacyRoutes(ctx, feeds));
  return app;
}

/** The metrics listener (METRICS_HOST:METRICS_PORT, loopback by default): GET /metrics only. */
export function buildMetricsApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestEnvelope(ctx.log, 'metrics'));
  app.use(metricsRoutes());
  return app;
}

const hotPaths = new WeakMap<Koa, HotPath>();

/**
 * The node:http listener of a host built here: the hot path first, `app.callback()` for whatever it
 * does not answer. For any other Koa app, just its callback.
 */
export function withHotPath(app: Koa): RequestListener {
  const koa = app.callback();
  const hot = hotPaths.get(app);
  if (!hot) return koa;
  return (req, res) => hot(req, res, koa);
}
