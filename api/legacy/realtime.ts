/**
 * Legacy realtime feeds from the database: POST /events (status changes of a millisecond window,
 * at most two weeks back) and GET /vehicles (vehicles in the legacy available / reserved /
 * unavailable categories only — the mappers return nothing for the others).
 */
import type Router from '@koa/router';
import { toStatusChange04, toStatusChange12, toVehicle04, toVehicle12 } from '../../lib/feeds/mds/legacy.js';
import { streamEvents, streamLegacyVehicles } from '../../lib/feeds/mds/sources.js';
import type { FeedDeps } from '../feeds/auth.js';
import { recentWindow } from '../feeds/params.js';
import { streamFeed } from '../feeds/stream.js';
import { legacyGate } from './router.js';

const VERSION = { '1.2': '1.2.0', '0.4': '0.4.1' } as const;

export function legacyRealtimeRoutes(router: Router, deps: FeedDeps): void {
  const { config, db, clock } = deps.app;

  router.post('/en/:zoneID/events', async (ctx) => {
    const { zone, offer } = await legacyGate(deps, ctx, 'events');
    const { start, end } = recentWindow(ctx.query, clock.now());
    const v12 = offer.version === '1.2';
    await streamFeed(ctx, {
      contentType: offer.contentType,
      head: { version: VERSION[offer.version] },
      arrayKey: 'data.status_changes',
      rows: streamEvents(db, zone.id, { from: start, to: end }),
      map: (r) => (v12 ? toStatusChange12(r, config) : toStatusChange04(r, config)),
    });
  });

  router.get('/en/:zoneID/vehicles', async (ctx) => {
    const { zone, offer } = await legacyGate(deps, ctx, 'vehicles');
    const v12 = offer.version === '1.2';
    await streamFeed(ctx, {
      contentType: offer.contentType,
      head: { version: VERSION[offer.version], last_updated: clock.now().getTime(), ttl: 0 },
      arrayKey: 'data.vehicles',
      rows: streamLegacyVehicles(db, zone.id),
      map: (r) => (v12 ? toVehicle12(r, config) : toVehicle04(r, config)),
    });
  });
}
