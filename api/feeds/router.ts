/**
 * The feed routes of the main host: the token endpoint, MDS 2.0, GBFS 3.0 (/v1/partner-apis/...),
 * GBFS 2.2 (/gbfs/v2/...), insurance and the token endpoint's RFC 8414 metadata
 * (/.well-known/oauth-authorization-server). Requests outside these prefixes pass through untouched;
 * inside them every answer, errors included, is in the feed error format.
 */
import { routeMiss } from '../../lib/http/route-miss.js';
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { buildFeedDeps, type FeedDeps } from './auth.js';
import { feedErrors, FeedError, notFound } from './errors.js';
import { mountEndpoints } from '../../lib/http/endpoints.js';
import { feedKit, hotFilesOf } from './endpoint.js';
import { FEED_ENDPOINTS } from './endpoints.js';
import { OAUTH_METADATA_PATH } from './discovery.js';
import type { FastHourFile } from './hot-path.js';

const PREFIXES = ['/v1/partner-apis/', '/gbfs/v2/', OAUTH_METADATA_PATH];

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
  mountEndpoints(router, FEED_ENDPOINTS, deps, feedKit);
  const host = feedHost(router);
  return (koa, next) => (PREFIXES.some((p) => koa.path.startsWith(p)) ? host(koa, next) : next());
}

/** The hourly-file routes of the main host, for the hot path: the table's hourly-file rows. */
export const FEED_HOT_FILES: readonly FastHourFile[] = hotFilesOf(FEED_ENDPOINTS);
