/**
 * Fault: the publisher process is killed with SIGKILL while it writes an hourly file.
 *
 * A child process (test/support/publisher-child.ts) publishes three hours of simulated demo fleet
 * through a store that trickles every body in; it is killed -9 once a few puts have begun. Readers
 * poll every due object key all along: each read is a 404 or a whole gzip file that parses as JSON.
 * A publisher started again (in-process) finishes: every due hour is published, every trip is in
 * exactly one trips file and every event in exactly one events file. Then the same again on top of
 * published files (every hour republished): readers see the old file or the new one, never a mix.
 */
import { expect } from 'chai';
import { startPublisherProcess } from './support/publisher-process.js';
import { useTestContext } from './support/context.js';
import { readObject, recordsOf, waitFor } from './support/faults.js';
import { count } from './support/figures.js';
import { FsStore } from '../lib/core/store/fs.js';
import { seedDemo } from '../ops/seed/index.js';
import { simulateHistory } from '../ops/sim/index.js';
import { startPublisher } from '../publisher/index.js';
import { publishStatus } from '../publisher/ops.js';
import { latestDueHour } from '../publisher/schedule.js';
import { HOURLY_FEEDS, feedById, objectKey } from '../lib/feeds/publications.js';
import { floorHour, hoursBetween, HOUR_MS } from '../lib/feeds/hours.js';

const ROW = 'faults: publisher SIGKILL';

describe('faults: publisher killed with SIGKILL mid-write', function () {
  this.timeout(120_000);
  const t = useTestContext();
  const keys: string[] = [];
  let dueTo: Date;
  let deployedAt: Date;
  let zones: string[];

  before(async function () {
    this.timeout(120_000);
    const now = t.ctx.clock.now();
    deployedAt = new Date(floorHour(now).getTime() - 3 * HOUR_MS);
    await seedDemo(t.ctx, { vehiclesPerZone: 40, deployedAt });
    await simulateHistory(t.ctx, { days: (now.getTime() - deployedAt.getTime()) / 86_400_000, seed: 7, end: now });
    dueTo = latestDueHour(now, t.ctx.config.publishLatenessSeconds);
    zones = (await t.ctx.db.many<{ id: string }>(`SELECT id FROM zones ORDER BY id`)).map((r) => r.id);
    for (const z of zones) for (const h of hoursBetween(deployedAt, dueTo)) for (const f of HOURLY_FEEDS) keys.push(objectKey(f, z, h));
    expect(keys.length).to.be.greaterThan(10);
  });

  /** Runs a child, polls every key until the kill, kills it after `afterPuts` puts began; returns the read figures. */
  async function killMidWrite(afterPuts: number) {
    const child = startPublisherProcess({ LOG_LEVEL: 'silent', DATABASE_URL: t.database.url, STORE_URL: `file://${t.storeDir}`, FAULTS_SLOW_STORE: '128:15' });
    const reader = await FsStore.open(t.storeDir);
    const reads = { missing: 0, complete: 0, broken: [] as string[] };
    let stop = false;
    const poll = (async () => {
      // bounded: the loop ends when the child is dead (and the test fails by timeout otherwise)
      while (!stop) {
        for (const key of keys) {
          const r = await readObject(reader, key);
          if (r.kind === 'broken') reads.broken.push(`${key}: ${r.error}`);
          else reads[r.kind]++;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await waitFor(
      'the child to begin writing',
      () => child.lines.filter((l) => l.startsWith('put-start')).length >= afterPuts || child.proc.exitCode !== null,
      60_000,
      20,
    );
    expect(child.proc.exitCode, 'the child finished before it could be killed').to.equal(null);
    child.proc.kill('SIGKILL');
    const exit = await child.exited;
    stop = true;
    await poll;
    // one last pass over what the dead process left behind
    for (const key of keys) {
      const r = await readObject(reader, key);
      if (r.kind === 'broken') reads.broken.push(`${key}: ${r.error}`);
      else reads[r.kind]++;
    }
    count(ROW, 'faults');
    count(ROW, 'inputs', reads.missing + reads.complete + reads.broken.length);
    if (reads.broken.length) count(ROW, 'failures', reads.broken.length);
    return { exit, reads, putsBegun: child.lines.filter((l) => l.startsWith('put-start')).length };
  }

  /** Restarts a publisher in this process and waits until every due hour is published. */
  async function restartAndFinish() {
    const publisher = await startPublisher(t.ctx, { cron: false, pollingIntervalSeconds: 0.5, concurrency: 4 });
    try {
      await waitFor(
        'every due hour to be published after the restart',
        async () => {
          await publisher.tick();
          const s = await publishStatus(t.ctx, { zones: 'all', to: dueTo });
          return s.totals.published === keys.length && s.totals.failed + s.totals.pending + s.totals.missing + s.totals.dirty === 0 ? s : undefined;
        },
        60_000,
        500,
      );
    } catch (err) {
      const s = await publishStatus(t.ctx, { zones: 'all', to: dueTo });
      const jobs = await t.ctx.db.many(`SELECT state, count(*)::int AS n FROM pgboss.job WHERE name = 'feeds-publish-hour' GROUP BY state`);
      throw new Error(`${(err as Error).message}: ${JSON.stringify(s.totals)} jobs ${JSON.stringify(jobs)} failures ${JSON.stringify(s.failures.slice(0, 3))}`);
    } finally {
      await publisher.stop();
    }
  }

  /** Every file complete and matching its row; every trip / event in exactly one file of its feed. */
  async function checkPublished() {
    const reader = await FsStore.open(t.storeDir);
    const seen = new Map<string, Map<string, number>>();
    for (const z of zones) {
      for (const f of HOURLY_FEEDS) {
        for (const h of hoursBetween(deployedAt, dueTo)) {
          const r = await readObject(reader, objectKey(f, z, h));
          expect(r.kind, objectKey(f, z, h)).to.equal('complete');
          const recs = recordsOf((r as { body: unknown }).body);
          const row = await t.ctx.db.one(
            `SELECT record_count, status FROM feed_publications WHERE feed = $1 AND version = $2 AND scope = $3 AND hour = $4::timestamp`,
            [f.feed, f.version, z, h.toISOString().slice(0, 13) + ':00:00'],
          );
          expect(row).to.deep.include({ status: 'published', record_count: recs.length });
          const ids = seen.get(f.id) ?? new Map<string, number>();
          seen.set(f.id, ids);
          for (const rec of recs) {
            const id: string = rec.trip_id ?? rec.event_id ?? rec.tripId;
            if (id) ids.set(id, (ids.get(id) ?? 0) + 1);
          }
        }
      }
    }
    const hourTo = new Date(dueTo.getTime() + HOUR_MS);
    const trips = (await t.ctx.db.many(`SELECT trip_id FROM trips WHERE end_time < $1`, [hourTo])).map((r) => r.trip_id as string);
    const events = (await t.ctx.db.many(`SELECT event_id FROM events WHERE hour < $1::timestamp`, [hourTo.toISOString().slice(0, 19)])).map(
      (r) => r.event_id as string,
    );
    // the demand curve follows the zones' local time: at night three hours hold only a few trips
    // (or none), but the deployment alone gives every vehicle events, so records exist to check
    expect(trips.length + events.length, 'the simulation produced records').to.be.greaterThan(20);
    for (const [feedId, expected] of [
      ['mds-2.0-trips', trips],
      ['mds-2.0-events', events],
    ] as const) {
      const got = seen.get(feedId)!;
      const twice = [...got.entries()].filter(([, n]) => n > 1);
      expect(twice, `${feedId}: records in more than one file`).to.deep.equal([]);
      expect(got.size, `${feedId}: records published vs table`).to.equal(expected.length);
      for (const id of expected) expect(got.has(id), `${feedId}: ${id} not published`).to.equal(true);
    }
    expect(feedById('mds-2.0-trips')).to.not.equal(undefined);
    return { trips: trips.length, events: events.length };
  }

  it('no reader sees a partial file; a restarted publisher publishes every hour, every record once', async () => {
    const first = await killMidWrite(3);
    expect(first.exit.signal).to.equal('SIGKILL');
    expect(first.reads.broken, 'partial objects seen by readers').to.deep.equal([]);
    expect(first.reads.complete + first.reads.missing).to.be.greaterThan(keys.length);
    // the kill left work behind: hours claimed ('pending') or never reached
    const st = await publishStatus(t.ctx, { zones: 'all', to: dueTo });
    expect(st.totals.published).to.be.lessThan(keys.length);
    await restartAndFinish();
    const figures = await checkPublished();
    console.log(
      `      [faults] first kill after ${first.putsBegun} puts began; reads ${first.reads.complete} complete, ${first.reads.missing} 404, 0 partial; ${figures.trips} trips, ${figures.events} events in exactly one file each`,
    );
  });

  it('killed while replacing published files: readers see the old or the new file, never a mix', async () => {
    // make every hour look changed, so the child rewrites each object over its published version
    await t.ctx.db.query(`UPDATE feed_publications SET sha256 = 'changed', dirty = true`);
    const second = await killMidWrite(4);
    expect(second.exit.signal).to.equal('SIGKILL');
    expect(second.reads.broken, 'partial objects seen by readers').to.deep.equal([]);
    expect(second.reads.missing, 'a published file disappeared during the rewrite').to.equal(0);
    await restartAndFinish();
    await checkPublished();
    console.log(`      [faults] second kill after ${second.putsBegun} puts began; reads ${second.reads.complete} complete, 0 missing, 0 partial`);
  });
});
