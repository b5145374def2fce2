/**
 * Paged event windows: MDS 2.0 `events/recent` and the legacy `POST /events` answer a window of up
 * to two weeks in pages of at most EVENTS_PAGE_MAX events (default EVENTS_PAGE_DEFAULT), in (ts,
 * event_id) order. Two styles of asking, one window rule:
 *
 * - **`limit` / `cursor`** (ours since the start): `links.next` carries a signed cursor until the last
 *   page. The cursor pins the zone, [start, end), the page size, the position (the last event's
 *   microsecond timestamp and id) and a cut-off fixed at the first page.
 * - **`page[size]` / `page[number]`** (JSON:API, as MDS 2.1 recommends): page `number` (1-based) of
 *   `size` events. The links (`first`, `prev`, `next`, `last`) carry `page[number]` and a signed
 *   `page[as_of]` that pins the cut-off of the first page and the window's event count at it.
 *
 * The cut-off (sql/queries/mds.sql MdsEventsCutoff: its time, or the start of the oldest transaction
 * still open) is what makes either stable over a window that is still filling: only events recorded
 * before it are served, all of those were committed by the first page, and events are append-only,
 * so the ordered set a traversal pages through is fixed. Following `next` returns every event of
 * that set exactly once however many arrive meanwhile (late ones appear in a new traversal), and
 * page N under one `page[as_of]` is the same page whenever, and from whichever process, it is asked
 * for. Without `page[as_of]` a `page[number]` request counts the window as it is at that moment.
 *
 * The cursor and the pin are signed with the signing secret (HMAC-SHA256, base64url), so a client
 * cannot hand-craft a position or a cut-off, and one of another zone or window (a cursor: or size)
 * is refused. A request mixing the styles (`cursor` with `page[number]` or `page[as_of]`), or giving
 * `limit` and `page[size]` different values, is a 400; so is an unknown `page[…]` parameter (the
 * family is JSON:API's, reserved for paging). Links repeat the size parameter(s) the client used.
 *
 * Cost: a cursor page is one query on events (zone_id, ts, event_id) with a LIMIT: an ordered range
 * scan, never a sort of the window. A numbered page is the same scan from the start of the page when
 * this process served the page before it under the same pin (where page N+1 starts is remembered,
 * `EventPagePositions`), else from the window's start with an OFFSET; the first page of a numbered
 * traversal also counts the window once. The cut-off is read on the primary (a replica's
 * pg_stat_activity knows nothing of the primary's open transactions); a page may be read on a
 * streaming replica once it has replayed past it (lib/core/replica.ts readCaughtUp).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type { Db } from '../../lib/core/db.js';
import { NamedCache } from '../../lib/core/cache.js';
import { sql, type RowOf } from '../../lib/core/sql/typed.js';
import { readCaughtUp } from '../../lib/core/replica.js';
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX } from './paging-limits.js';
import { badParam } from './errors.js';
import { single } from './params.js';

export { EVENTS_PAGE_MAX };
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** The page[…] parameters these endpoints take; any other member of the family is refused. */
const PAGE_FAMILY = ['page[size]', 'page[number]', 'page[as_of]'];
/** page[number] at most: beyond, no window of two weeks has pages (5,000 × 10⁶ events). */
const MAX_PAGE_NUMBER = 1_000_000;

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

/** What a page[as_of] pins: the zone and window, the cut-off (µs) and the window's events at it. */
interface Pin {
  z: string;
  s: number;
  e: number;
  c: number;
  /** events of the window recorded before the cut-off */
  k: number;
}

function sign(secret: string, purpose: string, payload: string): string {
  return createHmac('sha256', secret).update(`${purpose}:${payload}`).digest('base64url');
}

function encode(secret: string, purpose: string, value: object): string {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${payload}.${sign(secret, purpose, payload)}`;
}

/** The signed value, or undefined when it is not one of ours for `purpose`. */
function decode(secret: string, purpose: string, raw: string): Record<string, unknown> | undefined {
  const [payload, sig, extra] = raw.split('.');
  if (!payload || !sig || extra !== undefined || raw.length > 1024) return undefined;
  const expected = Buffer.from(sign(secret, purpose, payload));
  const got = Buffer.from(sig);
  if (got.length !== expected.length || !timingSafeEqual(got, expected)) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function decodeCursor(secret: string, raw: string): Cursor {
  const c = decode(secret, 'events-page', raw) as Partial<Cursor> | undefined;
  if (!c || typeof c.z !== 'string' || ![c.s, c.e, c.n, c.c, c.t].every(Number.isSafeInteger) || typeof c.i !== 'string')
    throw badParam('invalid cursor', 'cursor must be the value of a links.next of this window, unchanged');
  return c as Cursor;
}

function decodePin(secret: string, raw: string): Pin {
  const p = decode(secret, 'events-pin', raw) as Partial<Pin> | undefined;
  if (!p || typeof p.z !== 'string' || ![p.s, p.e, p.c, p.k].every(Number.isSafeInteger))
    throw badParam('invalid page[as_of]', 'page[as_of] must be the value of a page link of this window, unchanged');
  return p as Pin;
}

type Query = Record<string, string | string[] | undefined>;

/** A page size parameter: a whole number from 1 to EVENTS_PAGE_MAX; undefined when absent. */
function sizeParam(query: Query, name: 'limit' | 'page[size]'): number | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1 || Number(raw) > EVENTS_PAGE_MAX) {
    throw badParam(`invalid ${name}`, `${name} must be a whole number from 1 to ${EVENTS_PAGE_MAX}`);
  }
  return Number(raw);
}

/** How the request pages: its style, page size and the size parameters it named (for its links). */
export type Paging =
  | { style: 'cursor'; size: number; sizeNames: Array<'limit' | 'page[size]'>; cursor: string | undefined }
  | { style: 'number'; size: number; sizeNames: Array<'limit' | 'page[size]'>; number: number; pin: string | undefined };

/**
 * Reads the paging parameters of a request, refusing unknown page[…] members, mixed styles and bad
 * values: the one reading of every paged MDS list (the recent events here, the incidents:
 * api/feeds/incidents.ts).
 */
export function pagingOf(query: Query): Paging {
  for (const name of Object.keys(query)) {
    if ((name.startsWith('page[') || name === 'page') && !PAGE_FAMILY.includes(name))
      throw badParam(`unsupported paging parameter ${name}`, `the page parameters are ${PAGE_FAMILY.join(', ')} (or limit and cursor)`);
  }
  const limit = sizeParam(query, 'limit');
  const pageSize = sizeParam(query, 'page[size]');
  if (limit !== undefined && pageSize !== undefined && limit !== pageSize)
    throw badParam('conflicting page sizes', `limit (${limit}) and page[size] (${pageSize}) name different page sizes: send one of them`);
  const size = pageSize ?? limit ?? EVENTS_PAGE_DEFAULT;
  const sizeNames = [...(limit !== undefined ? (['limit'] as const) : []), ...(pageSize !== undefined ? (['page[size]'] as const) : [])];
  const cursor = single(query, 'cursor');
  const rawNumber = single(query, 'page[number]');
  const pin = single(query, 'page[as_of]');
  if (cursor !== undefined && (rawNumber !== undefined || pin !== undefined))
    throw badParam(
      'mixed paging styles',
      `cursor continues a limit/cursor traversal and ${rawNumber !== undefined ? 'page[number]' : 'page[as_of]'} a page[number] one: follow the links of one of them`,
    );
  if (cursor !== undefined || (rawNumber === undefined && pin === undefined && pageSize === undefined))
    return { style: 'cursor', size, sizeNames: sizeNames.length ? sizeNames : ['limit'], cursor };
  let number = 1;
  if (rawNumber !== undefined) {
    if (!/^[1-9]\d{0,6}$/.test(rawNumber) || Number(rawNumber) > MAX_PAGE_NUMBER)
      throw badParam('invalid page[number]', `page[number] must be a whole number from 1 to ${MAX_PAGE_NUMBER}`);
    number = Number(rawNumber);
  }
  return { style: 'number', size, sizeNames: sizeNames.length ? sizeNames : ['page[size]'], number, pin };
}

/**
 * The lists that are not paged (the vehicle lists: one page holds the whole zone, `links.next` null)
 * still check the page parameters a JSON:API client may send: valid ones are answered with that one
 * page, but only page[number] 1 exists and no cursor does.
 */
export function onePageOnly(query: Query): void {
  const paging = pagingOf(query);
  if (paging.style === 'cursor' && paging.cursor !== undefined) throw badParam('invalid cursor', 'this list is one page: it has no cursor');
  if (paging.style === 'number' && (paging.number !== 1 || paging.pin !== undefined))
    throw badParam('no such page', 'this list is one page holding every vehicle (links.next is null): page[number] can only be 1');
}

/** The query strings of a page's links (null: no such page); MDS 2.0 writes them as links, the legacy host as Link headers. */
export interface PageLinks {
  first?: string | null;
  prev?: string | null;
  next: string | null;
  last?: string | null;
}

/** The links of an events page as absolute URLs of `path` (MDS 2.0 writes only the ones it has). */
export function absoluteLinks(links: PageLinks, url: string): Record<string, string | null> {
  return Object.fromEntries(Object.entries(links).map(([rel, qs]) => [rel, qs === null || qs === undefined ? null : `${url}?${qs}`]));
}

export interface EventsPage {
  rows: Array<RowOf<'MdsEventsPage'>>;
  links: PageLinks;
}

export interface EventsPageOptions {
  /**
   * With a streaming replica: how long a page waits for it to replay what the primary has committed
   * (DATABASE_REPLICA_WAIT_MS) before reading the primary; undefined: the primary.
   */
  replicaWaitMs?: number;
  /** where numbered pages start, remembered by this process (FeedDeps.pagePositions) */
  positions?: EventPagePositions;
}

/**
 * Where page N+1 of a pinned window starts (the last event of page N), for the pages this process
 * served: a traversal that walks `next` then reads each page from its start instead of skipping N
 * pages. Keyed by the pin, the size and the page; bounded (lru-cache). A miss only costs an OFFSET.
 */
export class EventPagePositions {
  private readonly starts = new NamedCache<string, { t: number; i: string }>('events_page_positions', { max: 10_000 });
  get(pin: string, size: number, page: number) {
    return this.starts.get(`${pin}|${size}|${page}`);
  }
  set(pin: string, size: number, page: number, at: { t: number; i: string }) {
    this.starts.set(`${pin}|${size}|${page}`, at);
  }
}

const enc = (name: string) => name.replace('[', '%5B').replace(']', '%5D');

/**
 * One page of the zone's window [start, end): the request's `cursor` continued (which must belong to
 * this zone, window and page size), or its `page[number]` under its `page[as_of]` (of this zone and
 * window), or the first page of a new traversal in the style the request asked in.
 */
export async function eventsPage(
  ctx: Koa.Context,
  db: Db,
  secret: string,
  zoneId: string,
  window: { start: Date; end: Date },
  opts: EventsPageOptions = {},
): Promise<EventsPage> {
  const paging = pagingOf(ctx.query);
  const base = `start_time=${window.start.getTime()}&end_time=${window.end.getTime()}`;
  const sizes = paging.sizeNames.map((n) => `&${enc(n)}=${paging.size}`).join('');
  const read = (run: (pool: Db) => Promise<Array<RowOf<'MdsEventsPage'>>>) =>
    opts.replicaWaitMs === undefined ? run(db) : readCaughtUp(db, opts.replicaWaitMs, run);
  const cutoffNow = async () => (await db.one(sql('MdsEventsCutoff'))).now_us;

  if (paging.style === 'cursor') {
    const limit = paging.size;
    let cursor: Cursor;
    if (paging.cursor === undefined) {
      cursor = { z: zoneId, s: window.start.getTime(), e: window.end.getTime(), n: limit, c: await cutoffNow(), t: window.start.getTime() * 1000, i: NIL_UUID };
    } else {
      cursor = decodeCursor(secret, paging.cursor);
      if (cursor.z !== zoneId || cursor.s !== window.start.getTime() || cursor.e !== window.end.getTime() || cursor.n !== limit) {
        throw badParam('invalid cursor', 'the cursor belongs to another zone, window or limit: follow links.next as given');
      }
    }
    // the cut-off is the primary's (its open transactions), and every event it admits was committed
    // before it was read: a replica that has replayed the primary's position read after it has them all
    const rows = await read((pool) => pool.many(sql('MdsEventsPage'), [zoneId, window.start, window.end, cursor.t, cursor.i, cursor.c, limit + 1, 0]));
    if (rows.length <= limit) return { rows, links: { next: null } };
    rows.length = limit;
    const last = rows[limit - 1];
    return { rows, links: { next: `${base}${sizes}&cursor=${encode(secret, 'events-page', { ...cursor, t: last.ts_us, i: last.event_id })}` } };
  }

  const { size, number } = paging;
  let pin: Pin;
  let pinText: string;
  if (paging.pin !== undefined) {
    pin = decodePin(secret, paging.pin);
    if (pin.z !== zoneId || pin.s !== window.start.getTime() || pin.e !== window.end.getTime())
      throw badParam('invalid page[as_of]', 'page[as_of] belongs to another zone or window: keep the window of the links it came with');
    pinText = paging.pin;
  } else {
    const c = await cutoffNow();
    const { total } = await db.one(sql('MdsEventsCount'), [zoneId, window.start, window.end, c]);
    pin = { z: zoneId, s: window.start.getTime(), e: window.end.getTime(), c, k: Number(total) };
    pinText = encode(secret, 'events-pin', pin);
  }
  const pages = Math.max(1, Math.ceil(pin.k / size));
  const offset = (number - 1) * size;
  let rows: Array<RowOf<'MdsEventsPage'>> = [];
  if (offset < pin.k) {
    const from = opts.positions?.get(pinText, size, number);
    rows = await read((pool) =>
      pool.many(sql('MdsEventsPage'), [
        zoneId,
        window.start,
        window.end,
        from?.t ?? window.start.getTime() * 1000,
        from?.i ?? NIL_UUID,
        pin.c,
        size,
        from ? 0 : offset,
      ]),
    );
    const last = rows[rows.length - 1];
    if (last && rows.length === size && number < pages) opts.positions?.set(pinText, size, number + 1, { t: last.ts_us, i: last.event_id });
  }
  const link = (n: number) => `${base}${sizes}&${enc('page[number]')}=${n}&${enc('page[as_of]')}=${pinText}`;
  return {
    rows,
    links: { first: link(1), prev: number > 1 ? link(Math.min(number - 1, pages)) : null, next: number < pages ? link(number + 1) : null, last: link(pages) },
  };
}

/**
 * A signed cursor of another paged list (api/feeds/incidents.ts): the events' own signing under the
 * list's `purpose`, so a cursor of one list never passes for another's, nor a hand-made one.
 */
export function signCursor(secret: string, purpose: string, value: object): string {
  return encode(secret, purpose, value);
}

/** The value of a cursor signCursor made for `purpose`; a 400 for anything else. */
export function openCursor(secret: string, purpose: string, raw: string): unknown {
  const v = decode(secret, purpose, raw);
  if (!v) throw badParam('invalid cursor', 'cursor must be the value of a links.next of this query, unchanged');
  return v;
}
