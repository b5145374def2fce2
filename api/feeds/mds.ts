/**
 * MDS 2.0 provider endpoints under /v1/partner-apis/mds/{zoneID}. Trips, historical events and
 * telemetry come from the published hourly files; vehicles, vehicle status and recent events from the database
 * (realtime.ts), streamed with the publisher's record mappers.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { MdsEndpoint } from '../../lib/feeds/roles.js';
import { authenticate, authorize, resolveZone, type FeedDeps } from './auth.js';
import { MDS_2_0, negotiate } from './accept.js';
import { notYetAvailable202, serveHourFile } from './files.js';
import { single, timeHourParam } from './params.js';
import type { ZoneInfo } from './zones.js';
import { realtimeMdsRoutes } from './realtime.js';
import { publicationsIndexRoute } from './publications-index.js';
import { reportRoutes } from './reports.js';

/** Authentication, version, role and zone checks shared by every MDS 2.0 endpoint. */
export async function mdsGate(deps: FeedDeps, ctx: Koa.Context, endpoint: MdsEndpoint): Promise<ZoneInfo> {
  const claims = await authenticate(deps, ctx);
  negotiate(ctx.get('Accept') || undefined, [MDS_2_0], MDS_2_0);
  authorize(claims, { family: 'mds', version: '2.0', endpoint });
  return resolveZone(deps, claims.zones, ctx.params.zoneID);
}

export function mdsRoutes(router: Router, deps: FeedDeps): void {
  const base = '/v1/partner-apis/mds/:zoneID';

  router.get(`${base}/trips`, async (ctx) => {
    const zone = await mdsGate(deps, ctx, 'trips');
    const hour = timeHourParam('end_time', single(ctx.query, 'end_time'));
    await serveHourFile(deps, ctx, { feed: 'mds_trips', version: '2.0', zone, hour, contentType: MDS_2_0.contentType, notPublished: notYetAvailable202 });
  });

  router.get(`${base}/events/historical`, async (ctx) => {
    const zone = await mdsGate(deps, ctx, 'events');
    const hour = timeHourParam('event_time', single(ctx.query, 'event_time'));
    await serveHourFile(deps, ctx, { feed: 'mds_events', version: '2.0', zone, hour, contentType: MDS_2_0.contentType, notPublished: notYetAvailable202 });
  });

  router.get(`${base}/telemetry`, async (ctx) => {
    const zone = await mdsGate(deps, ctx, 'telemetry');
    const hour = timeHourParam('telemetry_time', single(ctx.query, 'telemetry_time'));
    await serveHourFile(deps, ctx, { feed: 'mds_telemetry', version: '2.0', zone, hour, contentType: MDS_2_0.contentType, notPublished: notYetAvailable202 });
  });

  publicationsIndexRoute(router, deps, base);
  reportRoutes(router, deps, base);
  realtimeMdsRoutes(router, deps, base);
}
