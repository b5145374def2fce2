/**
 * Realtime MDS 2.0 endpoints answered from the database with the publisher's record shapes:
 * /vehicles, /vehicles/{deviceID}, /vehicles/status, /vehicles/status/{deviceID} and
 * /events/recent. The vehicle lists (a whole zone in one answer, 10,000 vehicles and more) are built
 * as JSON text in Postgres from the records' declarations (lib/feeds/mds/shape.ts) and streamed as
 * they come; /events/recent is one bounded page through the JS mapper of the same declarations.
 *
 * Envelopes: the requirement (section 2.1) and the official 2.0 schemas disagree for the vehicle
 * endpoints, and there the official schema wins (every response validates against it): /vehicles and
 * /vehicles/status carry `last_updated` (ms) and `ttl` as plain integers, as MDS 2.0 defines them.
 * Where both allow it we follow the requirement: /events/recent has `last_updated` and `ttl` objects.
 * `links` is present on the paginable lists: /events/recent is paged (api/feeds/paging.ts) and
 * `next` links the following page; the vehicle lists are answered whole with `next: null` (the
 * schema requires `next` whenever `links` is there). See docs/feeds-access.md.
 *
 * With a streaming replica (DATABASE_REPLICA_URL) the vehicle lists are read there (lib/core/replica.ts
 * streamOnReplica: a moment behind, the primary while it is unreachable; a device the replica does
 * not know yet is looked up on the primary before "unknown device"), and each /events/recent page
 * once the replica has replayed everything its cut-off admits (api/feeds/paging.ts).
 */
import type Koa from 'koa';
import { mds20Head } from '../../lib/feeds/mds/envelope.js';
import { toMdsEvent } from '../../lib/feeds/mds/records.js';
import { streamVehicleRecords, streamVehicleStatusRecords } from '../../lib/feeds/mds/sources.js';
import { streamOnReplica } from '../../lib/core/replica.js';
import { absoluteLinks, eventsPage, onePageOnly } from './paging.js';
import type { FeedDeps } from './auth.js';
import { MDS_2_0 } from './accept.js';
import { notFound } from './errors.js';
import { mdsGate } from './gates.js';
import { recentWindow, uuidParam, pathParam } from './params.js';
import { fromArray, streamFeed } from './stream.js';

const noMorePages = { links: { next: null } };

const vehicleHead = (deps: FeedDeps) => ({ version: '2.0.0', last_updated: deps.app.clock.now().getTime(), ttl: 0 });

/** /vehicles (every vehicle of the zone) or /vehicles/{deviceID} (an array of one). */
export async function mdsVehicles(deps: FeedDeps, ctx: Koa.Context, single: boolean): Promise<void> {
  const { config, db } = deps.app;
  const zone = await mdsGate(deps, ctx, 'vehicles');
  const device = single ? uuidParam('device_id', pathParam(ctx, 'deviceID')) : undefined;
  if (!single) onePageOnly(ctx.query);
  await streamFeed(ctx, {
    contentType: MDS_2_0.contentType,
    head: vehicleHead(deps),
    arrayKey: 'vehicles',
    ...(single ? {} : { tail: noMorePages }),
    rows: streamOnReplica(db, (pool) => streamVehicleRecords(pool, config, zone.id, device), { emptyOnPrimary: single }),
    map: (run) => run,
    ...(single ? { emptyError: () => notFound(`unknown device ${device}`) } : {}),
  });
}

/** /vehicles/status or /vehicles/status/{deviceID}. */
export async function mdsVehicleStatus(deps: FeedDeps, ctx: Koa.Context, single: boolean): Promise<void> {
  const { config, db, clock } = deps.app;
  const zone = await mdsGate(deps, ctx, 'vehicles_status');
  const device = single ? uuidParam('device_id', pathParam(ctx, 'deviceID')) : undefined;
  if (!single) onePageOnly(ctx.query);
  await streamFeed(ctx, {
    contentType: MDS_2_0.contentType,
    head: vehicleHead(deps),
    arrayKey: 'vehicles_status',
    ...(single ? {} : { tail: noMorePages }),
    rows: streamOnReplica(db, (pool) => streamVehicleStatusRecords(pool, config, zone.id, clock.now(), device), { emptyOnPrimary: single }),
    map: (run) => run,
    ...(single ? { emptyError: () => notFound(`unknown device ${device} or no status yet`) } : {}),
  });
}

/** /events/recent: one page of a window at most two weeks back. */
export async function mdsEventsRecent(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const { config, db, clock } = deps.app;
  const zone = await mdsGate(deps, ctx, 'events');
  const window = recentWindow(ctx.query, clock.now());
  const page = await eventsPage(ctx, db, config.signingSecret, zone.id, window, {
    replicaWaitMs: config.databaseReplicaWaitMs,
    positions: deps.pagePositions,
  });
  await streamFeed(ctx, {
    contentType: MDS_2_0.contentType,
    head: mds20Head(clock.now().getTime()),
    arrayKey: 'events',
    tail: { links: absoluteLinks(page.links, `${config.publicBaseUrl}/v1/partner-apis/mds/${zone.id}/events/recent`) },
    rows: fromArray(page.rows),
    map: (r) => toMdsEvent(r, config),
  });
}
