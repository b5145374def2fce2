/**
 * The legacy MDS host (LEGACY_PORT): its table (./endpoints.ts) with the feeds' kit. The host is
 * this family alone, so it owns every path: a miss is a 404 or 405 in the feed error body.
 */
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/domain/context.js';
import type { RouteFamily } from '../kit/route-miss.js';
import { buildFeedDeps, type FeedDeps } from '../feeds/auth.js';
import { mountEndpoints } from '../kit/endpoints.js';
import { feedKit, hotFilesOf } from '../feeds/endpoint.js';
import { feedMiss } from '../feeds/router.js';
import type { FastHourFile } from '../feeds/hot-path.js';
import { LEGACY_ENDPOINTS } from './endpoints.js';

/** `deps`: pass the app's own when its hot path (LEGACY_HOT_FILES) must share the caches. */
export function legacyRoutes(ctx: AppContext, deps: FeedDeps = buildFeedDeps(ctx)): RouteFamily {
  const router = new Router();
  mountEndpoints(router, LEGACY_ENDPOINTS, deps, feedKit(deps));
  return { name: 'legacy MDS', routes: router.routes() as unknown as Koa.Middleware, prefixes: ['/'], miss: feedMiss(router, deps.signer) };
}

/** The hourly-file routes of this host, for the hot path (api/feeds/hot-path.ts): the table's hourly-file rows. */
export const LEGACY_HOT_FILES: readonly FastHourFile[] = hotFilesOf(LEGACY_ENDPOINTS);
