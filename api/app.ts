/**
 * The two HTTP hosts. The main host (PORT) serves the partner rental API (/v1, /v2), TOMP
 * (/edge/tomp), the feeds (/v1/partner-apis, /gbfs/v2) and ops routes (/healthz, /readyz, /openapi,
 * /docs; /metrics only with METRICS_TOKEN). Metrics have their own loopback listener (buildMetricsApp).
 * The legacy MDS host (LEGACY_PORT) serves /token and /en/{zoneID}.
 *
 * Each host is one root router that nests its families' routers (`hostRouter`). A request is
 * answered by the one route that matches its path and method, and the families' routes cannot
 * overlap (api/kit/route-miss.ts `assertDisjoint` refuses a host whose could); a request that no
 * route takes is answered by the family whose prefix owns its path, the longest one (`/v1/partner-apis`
 * is the feeds', `/v1` the partner API's), with its 404 or 405. So the order of the families below
 * decides nothing.
 *
 * Servers listen with `withHotPath(app)`: the hourly feed files the caches can answer completely are
 * answered on the raw request before Koa (api/feeds/hot-path.ts); everything else goes to
 * `app.callback()`. Koa alone answers every request the same (tests use `app.callback()`); the hot
 * path only saves Koa's per-request cost on the hottest route.
 */
import Koa from 'koa';
import Router from '@koa/router';
import type { RequestListener } from 'node:http';
import type { AppContext } from '../lib/domain/context.js';
import { requestEnvelope, requestTelemetry } from './middleware/request-envelope.js';
import { buildFeedDeps } from './feeds/auth.js';
import { hourFileHotPath, type HotPath } from './feeds/hot-path.js';
import { FEED_HOT_FILES, feedRoutes } from './feeds/router.js';
import { LEGACY_HOT_FILES, legacyRoutes } from './legacy/router.js';
import { partnerRoutes } from './partner/router.js';
import { tompRoutes } from './tomp/router.js';
import { opsRoutes } from './ops/router.js';
import { publicRoutes } from './public/router.js';
import { docsRoutes } from './docs/router.js';
import { consoleRoutes } from './console/router.js';
import { consolePage } from './console/page.js';
import { admissionFor } from './kit/admission.js';
import { buildMetricsListener } from '../lib/core/metrics-listener.js';
import { registry } from '../lib/core/metrics.js';
import { assertDisjoint, ownerOf, routerOf, type RouteFamily } from './kit/route-miss.js';

/**
 * One koa-router that nests every family's router; a request no route takes goes to the `miss` of
 * the family whose prefix owns its path (ownerOf), else on (Koa's 404).
 */
export function hostRouter(families: readonly RouteFamily[]): Koa.Middleware {
  assertDisjoint(families);
  const root = new Router();
  for (const f of families) root.use(routerOf(f).routes());
  const routes = root.routes() as unknown as Koa.Middleware;
  return async (ctx, next) => {
    await routes(ctx, async () => {
      const owner = ownerOf(families, ctx.path);
      if (owner?.miss) await owner.miss(ctx, next);
      else await next();
    });
  };
}

/** A router of the host that owns no prefix: only its own routes (ops, docs, the public pages, the console page). */
const routesOnly = (name: string, routes: Koa.Middleware, prefixes: readonly string[] = []): RouteFamily => ({ name, routes, prefixes });

export function buildApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestEnvelope(ctx.log));
  // the hot path shares the feed routes' caches: what the ordinary route fills, it answers from
  const feeds = buildFeedDeps(ctx);
  hotPaths.set(app, hourFileHotPath(feeds, FEED_HOT_FILES, requestTelemetry(ctx.log)));
  // one admission limit for the two families whose requests hold database work
  const admission = admissionFor(ctx.config);
  app.use(
    hostRouter([
      partnerRoutes(ctx, admission),
      tompRoutes(ctx, admission),
      feedRoutes(ctx, feeds),
      // the console API answers its own misses (after its key check): it only claims its prefix
      routesOnly('console API', consoleRoutes(ctx), ['/console/api']),
      routesOnly('console page', consolePage()),
      routesOnly('ops', opsRoutes(ctx)),
      routesOnly('public pages', publicRoutes(ctx)),
      routesOnly('docs', docsRoutes(ctx)),
    ]),
  );
  return app;
}

export function buildLegacyApp(ctx: AppContext): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestEnvelope(ctx.log, 'legacy'));
  const feeds = buildFeedDeps(ctx);
  hotPaths.set(app, hourFileHotPath(feeds, LEGACY_HOT_FILES, requestTelemetry(ctx.log, 'legacy')));
  app.use(hostRouter([legacyRoutes(ctx, feeds)]));
  return app;
}

/**
 * The metrics listener (METRICS_HOST:METRICS_PORT, loopback by default): GET /metrics only, the
 * whole registry of this process (lib/core/metrics-listener.ts, shared with the publisher's listener), in the
 * request envelope: its scrapes are counted as host `metrics`.
 */
export function buildMetricsApp(ctx: AppContext): Koa {
  return buildMetricsListener(registry, ctx.log, [requestEnvelope(ctx.log, 'metrics')]);
}

const hotPaths = new WeakMap<Koa, HotPath>();

/**
 * A Koa app's callback as the node:http listener it is used as. Koa settles every request's promise
 * itself (its error handling answers and logs), so it never rejects, and node:http ignores what a
 * listener returns: nothing is lost by not handing the promise on.
 */
export function listenerOf(app: Koa): RequestListener {
  const callback = app.callback();
  return (req, res) => void callback(req, res);
}

/**
 * The node:http listener of a host built here: the hot path first, `app.callback()` for whatever it
 * does not answer. For any other Koa app, just its callback.
 */
export function withHotPath(app: Koa): RequestListener {
  const koa = listenerOf(app);
  const hot = hotPaths.get(app);
  if (!hot) return koa;
  return (req, res) => hot(req, res, koa);
}
