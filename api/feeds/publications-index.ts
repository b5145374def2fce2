/**
 * GET /v1/partner-apis/mds/{zoneID}/publications?from=HOUR&to=HOUR (city role): for every hour of
 * the range and every hourly file the caller may read, whether it is published, its record count,
 * the sha256 of its content, when it was first and last written and how many times it was
 * republished. A consumer fetches only what changed instead of downloading history again. The
 * figures are make publish-status's own (lib/publication/status.ts publicationStatus).
 */
import type Koa from 'koa';
import { canRead, type FeedAccess } from '../../lib/feeds/roles.js';
import { HOURLY_FEEDS, type HourlyFeed } from '../../lib/feeds/publications.js';
import { HOUR_MS } from '../../lib/feeds/hours.js';
import { publicationStatus, type CellState } from '../../lib/publication/status.js';
import { authorize, claimsOf, resolveZone, type FeedDeps } from './auth.js';
import { MDS_2_0, negotiate } from './accept.js';
import { badParam } from './errors.js';
import { single, timeHourParam, pathParam } from './params.js';
import type { MdsPublication } from '../../schemas/mds/publications.js';

/** At most this many days per call (744 hours × 7 files stays a small answer). */
const PUBLICATIONS_MAX_DAYS = 31;

/** What a consumer needs to know of a file: served and current, being republished, or not there yet. */
export type PublicationState = MdsPublication['state'];

function stateOf(cell: CellState, served: boolean): PublicationState {
  if (cell === 'published') return 'published';
  // dirty, or failed after an earlier version: that version is served while a new one is made
  if ((cell === 'dirty' || cell === 'failed') && served) return 'republishing';
  return 'pending';
}

function accessOf(f: HourlyFeed): FeedAccess {
  return f.family === 'insurance'
    ? { family: 'insurance', endpoint: 'trips' }
    : { family: 'mds', version: f.version, endpoint: f.segment === 'status_changes' ? 'status_changes' : f.segment };
}

export async function publicationsIndex(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = claimsOf(ctx);
  negotiate(ctx.get('Accept') || undefined, [MDS_2_0], MDS_2_0);
  authorize(claims, { family: 'mds', version: '2.0', endpoint: 'publications' });
  const zone = await resolveZone(deps, claims.zones, pathParam(ctx, 'zoneID'));
  const from = timeHourParam('from', single(ctx.query, 'from'));
  const to = timeHourParam('to', single(ctx.query, 'to'));
  if (to.start < from.start) throw badParam('invalid range', 'to must not be before from');
  if (to.start.getTime() - from.start.getTime() >= PUBLICATIONS_MAX_DAYS * 24 * HOUR_MS) {
    throw badParam('range too long', `at most ${PUBLICATIONS_MAX_DAYS} days per call`);
  }
  const feeds = HOURLY_FEEDS.filter((f) => canRead(claims.role, accessOf(f)));
  // hours after the current one do not exist yet
  const now = deps.app.clock.now();
  const last = new Date(Math.min(to.start.getTime(), now.getTime() - (now.getTime() % HOUR_MS)));
  const status =
    last < from.start ? undefined : await publicationStatus(deps.app, { zones: [zone.id], from: from.start, to: last, feeds: feeds.map((f) => f.id) });
  ctx.set('Cache-Control', 'private, no-cache');
  ctx.type = MDS_2_0.contentType;
  ctx.body = {
    version: '2.0.0',
    zone_id: zone.id,
    publications: (status?.files ?? []).map((f): MdsPublication => ({
      feed: f.feed,
      hour: f.hour,
      state: stateOf(f.state, f.served),
      record_count: f.record_count,
      sha256: f.sha256,
      first_publication_time: f.first_publication_time,
      last_publication_time: f.last_publication_time,
      republish_count: f.republish_count,
    })),
  };
}
