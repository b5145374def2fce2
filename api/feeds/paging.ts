/**
 * Paged event windows: MDS 2.0 `events/recent` and the legacy `POST /events` answer a window of up
 * to two weeks in pages of at most `limit` events (default EVENTS_PAGE_DEFAULT, at most
 * EVENTS_PAGE_MAX), in (ts, event_id) order, each with `links.next` until the last one.
 *
 * The cursor pins the window: the zone, [start, end), the page size, the position (the last event's
 * microsecond timestamp and id) and a cut-off fixed at the first page (sql/queries/mds.sql
 * MdsEventsCutoff: its time, or the start of the oldest transaction still open): only events
 * recorded before it are served, and all of those were committed by the first page, so following
 * `next` returns every event of that window exactly once however many arrive meanwhile, in-flight
 * transactions included (late ones appear in a new traversal). It is signed with the
 * signing secret (HMAC-SHA256, base64url), so a client cannot hand-craft a position, and a cursor
 * of another zone, window or size is refused. Every page is one query on events (zone_id, ts,
 * event_id) with a LIMIT: an ordered range scan, never a sort of the window. The cut-off is read
 * on the primary (a replica's pg_stat_activity knows nothing of the primary's open transactions); a
 * page may be read on a streaming replica once it has replayed past it (lib/core/replica.ts readCaughtUp).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type { Db } from '../../lib/core/db.js';
import { sql, type RowOf } from '../../lib/core/sql/typed.js';
import { readCaughtUp } from '../../lib/core/replica.js';
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX } from './paging-limits.js';
import { badParam } from './errors.js';
import { single } from './params.js';

export { EVENTS_PAGE_MAX };
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

interface Cursor {
  /** zone */
  z: string;
  /** window start and end, ms */
  s: number;
  e: number;
  /** page size */
  n: number;
  /** cut-off fixed at the first page (MdsEventsCutoff), µs since the epoch */
  c: number;
  /** position: the last served event's ts (µs) and id */
  t: number;
  i: string;
}

function sign(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(`events-page:${payload}`).digest('base64url');
}

function encode(secret: string, c: Cursor): string {
  const payload = Buffer.from(JSON.stringify(c)).toString('base64url');
  return `${payload}.${sign(secret, payload)}`;
}

function decode(secret: string, raw: string): Cursor {
  const [payload, sig, extra] = raw.split('.');
  const bad = () => badParam('invalid cursor', 'cursor must be the value of a links.next of this window, unchanged');
  if (!payload || !sig || extra !== undefined || raw.length > 1024) throw bad();
  const expected = Buffer.from(sign(secret, payload));
  const got = Buffer.from(sig);
  if (got.length !== expected.length || !timingSafeEqual(got, expected)) throw bad();
  try {
    const c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.z !== 'string' || ![c.s, c.e, c.n, c.c, c.t].every(Number.isSafeInteger) || typeof c.i !== 'string') throw bad();
    return c;
  } catch {
    throw bad();
  }
}

/**
 * `limit` of the request: a whole number from 1 to EVENTS_PAGE_MAX (default EVENTS_PAGE_DEFAULT).
 * Every paged MDS list reads its page size here (events, incidents: api/feeds/incidents.ts).
 */
export function pageLimit(query: Record<string, string | string[] | undefined>): number {
  const raw = single(query, 'limit');
  if (raw === undefined) return EVENTS_PAGE_DEFAULT;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1 || Number(raw) > EVENTS_PAGE_MAX) {
    throw badParam('invalid limit', `limit must be a whole number from 1 to ${EVENTS_PAGE_MAX}`);
  }
  return Number(raw);
}

export interface EventsPage {
  rows: Array<RowOf<'MdsEventsPage'>>;
  /** the query string of the next page, or null after the last */
  next: string | null;
}

export interface EventsPageOptions {
  /**
   * With a streaming replica: how long a page waits for it to replay what the primary has committed
   * (DATABASE_REPLICA_WAIT_MS) before reading the primary; undefined: the primary.
   */
  replicaWaitMs?: number;
}

/**
 * One page of the zone's window [start, end), continuing the request's `cursor` when there is one
 * (which must belong to this zone, window and limit).
 */
export async function eventsPage(
  ctx: Koa.Context,
  db: Db,
  secret: string,
  zoneId: string,
  window: { start: Date; end: Date },
  opts: EventsPageOptions = {},
): Promise<EventsPage> {
  const limit = pageLimit(ctx.query);
  const rawCursor = single(ctx.query, 'cursor');
  let cursor: Cursor;
  if (rawCursor === undefined) {
    const { now_us } = await db.one(sql('MdsEventsCutoff'));
    cursor = { z: zoneId, s: window.start.getTime(), e: window.end.getTime(), n: limit, c: now_us, t: window.start.getTime() * 1000, i: NIL_UUID };
  } else {
    cursor = decode(secret, rawCursor);
    if (cursor.z !== zoneId || cursor.s !== window.start.getTime() || cursor.e !== window.end.getTime() || cursor.n !== limit) {
      throw badParam('invalid cursor', 'the cursor belongs to another zone, window or limit: follow links.next as given');
    }
  }
  // the cut-off is the primary's (its open transactions), and every event it admits was committed
  // before it was read: a replica that has replayed the primary's position read after it has them all
  const page = (pool: Db) => pool.many(sql('MdsEventsPage'), [zoneId, window.start, window.end, cursor.t, cursor.i, cursor.c, limit + 1]);
  const rows = opts.replicaWaitMs === undefined ? await page(db) : await readCaughtUp(db, opts.replicaWaitMs, page);
  if (rows.length <= limit) return { rows, next: null };
  rows.length = limit;
  const last = rows[limit - 1];
  const next = encode(secret, { ...cursor, t: last.ts_us, i: last.event_id });
  return { rows, next: `start_time=${cursor.s}&end_time=${cursor.e}&limit=${limit}&cursor=${next}` };
}

/**
 * A signed cursor of another paged list (api/feeds/incidents.ts): `value` as base64url JSON and an
 * HMAC under `purpose`, so a cursor of one list never passes for another's, nor a hand-made one.
 */
export function signCursor(secret: string, purpose: string, value: object): string {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${payload}.${sign(secret, `${purpose}:${payload}`)}`;
}

/** The value of a cursor signCursor made for `purpose`; a 400 for anything else. */
export function openCursor(secret: string, purpose: string, raw: string): unknown {
  const [payload, sig, extra] = raw.split('.');
  const bad = () => badParam('invalid cursor', 'cursor must be the value of a links.next of this query, unchanged');
  if (!payload || !sig || extra !== undefined || raw.length > 1024) throw bad();
  const expected = Buffer.from(sign(secret, `${purpose}:${payload}`));
  const got = Buffer.from(sig);
  if (got.length !== expected.length || !timingSafeEqual(got, expected)) throw bad();
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
  } catch {
    throw bad();
  }
}
