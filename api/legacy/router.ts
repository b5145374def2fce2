/**
 * The legacy MDS host (LEGACY_PORT): POST /token and the 1.2 / 0.4 provider feeds under
 * /en/{zoneID}. The version comes from Accept, which must name 1.2 or 0.4 (else 406 listing both);
 * only city clients read these feeds. Hours not published yet answer 404 with a body that says so.
 */
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { buildFeedDeps, type FeedDeps } from '../feeds/auth.js';
import { MDS_0_4, MDS_1_2 } from '../feeds/accept.js';
import { legacyGate } from '../feeds/gates.js';
import { notYetPublished404, serveHourFile } from '../feeds/files.js';
import { single, timeHourParam } from '../feeds/params.js';
import { feedHost } from '../feeds/router.js';
import type { FastHourFile } from '../feeds/hot-path.js';
import type { FeedAccess } from '../../lib/feeds/roles.js';
import { tokenHandler } from '../feeds/token.js';
import { legacyRealtimeRoutes } from './realtime.js';

/** `deps`: pass the app's own when its hot path (LEGACY_HOT_FILES) must share the caches. */
export function legacyRoutes(ctx: AppContext, deps: FeedDeps = buildFeedDeps(ctx)): Koa.Middleware {
  const router = new Router();
  router.post('/token', tokenHandler(deps));

  router.get('/en/:zoneID/trips', async (ctx) => {
    const { zone, offer } = await legacyGate(deps, ctx, 'trips');
    const hour = timeHourParam('end_time', single(ctx.query, 'end_time'));
    await serveHourFile(deps, ctx, { feed: 'mds_trips', version: offer.version, zone, hour, contentType: offer.contentType, notPublished: notYetPublished404 });
  });

  router.get('/en/:zoneID/status_changes', async (ctx) => {
    const { zone, offer } = await legacyGate(deps, ctx, 'status_changes');
    const hour = timeHourParam('event_time', single(ctx.query, 'event_time'));
    await serveHourFile(deps, ctx, { feed: 'mds_status_changes', version: offer.version, zone, hour, contentType: offer.contentType, notPublished: notYetPublished404 });
  });

  legacyRealtimeRoutes(router, deps);
  return feedHost(router);
}

/** Precomputed authorization questions per (version, endpoint) of the hot path. */
function legacyAccess(endpoint: 'trips' | 'status_changes'): (version: string) => FeedAccess {
  const byVersion = new Map<string, FeedAccess>(
    (['1.2', '0.4'] as const).map((version) => [version, { family: 'mds', version, endpoint }]),
  );
  return (version) => byVersion.get(version)!;
}

/** The hourly-file routes of this host, for the hot path (api/feeds/hot-path.ts); patterns as registered above. */
export const LEGACY_HOT_FILES: readonly FastHourFile[] = [
  {
    re: /^\/en\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})\/trips(?:\?([^#]*))?$/,
    route: { pattern: '/en/:zoneID/trips', feed: 'mds_trips', param: 'end_time', offers: [MDS_1_2, MDS_0_4], fallback: undefined, access: legacyAccess('trips') },
  },
  {
    re: /^\/en\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})\/status_changes(?:\?([^#]*))?$/,
    route: { pattern: '/en/:zoneID/status_changes', feed: 'mds_status_changes', param: 'event_time', offers: [MDS_1_2, MDS_0_4], fallback: undefined, access: legacyAccess('status_changes') },
  },
];
