/**
 * Paged event windows (api/feeds/paging.ts): MDS 2.0 events/recent and legacy POST /events answer
 * bounded pages; following next returns every event of the window exactly once while new events
 * arrive (in the window, before and after the position); cursors cannot be forged or moved to
 * another window; each page is an ordered index range scan, never a sort.
 */
import { expect } from 'chai';
import pg from 'pg';
import request from 'supertest';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { sql } from '../lib/core/sql/typed.js';
import { EVENTS_PAGE_MAX } from '../api/feeds/paging.js';
import { useTestContext } from './support/context.js';
import { expectMds, tokenFor } from './support/feed-auth.js';
import { feedVehicle, feedZone } from './support/feed-fixtures.js';

const NOW = Date.parse('2026-11-21T10:30:00Z');
const V12 = 'application/vnd.mds+json;version=1.2';
const V04 = 'application/vnd.mds.provider+json;version=0.4';

describe('feeds: paged event windows', function () {
  this.timeout(60_000);
  const t = useTestContext({ now: new Date(NOW) });
  let zone: string;
  let device: string;
  let city: string;
  const start = NOW - 3 * 3600_000;
  const end = NOW;

  /** n events in the window at `at(i)` (µs apart, several sharing one millisecond and some one instant). */
  const insert = (n: number, firstMs: number) =>
    t.ctx.db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent)
       SELECT $1, $2, '{comms_restored}', 'available', timestamptz 'epoch' + ($3::int8 * 1000 + (i / 3) * 250) * interval '1 microsecond',
              ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 60
         FROM generate_series(0, $4::int - 1) i`,
      [device, zone, firstMs, n],
    );

  before(async () => {
    zone = await feedZone(t.ctx.db, { createdAt: new Date('2026-11-01T00:00:00Z') });
    device = (await feedVehicle(t.ctx.db, zone)).id;
    await insert(2500, start + 60_000);
    city = `Bearer ${await tokenFor(t.ctx, 'paging-city', 'city')}`;
  });

  const path = (u: string) => u.replace(/^https?:\/\/[^/]+/, '');

  it('MDS 2.0 events/recent: pages of `limit`, every event once while new ones arrive, links.next null at the end', async () => {
    const app = request(buildApp(t.ctx).callback());
    const before = (await t.ctx.db.many(`SELECT event_id FROM events WHERE zone_id = $1 AND ts >= $2 AND ts < $3`, [zone, new Date(start), new Date(end)])).map(
      (r) => r.event_id,
    );
    let url = `/v1/partner-apis/mds/${zone}/events/recent?start_time=${start}&end_time=${end}&limit=1000`;
    const seen: string[] = [];
    let pages = 0;
    for (;;) {
      const res = await app.get(url).set('Authorization', city);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expectMds('2.0/micromobility/events_recent', res.body);
      expect(res.body.events.length).to.be.at.most(1000);
      seen.push(...res.body.events.map((e: any) => e.event_id));
      pages++;
      // new events arrive between pages, before and after the position
      await insert(5, start + 30_000);
      await insert(5, end - 60_000);
      if (res.body.links.next === null) break;
      url = path(res.body.links.next);
    }
    expect(pages).to.equal(3);
    expect(new Set(seen).size, 'no event twice').to.equal(seen.length);
    expect([...seen].sort()).to.deep.equal([...before].sort());
    // a new traversal sees the events that arrived meanwhile
    const fresh = await app
      .get(`/v1/partner-apis/mds/${zone}/events/recent?start_time=${start}&end_time=${end}&limit=${EVENTS_PAGE_MAX}`)
      .set('Authorization', city);
    expect(fresh.body.events.length).to.equal(2500 + pages * 10);
  });

  it('legacy POST /events: the same pages, next in the Link header', async () => {
    const legacy = request(buildLegacyApp(t.ctx).callback());
    const expected = (
      await t.ctx.db.one(`SELECT count(*)::int AS n FROM events WHERE zone_id = $1 AND ts >= $2 AND ts < $3`, [zone, new Date(start), new Date(end)])
    ).n;
    for (const accept of [V12, V04]) {
      let url = `/en/${zone}/events?start_time=${start}&end_time=${end}&limit=2000`;
      const seen = new Set<string>();
      let count = 0;
      for (;;) {
        const res = await legacy.post(url).set('Authorization', city).set('Accept', accept);
        expect(res.status).to.equal(200);
        expectMds(accept === V12 ? '1.2.0/status_changes' : '0.4.1/status_changes', res.body);
        for (const s of res.body.data.status_changes) seen.add(`${s.device_id}|${s.event_time}|${count++}`);
        const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.link ?? '');
        if (!link) break;
        url = path(link[1]);
      }
      expect(count, accept).to.equal(expected);
    }
  });

  it('an event whose transaction is open at the first page is served by no page of that traversal, then by the next traversal', async () => {
    const app = request(buildApp(t.ctx).callback());
    const url0 = `/v1/partner-apis/mds/${zone}/events/recent?start_time=${start}&end_time=${end}&limit=${EVENTS_PAGE_MAX}`;
    // a writer's transaction: two events, one before and one after where the first page ends
    const writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      const held = await writer.query(
        `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent)
         VALUES ($1, $2, '{comms_restored}', 'available', $3, ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 50),
                ($1, $2, '{comms_restored}', 'available', $4, ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 50)
         RETURNING event_id`,
        [device, zone, new Date(start + 1000), new Date(end - 1000)],
      );
      const heldIds = held.rows.map((r) => r.event_id as string);
      const first = await app.get(url0.replace(`limit=${EVENTS_PAGE_MAX}`, 'limit=100')).set('Authorization', city);
      expect(first.status).to.equal(200);
      await writer.query('COMMIT');
      const seen: string[] = first.body.events.map((e: any) => e.event_id);
      let next: string | null = first.body.links.next;
      while (next) {
        const res = await app.get(path(next)).set('Authorization', city);
        seen.push(...res.body.events.map((e: any) => e.event_id));
        next = res.body.links.next;
      }
      expect(
        seen.filter((id) => heldIds.includes(id)),
        'neither event of the open transaction',
      ).to.deep.equal([]);
      const again = await app.get(url0).set('Authorization', city);
      expect(again.body.events.map((e: any) => e.event_id)).to.include.members(heldIds);
    } finally {
      await writer.end();
    }
  });

  it('bad limit, forged or foreign cursor → 400', async () => {
    const app = request(buildApp(t.ctx).callback());
    const base = `/v1/partner-apis/mds/${zone}/events/recent?start_time=${start}&end_time=${end}`;
    for (const limit of ['0', String(EVENTS_PAGE_MAX + 1), 'abc', '1.5']) {
      const res = await app.get(`${base}&limit=${limit}`).set('Authorization', city);
      expect(res.status, limit).to.equal(400);
    }
    const first = await app.get(`${base}&limit=10`).set('Authorization', city);
    const next = new URL(first.body.links.next);
    const cursor = next.searchParams.get('cursor')!;
    const [payload, sig] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), t: 0 })).toString('base64url');
    for (const [label, qs] of [
      ['forged position', `&limit=10&cursor=${forged}.${sig}`],
      ['another limit', `&limit=11&cursor=${cursor}`],
      ['garbage', '&limit=10&cursor=abc'],
    ]) {
      const res = await app.get(`${base}${qs}`).set('Authorization', city);
      expect(res.status, label).to.equal(400);
      expect(res.body.error).to.equal('bad_param');
    }
    const otherWindow = await app
      .get(`/v1/partner-apis/mds/${zone}/events/recent?start_time=${start + 1}&end_time=${end}&limit=10&cursor=${cursor}`)
      .set('Authorization', city);
    expect(otherWindow.status).to.equal(400);
  });

  it('a page is an ordered range scan of events (zone_id, ts, event_id) with a limit: no sort', async () => {
    // enable_sort off: a Sort node would still appear if no index could deliver the order (a few
    // thousand rows are too few for the planner to prefer the index on cost alone; at 20,000 a
    // partition it does by itself)
    const plan = await t.ctx.db.tx(async (tx) => {
      await tx.query('SET LOCAL enable_sort = off');
      return tx.one(`EXPLAIN (FORMAT JSON) ${sql('MdsEventsPage').text}`, [
        zone,
        new Date(start),
        new Date(end),
        start * 1000,
        '00000000-0000-0000-0000-000000000000',
        NOW * 1000 * 2,
        1001,
        0,
      ]);
    });
    const text = JSON.stringify(plan['QUERY PLAN']);
    expect(text).to.not.match(/"Node Type":"Sort"/);
    expect(text).to.match(/events_.*zone_id_ts_event_id|events_zone_ts_id/);
  });
});

describe('feeds: page[size] / page[number] paging (JSON:API, MDS 2.1)', function () {
  this.timeout(60_000);
  const t = useTestContext({ now: new Date(NOW) });
  let zone: string;
  let device: string;
  let city: string;
  const start = NOW - 3 * 3600_000;
  const end = NOW;
  const N = 2300;

  const insert = (n: number, firstMs: number) =>
    t.ctx.db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent)
       SELECT $1, $2, '{comms_restored}', 'available', timestamptz 'epoch' + ($3::int8 * 1000 + (i / 3) * 250) * interval '1 microsecond',
              ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 60
         FROM generate_series(0, $4::int - 1) i`,
      [device, zone, firstMs, n],
    );
  const windowIds = async () =>
    (
      await t.ctx.db.many(`SELECT event_id FROM events WHERE zone_id = $1 AND ts >= $2 AND ts < $3 ORDER BY ts, event_id`, [
        zone,
        new Date(start),
        new Date(end),
      ])
    ).map((r) => r.event_id as string);

  before(async () => {
    zone = await feedZone(t.ctx.db, { createdAt: new Date('2026-11-01T00:00:00Z') });
    device = (await feedVehicle(t.ctx.db, zone)).id;
    await insert(N, start + 60_000);
    city = `Bearer ${await tokenFor(t.ctx, 'numbered-city', 'city')}`;
  });

  const path = (u: string) => u.replace(/^https?:\/\/[^/]+/, '');
  const base = () => `/v1/partner-apis/mds/${zone}/events/recent?start_time=${start}&end_time=${end}`;
  const params = (u: string) => new URL(u, 'http://x').searchParams;

  it('follows next through pages of page[size]: every event once while new ones arrive; first/prev/next/last keep page[number] and page[size]', async () => {
    const app = request(buildApp(t.ctx).callback());
    const expected = await windowIds();
    let url = `${base()}&page%5Bsize%5D=1000`;
    const seen: string[] = [];
    const pages: any[] = [];
    for (;;) {
      const res = await app.get(url).set('Authorization', city);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expectMds('2.0/micromobility/events_recent', res.body);
      pages.push(res.body);
      seen.push(...res.body.events.map((e: any) => e.event_id));
      // new events arrive between pages, before and after the position
      await insert(4, start + 30_000);
      await insert(4, end - 60_000);
      if (res.body.links.next === null) break;
      url = path(res.body.links.next);
    }
    expect(pages.map((p) => p.events.length)).to.deep.equal([1000, 1000, N - 2000]);
    expect(seen, 'every event of the window as of the first page, once, in order').to.deep.equal(expected);
    const [p1, p2, p3] = pages;
    expect(Object.keys(p1.links).sort()).to.deep.equal(['first', 'last', 'next', 'prev']);
    expect(p1.links.prev).to.equal(null);
    expect(p3.links.next).to.equal(null);
    for (const p of pages)
      for (const rel of ['first', 'prev', 'next', 'last']) {
        if (p.links[rel] === null) continue;
        const q = params(p.links[rel]);
        expect(q.get('page[size]'), rel).to.equal('1000');
        expect(q.has('limit') || q.has('cursor'), `${rel}: the client's style`).to.equal(false);
        expect(q.get('page[as_of]'), 'one pin for the traversal').to.equal(params(p1.links.first).get('page[as_of]'));
        expect(p.links[rel]).to.match(/page%5Bnumber%5D=\d+&page%5Bas_of%5D=/);
      }
    expect(params(p1.links.next).get('page[number]')).to.equal('2');
    expect(params(p2.links.prev).get('page[number]')).to.equal('1');
    expect(params(p1.links.last).get('page[number]')).to.equal('3');
    expect(params(p3.links.first).get('page[number]')).to.equal('1');
  });

  it('page N under one page[as_of] is the same page whenever and from whichever process it is asked, in any order', async () => {
    const app = request(buildApp(t.ctx).callback());
    const first = await app.get(`${base()}&page%5Bsize%5D=500&page%5Bnumber%5D=1`).set('Authorization', city);
    const pin = params(first.body.links.first).get('page[as_of]')!;
    const last = Number(params(first.body.links.last).get('page[number]'));
    const page = async (a: ReturnType<typeof request>, n: number) => {
      const res = await a.get(`${base()}&page%5Bsize%5D=500&page%5Bnumber%5D=${n}&page%5Bas_of%5D=${encodeURIComponent(pin)}`).set('Authorization', city);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.events.map((e: any) => e.event_id) as string[];
    };
    const forward: string[][] = [];
    for (let n = 1; n <= last; n++) forward.push(await page(app, n));
    // events arrive everywhere in the window, then the pages are asked again backwards, from a new process (no remembered positions)
    await insert(700, start + 10_000);
    const other = request(buildApp(t.ctx).callback());
    for (let n = last; n >= 1; n--) expect(await page(other, n), `page ${n}`).to.deep.equal(forward[n - 1]);
    expect(forward.flat().length).to.equal(new Set(forward.flat()).size);
    // a new traversal (no pin) counts the window as it is now
    const fresh = await app.get(`${base()}&page%5Bsize%5D=500`).set('Authorization', city);
    expect(Number(params(fresh.body.links.last).get('page[number]'))).to.be.greaterThan(last);
  });

  it('limit with page[number] keeps limit in the links; limit equal to page[size] keeps both; page[size] up to 5,000', async () => {
    const app = request(buildApp(t.ctx).callback());
    const withLimit = await app.get(`${base()}&limit=700&page%5Bnumber%5D=2`).set('Authorization', city);
    expect(withLimit.status).to.equal(200);
    expect(withLimit.body.events).to.have.length(700);
    const q = params(withLimit.body.links.next);
    expect([q.get('limit'), q.has('page[size]'), q.get('page[number]')]).to.deep.equal(['700', false, '3']);
    const both = await app.get(`${base()}&limit=700&page%5Bsize%5D=700`).set('Authorization', city);
    expect(both.status).to.equal(200);
    const qb = params(both.body.links.next);
    expect([qb.get('limit'), qb.get('page[size]'), qb.get('page[number]')]).to.deep.equal(['700', '700', '2']);
    const big = await app.get(`${base()}&page%5Bsize%5D=${EVENTS_PAGE_MAX}`).set('Authorization', city);
    expect(big.status).to.equal(200);
    expect(big.body.events.length).to.be.greaterThan(1000);
    expect(big.body.links.next).to.equal(null);
    // the cursor style is unchanged: limit alone pages with a cursor
    const cursorStyle = await app.get(`${base()}&limit=700`).set('Authorization', city);
    expect(params(cursorStyle.body.links.next).has('cursor')).to.equal(true);
    expect(Object.keys(cursorStyle.body.links)).to.deep.equal(['next']);
    // a cursor followed with page[size] beside it: the same size is the same traversal, another is refused
    const cursor = params(cursorStyle.body.links.next).get('cursor')!;
    const same = await app.get(`${base()}&limit=700&page%5Bsize%5D=700&cursor=${cursor}`).set('Authorization', city);
    expect(same.status).to.equal(200);
    expect(params(same.body.links.next).get('page[size]')).to.equal('700');
    expect((await app.get(`${base()}&page%5Bsize%5D=701&cursor=${cursor}`).set('Authorization', city)).status).to.equal(400);
    // the brackets as a client may type them, unencoded
    const raw = await app.get(`${base()}&page[size]=5&page[number]=2`).set('Authorization', city);
    expect(raw.status).to.equal(200);
    expect(raw.body.events).to.have.length(5);
  });

  it('past the last page: 200 with no events, next null, prev the last page', async () => {
    const app = request(buildApp(t.ctx).callback());
    const res = await app.get(`${base()}&page%5Bsize%5D=1000&page%5Bnumber%5D=99`).set('Authorization', city);
    expect(res.status).to.equal(200);
    expect(res.body.events).to.deep.equal([]);
    expect(res.body.links.next).to.equal(null);
    expect(params(res.body.links.prev).get('page[number]')).to.equal(params(res.body.links.last).get('page[number]'));
    expectMds('2.0/micromobility/events_recent', res.body);
    // an empty window: one empty page, first = last
    const empty = await app
      .get(`/v1/partner-apis/mds/${zone}/events/recent?start_time=${end - 10}&end_time=${end}&page%5Bsize%5D=10`)
      .set('Authorization', city);
    expect(empty.body.events).to.deep.equal([]);
    expect(empty.body.links.first).to.equal(empty.body.links.last);
    expect(empty.body.links.next).to.equal(null);
  });

  it('mixed styles, different sizes, bad values, other page[…] members, changed or foreign pins → 400 in the MDS error body', async () => {
    const app = request(buildApp(t.ctx).callback());
    const first = await app.get(`${base()}&page%5Bsize%5D=10`).set('Authorization', city);
    const pin = params(first.body.links.next).get('page[as_of]')!;
    const cursorRes = await app.get(`${base()}&limit=10`).set('Authorization', city);
    const cursor = params(cursorRes.body.links.next).get('cursor')!;
    const [payload, sig] = pin.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), k: 1 })).toString('base64url');
    const cases: Array<[string, string, RegExp]> = [
      ['cursor with page[number]', `&limit=10&cursor=${cursor}&page%5Bnumber%5D=2`, /mixed paging styles/],
      ['cursor with page[as_of]', `&limit=10&cursor=${cursor}&page%5Bas_of%5D=${pin}`, /mixed paging styles/],
      ['limit and page[size] differ', '&limit=10&page%5Bsize%5D=20', /conflicting page sizes/],
      ['page[size] 0', '&page%5Bsize%5D=0', /invalid page\[size\]/],
      ['page[size] too large', `&page%5Bsize%5D=${EVENTS_PAGE_MAX + 1}`, /invalid page\[size\]/],
      ['page[size] not a number', '&page%5Bsize%5D=ten', /invalid page\[size\]/],
      ['page[number] 0', '&page%5Bnumber%5D=0', /invalid page\[number\]/],
      ['page[number] negative', '&page%5Bnumber%5D=-1', /invalid page\[number\]/],
      ['page[number] fractional', '&page%5Bnumber%5D=1.5', /invalid page\[number\]/],
      ['page[number] repeated', '&page%5Bnumber%5D=1&page%5Bnumber%5D=2', /repeated page\[number\]/],
      ['page[offset]', '&page%5Boffset%5D=10', /unsupported paging parameter page\[offset\]/],
      ['page[as_of] forged', `&page%5Bnumber%5D=2&page%5Bas_of%5D=${forged}.${sig}`, /invalid page\[as_of\]/],
      ['page[as_of] garbage', '&page%5Bnumber%5D=2&page%5Bas_of%5D=abc', /invalid page\[as_of\]/],
      ['a cursor as page[as_of]', `&page%5Bnumber%5D=2&page%5Bas_of%5D=${cursor}`, /invalid page\[as_of\]/],
    ];
    for (const [label, qs, pattern] of cases) {
      const res = await app.get(`${base()}${qs}`).set('Authorization', city);
      expect(res.status, label).to.equal(400);
      expect(res.body, label).to.have.all.keys('error', 'error_description', 'error_details');
      expect(res.body.error, label).to.equal('bad_param');
      expect(res.body.error_description, label).to.match(pattern);
    }
    const otherWindow = await app
      .get(`/v1/partner-apis/mds/${zone}/events/recent?start_time=${start + 1}&end_time=${end}&page%5Bnumber%5D=2&page%5Bas_of%5D=${pin}`)
      .set('Authorization', city);
    expect(otherWindow.status).to.equal(400);
    expect(otherWindow.body.error_details[0]).to.match(/another zone or window/);
  });

  it('legacy POST /events: page[number] pages with first/prev/next/last in the Link header', async () => {
    const legacy = request(buildLegacyApp(t.ctx).callback());
    const expected = (await windowIds()).length;
    let url = `/en/${zone}/events?start_time=${start}&end_time=${end}&page%5Bsize%5D=1500`;
    let count = 0;
    let pages = 0;
    for (;;) {
      const res = await legacy.post(url).set('Authorization', city).set('Accept', V12);
      expect(res.status).to.equal(200);
      expectMds('1.2.0/status_changes', res.body);
      count += res.body.data.status_changes.length;
      pages++;
      const links = Object.fromEntries([...(res.headers.link ?? '').matchAll(/<([^>]+)>; rel="(\w+)"/g)].map((m) => [m[2], m[1]]));
      expect(links).to.include.keys('first', 'last');
      expect(params(links.first).get('page[size]')).to.equal('1500');
      if (pages > 1) expect(links).to.have.property('prev');
      if (!links.next) break;
      url = path(links.next);
    }
    expect(count).to.equal(expected);
    expect(pages).to.equal(Math.ceil(expected / 1500));
  });

  it('the vehicle lists are one page: page[size] and page[number]=1 are accepted, page[number]=2 or a bad value is a 400', async () => {
    const app = request(buildApp(t.ctx).callback());
    const legacy = request(buildLegacyApp(t.ctx).callback());
    for (const p of [`/v1/partner-apis/mds/${zone}/vehicles`, `/v1/partner-apis/mds/${zone}/vehicles/status`]) {
      const ok = await app.get(`${p}?page%5Bsize%5D=1000&page%5Bnumber%5D=1`).set('Authorization', city);
      expect(ok.status, p).to.equal(200);
      expect(ok.body.links).to.deep.equal({ next: null });
      for (const qs of ['page%5Bnumber%5D=2', 'page%5Bsize%5D=0', 'cursor=abc.def', 'page%5Bfoo%5D=1']) {
        const res = await app.get(`${p}?${qs}`).set('Authorization', city);
        expect(res.status, `${p}?${qs}`).to.equal(400);
        expect(res.body.error).to.equal('bad_param');
      }
    }
    expect((await legacy.get(`/en/${zone}/vehicles?page%5Bsize%5D=50`).set('Authorization', city).set('Accept', V12)).status).to.equal(200);
    expect((await legacy.get(`/en/${zone}/vehicles?page%5Bnumber%5D=3`).set('Authorization', city).set('Accept', V12)).status).to.equal(400);
  });

  it('a numbered page whose start this process remembers is an ordered range scan from there: no sort, no offset', async () => {
    const plan = await t.ctx.db.tx(async (tx) => {
      await tx.query('SET LOCAL enable_sort = off');
      return tx.one(`EXPLAIN (FORMAT JSON) ${sql('MdsEventsPage').text}`, [
        zone,
        new Date(start),
        new Date(end),
        start * 1000,
        '00000000-0000-0000-0000-000000000000',
        NOW * 1000 * 2,
        1000,
        0,
      ]);
    });
    const text = JSON.stringify(plan['QUERY PLAN']);
    expect(text).to.not.match(/"Node Type":"Sort"/);
    expect(text).to.match(/events_.*zone_id_ts_event_id|events_zone_ts_id/);
  });
});
