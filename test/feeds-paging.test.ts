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
      ]);
    });
    const text = JSON.stringify(plan['QUERY PLAN']);
    expect(text).to.not.match(/"Node Type":"Sort"/);
    expect(text).to.match(/events_.*zone_id_ts_event_id|events_zone_ts_id/);
  });
});
