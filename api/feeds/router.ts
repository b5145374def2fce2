/**
 * The feed routes of the main host: the token endpoint, MDS 2.0, GBFS 3.0 (/v1/partner-apis/...),
 * GBFS 2.2 (/gbfs/v2/...) and insurance. Requests outside these prefixes pass through untouched;
 * inside them every answer, errors included, is in the feed error format.
 */
import { routeMiss } from '../../lib/http/route-miss.js';
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { buildFeedDeps, type FeedDeps } from './auth.js';
import { feedErrors, FeedError, notFound } from './errors.js';
import { tokenHandler } from './token.js';
import { mdsRoutes } from './mds.js';
import { gbfsRoutes } from './gbfs.js';
import { insuranceRoutes } from './insurance.js';
import { MDS_2_0, INSURANCE_2_0 } from './accept.js';
import type { FeedAccess } from '../../lib/feeds/roles.js';
import type { FastHourFile } from './hot-path.js';

const PREFIXES = ['/v1/partner-apis/', '/gbfs/v2/'];

type Layer = { methods: string[] };

/** Runs `router` behind the feed error renderer; unmatched paths → 404, wrong methods → 405 (lib/http/route-miss.ts). */
export function feedHost(router: Router): Koa.Middleware {
  const routes = router.routes() as unknown as Koa.Middleware;
  const errors = feedErrors();
  return (ctx) =>
    errors(ctx, async () => {
      await routes(ctx, async () =>
        routeMiss((ctx as { matched?: Layer[] }).matched, {
          notFound: () => notFound('no such feed endpoint'),
          notAllowed: (allow) => new FeedError(405, 'bad_param', `method ${ctx.method} not allowed`, [`allowed: ${allow}`], { Allow: allow }),
        }),
      );
    });
}

/** `deps`: pass the app's own when its hot path (FEED_HOT_FILES) must share the caches. */
export function feedRoutes(ctx: AppContext, deps: FeedDeps = buildFeedDeps(ctx)): Koa.Middleware {
  const router = new Router();
  router.post('/v1/partner-apis/token', tokenHandler(deps));
  mdsRoutes(router, deps);
  gbfsRoutes(router, deps);
  insuranceRoutes(router, deps);
  const host = feedHost(router);
  return (koa, next) => (PREFIXES.some((p) => koa.path.startsWith(p)) ? host(koa, next) : next());
}

const constant = (a: FeedAccess) => () => a;

/** The hourly-file routes of the main host, for the hot path (patterns as registered in mds.ts / insurance.ts). */
export const FEED_HOT_FILES: readonly FastHourFile[] = [
  {
    re: /^\/v1\/partner-apis\/mds\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})\/trips(?:\?([^#]*))?$/,
    route: { pattern: '/v1/partner-apis/mds/:zoneID/trips', feed: 'mds_trips', param: 'end_time', offers: [MDS_2_0], fallback: MDS_2_0, access: constant({ family: 'mds', version: '2.0', endpoint: 'trips' }) },
  },
  {
    re: /^\/v1\/partner-apis\/mds\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})\/events\/historical(?:\?([^#]*))?$/,
    route: { pattern: '/v1/partner-apis/mds/:zoneID/events/historical', feed: 'mds_events', param: 'event_time', offers: [MDS_2_0], fallback: MDS_2_0, access: constant({ family: 'mds', version: '2.0', endpoint: 'events' }) },
  },
  {
    re: /^\/v1\/partner-apis\/mds\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})\/telemetry(?:\?([^#]*))?$/,
    route: { pattern: '/v1/partner-apis/mds/:zoneID/telemetry', feed: 'mds_telemetry', param: 'telemetry_time', offers: [MDS_2_0], fallback: MDS_2_0, access: constant({ family: 'mds', version: '2.0', endpoint: 'telemetry' }) },
  },
  {
    re: /^\/v1\/partner-apis\/insurance\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})\/trips(?:\?([^#]*))?$/,
    route: { pattern: '/v1/partner-apis/insurance/:zoneID/trips', feed: 'insurance_trips', param: 'end_time', offers: [INSURANCE_2_0], fallback: INSURANCE_2_0, access: constant({ family: 'insurance', endpoint: 'trips' }) },
  },
];
