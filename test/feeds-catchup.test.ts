/**
 * History catch-up (publisher/schedule.ts, sql/migrations/000130_feed_catchup.sql): every closed
 * hour since a zone began is eventually published, older than the cron's look-back included, a
 * bounded number of hours per tick, behind the current hours; publish-status shows how far it is.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { addHours, floorHour, formatHour, HOUR_MS, parseHour } from '../lib/feeds/hours.js';
import { feedById, HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { PgBoss } from 'pg-boss';
import { enqueueDue, QUEUES } from '../publisher/index.js';
import { publishStatus } from '../publisher/ops.js';
import { publishHourSet } from '../publisher/publish.js';
import { dueHourJobs, groupByHour, lookbackStart } from '../publisher/schedule.js';
import { useTestContext } from './support/context.js';
import { tokenFor } from './support/feed-auth.js';
import { feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';

const NOW = new Date('2026-11-21T10:30:00Z');
const PER_TICK = 24;
// the zone began ten days ago: 240 closed hours, 192 of them before the 48-hour look-back
const ZONE_START = new Date(floorHour(NOW).getTime() - 240 * HOUR_MS);

describe('feeds: history catch-up', function () {
  this.timeout(120_000);
  const t = useTestContext({ now: NOW, config: { PUBLISH_CATCHUP_HOURS_PER_TICK: String(PER_TICK) } });
  let zone: string;
  let oldTrip: string;
  const oldHour = addHours(ZONE_START, 5);

  before(async () => {
    // other test files' zones are not in this database: only this zone has history
    zone = await feedZone(t.ctx.db, { createdAt: ZONE_START });
    const v = await feedVehicle(t.ctx.db, zone);
    oldTrip = await feedTrip(t.ctx.db, {
      deviceId: v.id,
      zoneId: zone,
      start: new Date(oldHour.getTime() + 60_000),
      end: new Date(oldHour.getTime() + 20 * 60_000),
    });
  });

  it('a tick queues the current hours and at most PUBLISH_CATCHUP_HOURS_PER_TICK of the oldest history, behind them', async () => {
    const jobs = await dueHourJobs(t.ctx);
    const start = lookbackStart(t.ctx.clock.now(), t.ctx.config.publishLatenessSeconds);
    const live = new Set(jobs.filter((j) => !j.catchup).map((j) => j.hour));
    const older = [...new Set(jobs.filter((j) => j.catchup).map((j) => j.hour))].sort();
    expect(live.size).to.equal(48);
    expect([...live].every((h) => parseHour(h)! >= start)).to.equal(true);
    expect(older).to.deep.equal(Array.from({ length: PER_TICK }, (_, i) => formatHour(addHours(ZONE_START, i))));
    // each catch-up hour for every feed, grouped in one job per hour
    expect(jobs.filter((j) => j.catchup).length).to.equal(PER_TICK * HOURLY_FEEDS.length);
    expect(groupByHour(jobs).filter((s) => s.catchup).length).to.equal(PER_TICK);
  });

  it('the cron queues the current hours ahead of the history (pg-boss priority)', async () => {
    const boss = new PgBoss({ connectionString: t.database.url, schema: 'pgboss' });
    boss.on('error', () => undefined);
    await boss.start();
    try {
      await boss.createQueue(QUEUES.hour);
      expect(await enqueueDue(t.ctx, boss)).to.equal(48 + PER_TICK);
      const rows = await t.ctx.db.many<{ singleton_key: string; priority: number }>(`SELECT singleton_key, priority FROM pgboss.job WHERE name = $1`, [
        QUEUES.hour,
      ]);
      const start = lookbackStart(t.ctx.clock.now(), t.ctx.config.publishLatenessSeconds);
      for (const r of rows) {
        const hour = parseHour(String(r.singleton_key).split(':').at(-1)!)!;
        expect(r.priority, r.singleton_key).to.equal(hour >= start ? 1 : 0);
      }
      // no worker here: the queued jobs are left alone, the next tests publish by hand
      await t.ctx.db.query(`DELETE FROM pgboss.job WHERE name = $1`, [QUEUES.hour]);
    } finally {
      await boss.stop({ graceful: false });
    }
  });

  it('publish-status shows the catch-up left; ticks publish the whole history, a bounded chunk each', async () => {
    const before = await publishStatus(t.ctx, { zones: [zone] });
    expect(before.catchup).to.have.length(1);
    expect(before.catchup[0].hoursLeft).to.be.greaterThan(0);

    let ticks = 0;
    const lefts: number[] = [];
    for (;;) {
      const sets = groupByHour(await dueHourJobs(t.ctx));
      const catchup = sets.filter((s) => s.catchup);
      expect(catchup.length).to.be.at.most(PER_TICK);
      if (!sets.length) break;
      for (const s of sets) await publishHourSet(t.ctx, s.zone, parseHour(s.hour)!, { feeds: s.feedIds.map((id) => feedById(id)!) });
      lefts.push((await publishStatus(t.ctx, { zones: [zone] })).catchup[0].hoursLeft);
      expect(++ticks).to.be.below(20);
    }
    // 192 hours before the look-back at 24 a tick: 8 ticks of history (the first with the 48 current hours)
    expect(ticks).to.be.within(8, 10);
    expect(lefts.every((l, i) => i === 0 || l <= lefts[i - 1])).to.equal(true);
    const after = await publishStatus(t.ctx, { zones: [zone], from: ZONE_START });
    expect(after.catchup[0].hoursLeft).to.equal(0);
    expect(after.totals.missing).to.equal(0);
    expect(after.rows).to.have.length(240);
  });

  it('a consumer pulling history gets 200 for every closed hour: the old trip in its hour, [] in an empty one', async () => {
    const city = `Bearer ${await tokenFor(t.ctx, 'catchup-city', 'city')}`;
    const app = request(buildApp(t.ctx).callback());
    const withTrip = await app.get(`/v1/partner-apis/mds/${zone}/trips?end_time=${formatHour(oldHour)}`).set('Authorization', city);
    expect(withTrip.status, withTrip.text).to.equal(200);
    expect(withTrip.body.trips.map((x: any) => x.trip_id)).to.deep.equal([oldTrip]);
    for (const h of [ZONE_START, addHours(ZONE_START, 100), addHours(ZONE_START, 191)]) {
      const res = await app.get(`/v1/partner-apis/mds/${zone}/trips?end_time=${formatHour(h)}`).set('Authorization', city);
      expect(res.status, formatHour(h)).to.equal(200);
      expect(res.body.trips).to.deep.equal([]);
    }
  });

  it('a publisher down for longer than the look-back: the hours it missed are caught up', async () => {
    // three days pass without a tick: 72 hours, 24 of them now older than the look-back
    t.ctx.clock.set(new Date(NOW.getTime() + 72 * HOUR_MS));
    const sets = groupByHour(await dueHourJobs(t.ctx));
    const older = sets
      .filter((s) => s.catchup)
      .map((s) => s.hour)
      .sort();
    const start = lookbackStart(t.ctx.clock.now(), t.ctx.config.publishLatenessSeconds);
    expect(older).to.have.length(PER_TICK);
    expect(older[0]).to.equal(formatHour(floorHour(NOW)));
    expect(older.every((h) => parseHour(h)! < start)).to.equal(true);
  });
});
