/**
 * Retention (migration 000102, publisher/jobs/history.ts): a day past retention is dropped only when
 * every hour it holds is published and clean; the files of a dropped hour are still served; a
 * republish of such an hour is refused without touching the archive; late rows for it do not hide
 * the archived file; publish-status and /metrics show what is retained.
 */
import { expect } from 'chai';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTelemetry, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { tokenFor } from './support/feed-auth.js';
import { applyRetention, maintainPartitions } from '../publisher/jobs/history.js';
import { backfill, publishStatus } from '../publisher/ops.js';
import { registerDbCollectors, registry } from '../lib/core/metrics.js';

const NOW = '2026-11-21T12:00:00Z';
const at = (iso: string) => new Date(iso);

describe('history: retention', function () {
  this.timeout(180000);
  const t = useTestContext({ now: NOW, config: { RETENTION_EVENTS_DAYS: '2', RETENTION_TRIPS_DAYS: '2', RETENTION_TELEMETRY_DAYS: '2' } });
  let zone: string;
  let vehicle: string;

  const partitions = async () =>
    (
      await t.ctx.db.many<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent IN ('events'::regclass, 'telemetry'::regclass, 'trips'::regclass) ORDER BY 1`,
      )
    ).map((r) => r.name);
  const row = (hour: string) =>
    t.ctx.db.one(
      `SELECT status, dirty, sha256, object_key FROM feed_publications WHERE feed = 'mds_trips' AND version = '2.0' AND scope = $1 AND hour = $2::timestamp`,
      [zone, hour],
    );

  before(async () => {
    zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-17T00:00:00Z') });
    vehicle = (await feedVehicle(t.ctx.db, zone)).id;
    for (const day of ['2026-11-17', '2026-11-18']) {
      const trip = await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at(`${day}T05:10:00Z`), end: at(`${day}T05:30:00Z`) });
      await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at(`${day}T05:10:00Z`), eventTypes: ['trip_start'], state: 'on_trip', tripIds: [trip] });
      await feedTelemetry(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at(`${day}T05:20:00Z`), tripId: trip });
    }
    await maintainPartitions(t.ctx);
    // 11-17 published whole; 11-18 only up to 11:00
    const done = await backfill(t.ctx, { zones: [zone], from: at('2026-11-17T00:00:00Z'), to: at('2026-11-18T11:00:00Z'), feeds: 'all', force: false });
    expect(done.failed).to.deep.equal([]);
  });

  it('drops the published day past retention and keeps the day with unpublished hours', async () => {
    const run = await applyRetention(t.ctx);
    expect(run.dropped).to.deep.equal(['events/2026-11-17', 'telemetry/2026-11-17', 'trips/2026-11-17']);
    expect(run.held.map((h) => `${h.table}/${h.day}`)).to.deep.equal(['events/2026-11-18', 'telemetry/2026-11-18', 'trips/2026-11-18']);
    for (const h of run.held) expect(h.unpublishedHours).to.be.greaterThan(0);
    const parts = await partitions();
    for (const p of ['events', 'telemetry', 'trips']) {
      expect(parts).to.not.include(`${p}_p20261117`);
      expect(parts).to.include(`${p}_p20261118`);
    }
    const left = await t.ctx.db.one(`SELECT count(*)::int AS n FROM events WHERE ts < '2026-11-18T00:00:00Z'`);
    expect(left.n).to.equal(0);
    // nothing more to drop until 11-18 is published
    expect((await applyRetention(t.ctx)).dropped).to.deep.equal([]);
  });

  it('still serves the published file of a dropped hour', async () => {
    const app = request(buildApp(t.ctx).callback());
    const city = `Bearer ${await tokenFor(t.ctx, 'city', 'city')}`;
    const res = await app.get(`/v1/partner-apis/mds/${zone}/trips?end_time=2026-11-17T05`).set('Authorization', city);
    expect(res.status).to.equal(200);
    expect(res.body.trips).to.have.length(1);
  });

  it('refuses to republish a dropped hour and leaves its file and row as they were', async () => {
    const before = await row('2026-11-17T05:00');
    const res = await backfill(t.ctx, { zones: [zone], from: at('2026-11-17T05:00:00Z'), to: at('2026-11-17T05:00:00Z'), feeds: 'all', force: true });
    expect(res.failed).to.have.length(HOURLY_FEEDS.length);
    for (const f of res.failed) expect(f.error).to.match(/dropped by retention .* archive and is kept/);
    expect(await row('2026-11-17T05:00')).to.deep.equal(before);
    expect(before.status).to.equal('published');
  });

  it('late rows for a dropped hour are kept and do not hide the archived file', async () => {
    await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at('2026-11-17T05:40:00Z'), eventTypes: ['comms_lost'], state: 'non_contactable' });
    const dirty = await t.ctx.db.one(`SELECT count(*)::int AS n FROM feed_publications WHERE scope = $1 AND hour = '2026-11-17T05:00' AND dirty`, [zone]);
    expect(dirty.n).to.equal(0);
    const kept = await t.ctx.db.one(`SELECT count(*)::int AS n FROM events WHERE ts = '2026-11-17T05:40:00Z'`);
    expect(kept.n).to.equal(1);
  });

  it('publish-status and /metrics show what is retained', async () => {
    const status = await publishStatus(t.ctx, { zones: [zone] });
    const events = status.history.find((h) => h.table === 'events')!;
    expect(events.retentionDays).to.equal(2);
    expect(events.droppedBefore?.toISOString()).to.equal('2026-11-18T00:00:00.000Z');
    expect(events.droppedPartitions).to.equal(1);
    expect(events.oldestDay).to.equal('2026-11-18');
    expect(events.partitions).to.be.greaterThan(1);
    registerDbCollectors(t.ctx.db);
    const text = await registry.metrics();
    expect(text).to.contain(`history_dropped_before_seconds{table="events"} ${Date.parse('2026-11-18T00:00:00Z') / 1000}`);
    expect(text).to.contain(`history_oldest_day_seconds{table="trips"} ${Date.parse('2026-11-18T00:00:00Z') / 1000}`);
    expect(text).to.match(/history_partitions\{table="telemetry"\} \d+/);
    expect(text).to.match(/history_bytes\{table="events"\} \d+/);
  });
});
