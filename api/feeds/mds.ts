/**
 * MDS 2.0 provider endpoints under /v1/partner-apis/mds/{zoneID}. Trips, historical events and
 * telemetry come from the published hourly files; vehicles, vehicle status and recent events from the database
 * (realtime.ts), streamed with the publisher's record mappers.
 */
import type Router from '@koa/router';
import type { FeedDeps } from './auth.js';
import { MDS_2_0 } from './accept.js';
import { mdsGate } from './gates.js';
import { notYetAvailable202, serveHourFile } from './files.js';
import { single, timeHourParam } from './params.js';
import { realtimeMdsRoutes } from './realtime.js';
import { publicationsIndexRoute } from './publications-index.js';
import { reportRoutes } from './reports.js';

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
