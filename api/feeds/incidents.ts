/**
 * MDS 2.1 GET /incidents (provider/README.md "Incidents"; records: schemas/mds/v21.ts), city role,
 * per zone, on the MDS 2.0 host: the one 2.1 endpoint there, so its version is 2.1 (MDS_2_1: an
 * absent Accept means 2.1 here, `version=2.0` is a 406). The 2.1 query parameters filter:
 * `incident_id`, `incident_type`, the publication window
 * (`publication_start_time <= publication_time < publication_end_time`) and the last-updated window
 * (`last_updated_start <= last_updated < last_updated_end`), each optional, times in integer ms.
 *
 * Paged as /events/recent is (api/feeds/paging.ts): `limit` per page (pageLimit: the same sizes, and
 * whatever page-size parameters the MDS paging reads), in (publication_time, incident_id) order,
 * `links.next` until null; the signed cursor pins the zone, the filters, the page size, the position
 * and the cut-off of the first page (MdsEventsCutoff: only incidents published before it), so a
 * traversal gets each incident that matched once, however many are raised meanwhile. The
 * last-updated window is evaluated on every page: an incident updated during a traversal is seen
 * again by the next poll of the window it moved into, which is how a city follows updates.
 */
import type Koa from 'koa';
import { sql, type RowOf } from '../../lib/core/sql/typed.js';
import { INCIDENT_TYPES_21, type IncidentType, type MdsIncident } from '../../schemas/mds/v21.js';
import type { FeedDeps } from './auth.js';
import { MDS_2_1 } from './accept.js';
import { badParam } from './errors.js';
import { mdsGate } from './gates.js';
import { openCursor, pagingOf, signCursor, type Paging } from './paging.js';
import { single, uuidParam } from './params.js';
import { fromArray, streamFeed } from './stream.js';

const NIL_UUID = '00000000-0000-0000-0000-000000000000';
const CURSOR_PURPOSE = 'incidents';
/** what a page[as_of] of the incidents signs: the zone, the filters and the first page's cut-off */
const PIN_PURPOSE = 'incidents-pin';

/** The 2.1 query parameters that filter, in the order of the next link. */
const INCIDENT_WINDOW_PARAMS = ['publication_start_time', 'publication_end_time', 'last_updated_start', 'last_updated_end'] as const;

interface Filters {
  incident_id: string | null;
  incident_type: IncidentType | null;
  publication_start_time: number | null;
  publication_end_time: number | null;
  last_updated_start: number | null;
  last_updated_end: number | null;
}

interface Cursor {
  /** zone */
  z: string;
  /** the filters, as the first page read them */
  f: Filters;
  /** page size */
  n: number;
  /** cut-off of the first page, µs */
  c: number;
  /** position: the last served incident's publication_time (µs) and id */
  t: number;
  i: string;
}

function msOrNull(query: Koa.Context['query'], name: string): number | null {
  const raw = single(query, name);
  if (raw === undefined) return null;
  if (!/^\d{1,15}$/.test(raw) || Number(raw) > 8.64e15) throw badParam(`invalid ${name}`, `${name} must be integer milliseconds since the Unix epoch`);
  return Number(raw);
}

function filtersOf(query: Koa.Context['query']): Filters {
  const id = single(query, 'incident_id');
  const type = single(query, 'incident_type');
  if (type !== undefined && !(INCIDENT_TYPES_21 as readonly string[]).includes(type)) {
    throw badParam('invalid incident_type', `incident_type must be one of ${INCIDENT_TYPES_21.join(', ')}`);
  }
  const f: Filters = {
    incident_id: id === undefined ? null : uuidParam('incident_id', id),
    incident_type: (type as IncidentType | undefined) ?? null,
    publication_start_time: msOrNull(query, 'publication_start_time'),
    publication_end_time: msOrNull(query, 'publication_end_time'),
    last_updated_start: msOrNull(query, 'last_updated_start'),
    last_updated_end: msOrNull(query, 'last_updated_end'),
  };
  const empty = (a: number | null, b: number | null) => a !== null && b !== null && a >= b;
  if (empty(f.publication_start_time, f.publication_end_time))
    throw badParam('invalid time window', 'publication_start_time must be before publication_end_time');
  if (empty(f.last_updated_start, f.last_updated_end)) throw badParam('invalid time window', 'last_updated_start must be before last_updated_end');
  return f;
}

const sameFilters = (a: Filters, b: Filters) => (Object.keys(a) as Array<keyof Filters>).every((k) => a[k] === b[k]);

function isCursor(v: unknown): v is Cursor {
  const c = v as Cursor | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.z === 'string' &&
    typeof c.f === 'object' &&
    c.f !== null &&
    [c.n, c.c, c.t].every(Number.isSafeInteger) &&
    typeof c.i === 'string'
  );
}

type IncidentRow = RowOf<'MdsIncidentsPage'>;

/** An incident row as the 2.1 record: the optional members left out when unknown. */
function toMdsIncident(r: IncidentRow): MdsIncident {
  const out: MdsIncident = { incident_id: r.incident_id, incident_type: r.incident_type, publication_time: r.publication_ms, last_updated: r.last_updated_ms };
  if (r.description !== null) out.description = r.description;
  if (r.severity !== null) out.severity = r.severity;
  if (r.report_id !== null) out.report_id = r.report_id;
  if (r.report_type !== null) out.report_type = r.report_type;
  if (r.contact_info !== null) out.contact_info = r.contact_info;
  if (r.preliminary !== null) out.preliminary = r.preliminary;
  return out;
}

const at = (ms: number | null) => (ms === null ? null : new Date(ms));

/** GET /v1/partner-apis/mds/{zoneID}/incidents: one page. */
export async function mdsIncidents(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const { config, db, clock } = deps.app;
  const zone = await mdsGate(deps, ctx, 'incidents', MDS_2_1);
  const filters = filtersOf(ctx.query);
  const paging = pagingOf(ctx.query);
  if (paging.style === 'number') return numberedPage(deps, ctx, zone.id, filters, paging);
  const limit = paging.size;
  const raw = paging.cursor;
  let cursor: Cursor;
  if (raw === undefined) {
    const { now_us } = await db.one(sql('MdsEventsCutoff'));
    cursor = { z: zone.id, f: filters, n: limit, c: now_us, t: 0, i: NIL_UUID };
  } else {
    const c = openCursor(config.signingSecret, CURSOR_PURPOSE, raw);
    if (!isCursor(c) || c.z !== zone.id || c.n !== limit || !sameFilters(c.f, filters)) {
      throw badParam('invalid cursor', 'the cursor belongs to another zone, filter or limit: follow links.next as given');
    }
    cursor = c;
  }
  const f = cursor.f;
  const rows = await db.many(sql('MdsIncidentsPage'), [
    zone.id,
    f.incident_id,
    f.incident_type,
    at(f.publication_start_time),
    at(f.publication_end_time),
    at(f.last_updated_start),
    at(f.last_updated_end),
    cursor.t,
    cursor.i,
    cursor.c,
    limit + 1,
    0,
  ]);
  let next: string | null = null;
  if (rows.length > limit) {
    rows.length = limit;
    const last = rows[limit - 1];
    const q = filterQuery(f);
    q.set('limit', String(limit));
    q.set('cursor', signCursor(config.signingSecret, CURSOR_PURPOSE, { ...cursor, t: last.publication_us, i: last.incident_id }));
    next = `${config.publicBaseUrl}/v1/partner-apis/mds/${zone.id}/incidents?${q.toString()}`;
  }
  await answer(ctx, clock, rows, { next });
}

/** The filter parameters of a link, in their order. */
function filterQuery(f: Filters): URLSearchParams {
  const q = new URLSearchParams();
  if (f.incident_id !== null) q.set('incident_id', f.incident_id);
  if (f.incident_type !== null) q.set('incident_type', f.incident_type);
  for (const k of INCIDENT_WINDOW_PARAMS) if (f[k] !== null) q.set(k, String(f[k]));
  return q;
}

/**
 * `page[number]` of `page[size]` incidents (JSON:API, as MDS 2.1 recommends), as the recent events page
 * (api/feeds/paging.ts): the first request pins the cut-off, and every link carries it signed in
 * `page[as_of]`, so page N under one pin is the same page whenever it is asked; links first, prev,
 * next and last keep the size parameter the request used.
 */
async function numberedPage(deps: FeedDeps, ctx: Koa.Context, zoneId: string, filters: Filters, paging: Extract<Paging, { style: 'number' }>) {
  const { config, db, clock } = deps.app;
  let cutoff: number;
  if (paging.pin === undefined) cutoff = (await db.one(sql('MdsEventsCutoff'))).now_us;
  else {
    const p = openCursor(config.signingSecret, PIN_PURPOSE, paging.pin) as { z?: unknown; f?: Filters; c?: unknown };
    if (p.z !== zoneId || typeof p.f !== 'object' || p.f === null || !sameFilters(p.f, filters) || !Number.isSafeInteger(p.c))
      throw badParam('invalid page[as_of]', 'page[as_of] belongs to another zone or filter: keep the filters of the links it came with');
    cutoff = p.c as number;
  }
  const f = filters;
  const filtered = [
    zoneId,
    f.incident_id,
    f.incident_type,
    at(f.publication_start_time),
    at(f.publication_end_time),
    at(f.last_updated_start),
    at(f.last_updated_end),
  ] as const;
  const [{ n: total }, rows] = await Promise.all([
    db.one(sql('MdsIncidentsCount'), [...filtered, cutoff]),
    // from the nil position, the pages before skipped
    db.many(sql('MdsIncidentsPage'), [...filtered, 0, NIL_UUID, cutoff, paging.size, (paging.number - 1) * paging.size]),
  ]);
  const pages = Math.max(1, Math.ceil(total / paging.size));
  const pin = signCursor(config.signingSecret, PIN_PURPOSE, { z: zoneId, f: filters, c: cutoff });
  const link = (n: number) => {
    const q = filterQuery(f);
    for (const name of paging.sizeNames) q.set(name, String(paging.size));
    q.set('page[number]', String(n));
    q.set('page[as_of]', pin);
    return `${config.publicBaseUrl}/v1/partner-apis/mds/${zoneId}/incidents?${q.toString()}`;
  };
  await answer(ctx, clock, rows, {
    first: link(1),
    prev: paging.number > 1 ? link(Math.min(paging.number - 1, pages)) : null,
    next: paging.number < pages ? link(paging.number + 1) : null,
    last: link(pages),
  });
}

/** One page of incidents as the 2.1 answer: the head of the vehicle endpoints, the records, the links. */
async function answer(ctx: Koa.Context, clock: { now(): Date }, rows: IncidentRow[], links: Record<string, string | null>): Promise<void> {
  await streamFeed(ctx, {
    contentType: MDS_2_1.contentType,
    head: { version: '2.1.0', last_updated: clock.now().getTime(), ttl: 0 },
    arrayKey: 'incidents',
    tail: { links },
    rows: fromArray(rows),
    map: toMdsIncident,
  });
}
