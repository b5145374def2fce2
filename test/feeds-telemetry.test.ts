/**
 * MDS 2.0 /telemetry (issue 16): an hourly published file per zone like trips and events, valid
 * against the official model, city role only, with the trip privacy rule: a trip's own points
 * appear once the trip has ended (plus the configured delay), through a republish of their hours.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { publishHourSet } from '../publisher/publish.js';
import { dueHourJobs } from '../publisher/schedule.js';
import { feedById } from '../lib/feeds/publications.js';
import type { AppContext } from '../lib/domain/context.js';
import { useTestContext } from './support/context.js';
import { expectMds, tokenFor } from './support/feed-auth.js';
import { feedTelemetry, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';

const NOW = '2026-11-21T10:30:00Z';
const TELEMETRY = feedById('mds-2.0-telemetry')!;
const at = (s: string) => new Date(`2026-11-21T${s}Z`);

describe('feeds: MDS 2.0 telemetry', () => {
  // no body cache: reads after a republish must see the new file at once (the manual clock never ages the cache)
  const t = useTestContext({ now: NOW, config: { FEED_CACHE_BYTES: '0' } });
  let app: ReturnType<typeof request>;
  let zone: string;
  let other: string;
  let device: string;
  let city: string;
  const trip1 = '11111111-1111-4111-8111-111111111111';
  const trip2 = '22222222-2222-4222-8222-222222222222';

  before(async () => {
    zone = await feedZone(t.ctx.db, { createdAt: at('00:00:00') });
    other = await feedZone(t.ctx.db, { createdAt: at('00:00:00') });
    device = (await feedVehicle(t.ctx.db, zone)).id;
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('08:10:00') });
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('08:20:00') });
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('08:30:00'), tripId: trip1 });
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('08:40:00'), tripId: trip1 });
    await feedTrip(t.ctx.db, { tripId: trip1, deviceId: device, zoneId: zone, start: at('08:25:00'), end: at('08:45:00') });
    // trip 2 is still running: its points are not published yet
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('08:50:00'), tripId: trip2 });
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('09:10:00'), tripId: trip2 });
    city = `Bearer ${await tokenFor(t.ctx, 'tele-city', 'city')}`;
    app = request(buildApp(t.ctx).callback());
  });

  // a fresh app per read: the route's publication cache would otherwise answer from before a republish
  const get = (hour: string, auth = city, z = zone) =>
    request(buildApp(t.ctx).callback()).get(`/v1/partner-apis/mds/${z}/telemetry?telemetry_time=${hour}`).set('Authorization', auth);

  it('publishes the hour: every point of the zone, in-trip points only of ended trips, valid against the official model', async () => {
    const [r] = await publishHourSet(t.ctx, zone, at('08:00:00'), { feeds: [TELEMETRY] });
    expect(r).to.include({ outcome: 'written', records: 4 });
    const res = await get('2026-11-21T08');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('application/vnd.mds+json;version=2.0');
    expect(res.body.version).to.equal('2.0.0');
    const points = res.body.telemetry as Array<Record<string, any>>;
    expect(points.map((p) => new Date(p.timestamp).toISOString().slice(11, 16))).to.deep.equal(['08:10', '08:20', '08:30', '08:40']);
    expect(points.map((p) => p.trip_ids)).to.deep.equal([null, null, [trip1], [trip1]]);
    for (const p of points) expect(p).to.include({ device_id: device, provider_id: t.ctx.config.providerId, journey_id: null });
    expectMds('2.0/telemetry', res.body);
  });

  it('a trip that ends dirties the hours it spans; republished, its points are in', async () => {
    await feedTrip(t.ctx.db, { tripId: trip2, deviceId: device, zoneId: zone, start: at('08:48:00'), end: at('09:15:00') });
    const row = await t.ctx.db.one(`SELECT dirty FROM feed_publications WHERE feed = 'mds_telemetry' AND scope = $1 AND hour = '2026-11-21 08:00'`, [zone]);
    expect(row.dirty).to.equal(true);
    const [r] = await publishHourSet(t.ctx, zone, at('08:00:00'), { feeds: [TELEMETRY] });
    expect(r).to.include({ outcome: 'written', records: 5 });
    const res = await get('2026-11-21T08');
    expect(res.status).to.equal(200);
    expect(res.body.telemetry.at(-1).trip_ids).to.deep.equal([trip2]);
  });

  it('late telemetry dirties its hour; a published hour without points is 200 []', async () => {
    const [empty] = await publishHourSet(t.ctx, zone, at('07:00:00'), { feeds: [TELEMETRY] });
    expect(empty).to.include({ records: 0 });
    expect((await get('2026-11-21T07')).body.telemetry).to.deep.equal([]);
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('07:30:00') });
    const row = await t.ctx.db.one(`SELECT dirty FROM feed_publications WHERE feed = 'mds_telemetry' AND scope = $1 AND hour = '2026-11-21 07:00'`, [zone]);
    expect(row.dirty).to.equal(true);
    await publishHourSet(t.ctx, zone, at('07:00:00'), { feeds: [TELEMETRY] });
    expect((await get('2026-11-21T07')).body.telemetry).to.have.length(1);
  });

  it('city role only, within its zones; parameters as for trips', async () => {
    for (const role of ['insurer', 'data', 'gbfs'] as const) {
      const res = await get('2026-11-21T08', `Bearer ${await tokenFor(t.ctx, `tele-${role}`, role)}`);
      expect(res.status, role).to.equal(403);
    }
    const elsewhere = `Bearer ${await tokenFor(t.ctx, 'tele-city-other', 'city', [other])}`;
    expect((await get('2026-11-21T08', elsewhere)).status).to.equal(403);
    expect((await app.get(`/v1/partner-apis/mds/${zone}/telemetry`).set('Authorization', city)).status).to.equal(400);
    expect((await get('2026-11-21T8')).status).to.equal(400);
    expect((await get('2026-11-21T05')).status, 'a past hour not published yet').to.equal(202);
    expect((await get('2026-11-21T10')).status, 'the current hour').to.equal(404);
    expect((await get('2026-11-22T08')).status).to.equal(404);
    expect((await get('2026-11-20T08')).status).to.equal(404);
  });

  it('with a delay after trips, points wait for it and the tick releases them', async () => {
    const trip3 = '33333333-3333-4333-8333-333333333333';
    await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: zone, ts: at('06:20:00'), tripId: trip3 });
    await feedTrip(t.ctx.db, { tripId: trip3, deviceId: device, zoneId: zone, start: at('06:10:00'), end: at('06:40:00') });
    const delayed: AppContext = { ...t.ctx, config: { ...t.ctx.config, telemetryTripDelayMinutes: 30 } };
    t.ctx.clock.set(at('07:05:00'));
    try {
      const [r] = await publishHourSet(delayed, zone, at('06:00:00'), { feeds: [TELEMETRY] });
      expect(r, 'the trip ended 25 minutes ago').to.include({ records: 0 });
      t.ctx.clock.set(at('07:20:00'));
      await dueHourJobs(delayed, { feeds: [TELEMETRY] });
      const row = await t.ctx.db.one(`SELECT dirty FROM feed_publications WHERE feed = 'mds_telemetry' AND scope = $1 AND hour = '2026-11-21 06:00'`, [zone]);
      expect(row.dirty, 'released by the tick').to.equal(true);
      const [again] = await publishHourSet(delayed, zone, at('06:00:00'), { feeds: [TELEMETRY] });
      expect(again).to.include({ outcome: 'written', records: 1 });
    } finally {
      t.ctx.clock.set(new Date(NOW));
    }
  });
});
