/**
 * Issue 26: a republish lost to a publisher killed between its claim and its record.
 *
 * PubClaim on a published hour clears `dirty` and counts an attempt but leaves the status
 * 'published'; only the record (PublicationHourlyRecord) sets attempts back to 0, and only a failure
 * (PubFailed) makes it 'failed'. A publisher killed in between left a row that no arm of the
 * republish sweep took (not dirty, not failed, not pending): the late trip that had made the hour
 * dirty never reached its file, the stale file was served as current, and retention counted the
 * hour as cleanly published. The sweep (PubNeedsRepublish) now also takes published rows with
 * attempts > 0, a claim that never recorded, and retention waits for them (migration 000200).
 *
 * The kill is deterministic: the child publisher (test/support/publisher-child.ts, FAULTS_HOLD_PUTS=1)
 * hangs in every put and prints its key, so once the line of the changed file is read its rows are
 * claimed and can no longer be recorded. The second case makes the same state with PubClaim itself.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { startPublisherProcess } from './support/publisher-process.js';
import { useTestContext } from './support/context.js';
import { recordsOf, waitFor } from './support/faults.js';
import { feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { sql } from '../lib/core/sql/typed.js';
import { feedById, HOURLY_FEEDS, objectKey } from '../lib/feeds/publications.js';
import { floorHour, formatHour, hoursBetween, HOUR_MS } from '../lib/feeds/hours.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import { publishHourSet } from '../publisher/publish.js';
import { dueHourJobs, latestDueHour } from '../publisher/schedule.js';
import { startPublisher } from '../publisher/index.js';

describe('republish after a publisher killed between its claim and its record (issue 26)', function () {
  this.timeout(120_000);
  const t = useTestContext();
  const trips = feedById('mds-2.0-trips')!;
  let zone: string;
  let vehicle: string;
  /** the zone's first hour: due, published before each case */
  let hour: Date;
  let key: string;
  let firstTrip: string;
  /** the late trips of the cases before: every file published since holds them */
  const lateTrips: string[] = [];
  const at = (minute: number) => new Date(hour.getTime() + minute * 60_000);

  before(async () => {
    const now = t.ctx.clock.now();
    hour = new Date(floorHour(now).getTime() - 2 * HOUR_MS);
    zone = await feedZone(t.ctx.db, { createdAt: hour });
    key = objectKey(trips, zone, hour);
    vehicle = (await feedVehicle(t.ctx.db, zone)).id;
    firstTrip = await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at(10), end: at(20) });
    // every due hour of the zone published, as a running publisher leaves them
    for (const h of hoursBetween(hour, latestDueHour(now, t.ctx.config.publishLatenessSeconds))) {
      for (const r of await publishHourSet(t.ctx, zone, h)) expect(r.outcome, `${r.feed} ${r.hour}`).to.equal('written');
    }
  });

  /** The trips file's row. */
  const row = () =>
    t.ctx.db.one<{ status: string; dirty: boolean; attempts: number; sha256: string }>(
      `SELECT status, dirty, attempts, sha256 FROM feed_publications WHERE feed = $1 AND version = $2 AND scope = $3 AND hour = $4::timestamp`,
      [trips.feed, trips.version, zone, hourParam(hour)],
    );

  /** Whether the publisher's tick queues the trips file of the hour. */
  const swept = async () => (await dueHourJobs(t.ctx)).some((j) => j.feedId === trips.id && j.zone === zone && j.hour === formatHour(hour));

  /** The stored object: the sha256 of its bytes and the trip ids it holds. */
  async function stored(): Promise<{ sha256: string; tripIds: string[] }> {
    const obj = await t.ctx.store.get(key);
    expect(obj, key).to.not.equal(undefined);
    const chunks: Buffer[] = [];
    for await (const c of obj!.body) chunks.push(c as Buffer);
    const bytes = Buffer.concat(chunks);
    const records = recordsOf(JSON.parse(gunzipSync(bytes).toString('utf8')));
    return { sha256: createHash('sha256').update(bytes).digest('hex'), tripIds: records.map((r: { trip_id: string }) => r.trip_id) };
  }

  /** A publisher in this process, ticked once: every outstanding file of the zone is published again. */
  async function restartAndRepublish(): Promise<void> {
    const publisher = await startPublisher(t.ctx, { cron: false, pollingIntervalSeconds: 0.5 });
    try {
      await publisher.tick();
      await waitFor(
        'every claimed or dirty file to be recorded',
        async () =>
          (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM feed_publications WHERE attempts > 0 OR dirty OR status <> 'published'`)).n === 0,
        60_000,
        200,
      );
    } finally {
      await publisher.stop();
    }
  }

  /** After the republish: the stored object is the one the row names, with the late trip in it. */
  async function expectRepublished(before: { sha256: string }, lateTrip: string): Promise<void> {
    const after = await row();
    expect(after).to.deep.include({ status: 'published', dirty: false, attempts: 0 });
    expect(after.sha256).to.not.equal(before.sha256);
    const obj = await stored();
    expect(obj.sha256, "the stored object's sha256").to.equal(after.sha256);
    expect(obj.tripIds).to.have.members([firstTrip, ...lateTrips, lateTrip]);
    lateTrips.push(lateTrip);
    // recorded: the sweep lets the file be (no republish on every tick)
    expect(await swept()).to.equal(false);
  }

  it('killed (SIGKILL) after claiming a dirty published hour: the restarted publisher republishes it with the late trip', async () => {
    const before = await row();
    expect(before).to.deep.include({ status: 'published', dirty: false, attempts: 0 });
    const late = await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at(30), end: at(40) });
    expect((await row()).dirty, 'the late trip dirties the file').to.equal(true);

    const child = startPublisherProcess({
      LOG_LEVEL: 'silent',
      DATABASE_URL: t.database.url,
      STORE_URL: `file://${t.storeDir}`,
      FAULTS_HOLD_PUTS: '1',
      FAULTS_CONCURRENCY: '4',
    });
    await waitFor(`the child to hold the put of ${key}`, () => child.lines.includes(`put-held ${key}`) || child.proc.exitCode !== null, 60_000, 20);
    expect(child.proc.exitCode, 'the child ended before it was killed').to.equal(null);
    child.proc.kill('SIGKILL');
    expect((await child.exited).signal).to.equal('SIGKILL');

    // what the kill left: claimed (dirty cleared, an attempt counted), never recorded, the old file
    expect(await row()).to.deep.include({ status: 'published', dirty: false, attempts: 1, sha256: before.sha256 });
    const old = await stored();
    expect(old.sha256).to.equal(before.sha256);
    expect(old.tripIds).to.not.include(late);
    expect(await swept(), 'the sweep takes the claim that never recorded').to.equal(true);

    await restartAndRepublish();
    await expectRepublished(before, late);
  });

  it('the row exactly as PubClaim leaves a dirty published hour is swept, kept from retention and republished', async () => {
    const before = await row();
    const late = await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at(45), end: at(50) });
    expect((await row()).dirty).to.equal(true);
    // retention counts the hour's dirty trip files as not cleanly published (their day is kept)
    const unpublished = async () => (await t.ctx.db.one(sql('HistoryUnpublishedHours'), ['trips', hourParam(hour).slice(0, 10)])).hours;
    const held = await unpublished();
    // the claim of a publisher that dies before its next statement (or whose PubFailed cannot reach
    // the database): nothing after it runs
    await t.ctx.db.query(sql('PubClaim'), [[trips.feed], [trips.version], zone, hourParam(hour)]);
    expect(await row()).to.deep.include({ status: 'published', dirty: false, attempts: 1, sha256: before.sha256 });
    expect(await swept(), 'the sweep takes the claim that never recorded').to.equal(true);
    expect(await unpublished(), 'retention still keeps the day of the claimed file').to.equal(held);

    await restartAndRepublish();
    await expectRepublished(before, late);
    expect(await unpublished()).to.equal(held - HOURLY_FEEDS.filter((f) => f.source === 'trips').length);
  });
});
