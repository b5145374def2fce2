/**
 * Legacy realtime feeds from the database: POST /events (status changes of a millisecond window,
 * at most two weeks back, in pages with links.next: api/feeds/paging.ts) and GET /vehicles (vehicles in the legacy available / reserved /
 * unavailable categories only — the mappers return nothing for the others).
 */
import type Koa from 'koa';
import { BodyRefused, MAX_JSON_DEPTH, jsonDepthExceeds, readBody } from '../kit/body.js';
import { FeedError, badParam } from '../feeds/errors.js';
import { toStatusChange04, toStatusChange12, toVehicle04, toVehicle12 } from '../../lib/feeds/mds/legacy.js';
import { streamLegacyVehicles } from '../../lib/feeds/mds/sources.js';
import { absoluteLinks, eventsPage, onePageOnly } from '../feeds/paging.js';
import { streamOnReplica } from '../../lib/core/replica.js';
import type { FeedDeps } from '../feeds/auth.js';
import { recentWindow } from '../feeds/params.js';
import { fromArray, streamFeed } from '../feeds/stream.js';
import { legacyGate } from '../feeds/gates.js';

/**
 * The window is in the query; a body is not used, but one that is there goes through the shared
 * reader (api/kit/body.ts) like on every body endpoint: too large → 413, nested too deep → 400.
 */
async function refuseHostileBody(ctx: Koa.Context, limit: number): Promise<void> {
  if (!ctx.request.length && !ctx.get('transfer-encoding')) return;
  try {
    const raw = await readBody(ctx, limit);
    if (jsonDepthExceeds(raw)) throw new BodyRefused('too_deep', MAX_JSON_DEPTH);
  } catch (err) {
    if (!(err instanceof BodyRefused)) throw err;
    throw err.reason === 'too_large' ? new FeedError(413, 'bad_param', err.message) : badParam(err.message);
  }
}

const VERSION = { '1.2': '1.2.0', '0.4': '0.4.1' } as const;

/** POST /en/{zoneID}/events: one page of status changes of a window. */
export async function legacyEvents(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const { config, db, clock } = deps.app;
  const { zone, offer } = await legacyGate(deps, ctx, 'events');
  await refuseHostileBody(ctx, config.maxBodyBytes);
  const window = recentWindow(ctx.query, clock.now());
  const page = await eventsPage(ctx, db, config.signingSecret, zone.id, window, {
    replicaWaitMs: config.databaseReplicaWaitMs,
    positions: deps.pagePositions,
  });
  const v12 = offer.version === '1.2';
  // the 1.2.0 / 0.4.1 schemas allow no top-level links: the page links are Link headers (RFC 8288)
  const links = Object.entries(absoluteLinks(page.links, `${config.publicLegacyUrl}/en/${zone.id}/events`)).filter(([, url]) => url !== null);
  if (links.length) ctx.set('Link', links.map(([rel, url]) => `<${url}>; rel="${rel}"`).join(', '));
  await streamFeed(ctx, {
    contentType: offer.contentType,
    head: { version: VERSION[offer.version] },
    arrayKey: 'data.status_changes',
    rows: fromArray(page.rows),
    map: (r) => (v12 ? toStatusChange12(r, config) : toStatusChange04(r, config)),
  });
}

/** GET /en/{zoneID}/vehicles. */
export async function legacyVehicles(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const { config, db, clock } = deps.app;
  const { zone, offer } = await legacyGate(deps, ctx, 'vehicles');
  onePageOnly(ctx.query);
  const v12 = offer.version === '1.2';
  await streamFeed(ctx, {
    contentType: offer.contentType,
    head: { version: VERSION[offer.version], last_updated: clock.now().getTime(), ttl: 0 },
    arrayKey: 'data.vehicles',
    rows: streamOnReplica(db, (pool) => streamLegacyVehicles(pool, zone.id)),
    map: (r) => (v12 ? toVehicle12(r, config) : toVehicle04(r, config)),
  });
}
