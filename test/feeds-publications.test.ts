/**
 * MDS 2.0 publication_time and the publications index (issue 16): a late record republishes its
 * hour; the index shows it (one more record, a new sha256, one more republish) and the records
 * published before keep their publication_time while the late one gets the republish's.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { publishHourSet } from '../publisher/publish.js';
import { publishStatus } from '../publisher/ops.js';
import { feedById } from '../lib/feeds/publications.js';
import type { Queryable } from '../lib/core/db.js';
import { useTestContext } from './support/context.js';
import { expectMds, tokenFor } from './support/feed-auth.js';
import { feedVehicle, feedZone } from './support/feed-fixtures.js';

const NOW = '2026-11-21T10:30:00Z';
const TRIPS = feedById('mds-2.0-trips')!;
const EVENTS = feedById('mds-2.0-events')!;
const at = (s: string) => new Date(`2026-11-21T${s}Z`);

/** A trip that reached us at `recordedAt` (the clock of the test, not the database's now()). */
async function trip(q: Queryable, device: string, zone: string, end: Date, recordedAt: Date): Promise<string> {
  const r = await q.one<{ trip_id: string }>(
    `INSERT INTO trips (trip_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time, start_location, end_location, distance_m, duration_s, recorded_at)
     SELECT gen_random_uuid(), v.id, $2, v.vehicle_type_id, 'rider', $3::timestamptz - interval '10 minutes', $3,
            ST_SetSRID(ST_MakePoint(13.40, 52.51), 4326), ST_SetSRID(ST_MakePoint(13.41, 52.52), 4326), 1500, 600, $4
       FROM vehicles v WHERE v.id = $1 RETURNING trip_id`,
    [device, zone, end, recordedAt],
  );
  return r.trip_id;
}

describe('feeds: publication_time and the publications index', () => {
  const t = useTestContext({ now: NOW, config: { FEED_CACHE_BYTES: '0' } });
  let zone: string;
  let device: string;
  let city: string;

  before(async () => {
    zone = await feedZone(t.ctx.db, { createdAt: at('00:00:00') });
    device = (await feedVehicle(t.ctx.db, zone)).id;
    city = `Bearer ${await tokenFor(t.ctx, 'pub-city', 'city')}`;
  });

  const app = () => request(buildApp(t.ctx).callback());
  const index = (from: string, to: string, auth = city) =>
    app().get(`/v1/partner-apis/mds/${zone}/publications?from=${from}&to=${to}`).set('Authorization', auth);

  it('a late record: count + 1, new sha256, one republish; earlier records keep their publication_time', async () => {
    const a = await trip(t.ctx.db, device, zone, at('08:10:00'), at('08:10:05'));
    const b = await trip(t.ctx.db, device, zone, at('08:40:00'), at('08:40:05'));
    t.ctx.clock.set(at('09:06:00'));
    await publishHourSet(t.ctx, zone, at('08:00:00'), { feeds: [TRIPS] });
    const first = (await index('2026-11-21T08', '2026-11-21T08')).body.publications.find((p: any) => p.feed === 'mds-2.0-trips');
    expect(first).to.deep.include({ hour: '2026-11-21T08', state: 'published', record_count: 2, republish_count: 0 });
    expect(first.first_publication_time).to.equal(at('09:06:00').getTime());
    const body1 = (await app().get(`/v1/partner-apis/mds/${zone}/trips?end_time=2026-11-21T08`).set('Authorization', city)).body;
    expect(body1.trips.map((x: any) => x.publication_time)).to.deep.equal([at('09:06:00').getTime(), at('09:06:00').getTime()]);
    expectMds('2.0/micromobility/trips', body1);

    // a trip of 08 that reaches us at 09:30: the hour is dirty, then republished at 09:31
    const late = await trip(t.ctx.db, device, zone, at('08:50:00'), at('09:30:00'));
    expect((await index('2026-11-21T08', '2026-11-21T08')).body.publications.find((p: any) => p.feed === 'mds-2.0-trips').state).to.equal('republishing');
    t.ctx.clock.set(at('09:31:00'));
    await publishHourSet(t.ctx, zone, at('08:00:00'), { feeds: [TRIPS] });
    const second = (await index('2026-11-21T08', '2026-11-21T08')).body.publications.find((p: any) => p.feed === 'mds-2.0-trips');
    expect(second).to.deep.include({
      state: 'published',
      record_count: 3,
      republish_count: 1,
      first_publication_time: at('09:06:00').getTime(),
      last_publication_time: at('09:31:00').getTime(),
    });
    expect(second.sha256)
      .to.match(/^[0-9a-f]{64}$/)
      .and.not.equal(first.sha256);
    const body2 = (await app().get(`/v1/partner-apis/mds/${zone}/trips?end_time=2026-11-21T08`).set('Authorization', city)).body;
    const times = Object.fromEntries(body2.trips.map((x: any) => [x.trip_id, x.publication_time]));
    expect(times).to.deep.equal({ [a]: at('09:06:00').getTime(), [b]: at('09:06:00').getTime(), [late]: at('09:31:00').getTime() });
    expectMds('2.0/micromobility/trips', body2);

    // publishing again without changes writes nothing and keeps every figure
    t.ctx.clock.set(at('09:40:00'));
    const [again] = await publishHourSet(t.ctx, zone, at('08:00:00'), { feeds: [TRIPS] });
    expect(again).to.include({ outcome: 'unchanged' });
    const third = (await index('2026-11-21T08', '2026-11-21T08')).body.publications.find((p: any) => p.feed === 'mds-2.0-trips');
    expect(third).to.deep.equal(second);
    // make publish-status reads the same figures
    const status = await publishStatus(t.ctx, { zones: [zone], from: at('08:00:00'), to: at('08:00:00'), feeds: ['mds-2.0-trips'] });
    expect(status.republished).to.equal(1);
    expect(status.files[0]).to.deep.include({ record_count: 3, sha256: second.sha256, republish_count: 1 });
  });

  it('events carry publication_time too, valid against the official schema', async () => {
    await t.ctx.db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, recorded_at)
       VALUES ($1, $2, '{battery_low}', 'non_operational', $3, ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 10, $4)`,
      [device, zone, at('07:15:00'), at('07:15:02')],
    );
    t.ctx.clock.set(at('08:10:00'));
    await publishHourSet(t.ctx, zone, at('07:00:00'), { feeds: [EVENTS] });
    const res = await app().get(`/v1/partner-apis/mds/${zone}/events/historical?event_time=2026-11-21T07`).set('Authorization', city);
    expect(res.body.events[0].publication_time).to.equal(at('08:10:00').getTime());
    expectMds('2.0/micromobility/events_historical', res.body);
  });

  it('the index covers every readable file of each hour; pending where nothing is served; the current hour is the last', async () => {
    t.ctx.clock.set(new Date(NOW));
    const res = await index('2026-11-21T07', '2026-11-22T07');
    expect(res.status).to.equal(200);
    const hours = [...new Set(res.body.publications.map((p: any) => p.hour))];
    expect(hours[0]).to.equal('2026-11-21T07');
    expect(hours.at(-1)).to.equal('2026-11-21T10');
    const feeds = new Set(res.body.publications.map((p: any) => p.feed));
    expect([...feeds].sort()).to.deep.equal(
      [
        'insurance-2.0-trips',
        'mds-0.4-status_changes',
        'mds-0.4-trips',
        'mds-1.2-status_changes',
        'mds-1.2-trips',
        'mds-2.0-events',
        'mds-2.0-telemetry',
        'mds-2.0-trips',
      ].filter((f) => !f.startsWith('insurance')),
    );
    const nine = res.body.publications.find((p: any) => p.hour === '2026-11-21T09' && p.feed === 'mds-2.0-trips');
    expect(nine).to.deep.equal({
      feed: 'mds-2.0-trips',
      hour: '2026-11-21T09',
      state: 'pending',
      record_count: null,
      sha256: null,
      first_publication_time: null,
      last_publication_time: null,
      republish_count: 0,
    });
  });

  it('city role only, its zones only; 400 for bad or too long ranges', async () => {
    for (const role of ['insurer', 'data', 'gbfs'] as const) {
      expect((await index('2026-11-21T07', '2026-11-21T08', `Bearer ${await tokenFor(t.ctx, `pub-${role}`, role)}`)).status, role).to.equal(403);
    }
    const other = await feedZone(t.ctx.db, { createdAt: at('00:00:00') });
    expect((await index('2026-11-21T07', '2026-11-21T08', `Bearer ${await tokenFor(t.ctx, 'pub-city-other', 'city', [other])}`)).status).to.equal(403);
    for (const [from, to] of [
      ['2026-11-21T08', '2026-11-21T07'],
      ['2026-10-01T00', '2026-11-21T00'],
      ['2026-11-21', '2026-11-21T07'],
      ['', '2026-11-21T07'],
    ]) {
      const res = await index(from, to);
      expect(res.status, `${from}..${to}`).to.equal(400);
      expect(res.body.error).to.equal('bad_param');
    }
    expect((await app().get(`/v1/partner-apis/mds/${zone}/publications?from=2026-11-21T07`).set('Authorization', city)).status).to.equal(400);
  });
});
