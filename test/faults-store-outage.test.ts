/**
 * Fault: the object store (S3, s3rver on loopback) goes away while the publisher works.
 *
 * With the S3 server stopped, the pg-boss jobs of the due hours fail and are retried with backoff;
 * publish-status (the function and the `bin/ops.ts publish-status` CLI in a child process) names the
 * hours as failed and exits 1. The server starts again on the same port and directory; the cron path
 * (tick) re-enqueues the failed hours once their backoff has passed, and every hour is published.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { readObject, recordsOf, restartableS3, waitFor, type RestartableS3 } from './support/faults.js';
import { count } from './support/figures.js';
import { S3Store } from '../lib/core/store/s3.js';
import { ROOT } from '../lib/core/paths.js';
import { startPublisher, QUEUES } from '../publisher/index.js';
import { publishStatus } from '../publisher/ops.js';
import { HOURLY_FEEDS, objectKey } from '../lib/feeds/publications.js';
import { parseHour } from '../lib/feeds/hours.js';
import type { AppContext } from '../lib/domain/context.js';
import { entry } from './support/entries.js';

const ROW = 'faults: store outage';
const run = promisify(execFile);
const H10 = parseHour('2026-11-21T10')!;
const H11 = parseHour('2026-11-21T11')!;
const at = (iso: string) => new Date(iso);

describe('faults: object store down while publishing (S3)', function () {
  this.timeout(90_000);
  const t = useTestContext({ now: '2026-11-21T12:10:00Z' });
  let s3: RestartableS3;
  let ctx: AppContext;
  let zone: string;
  const tripIds: string[] = [];

  before(async function () {
    this.timeout(60_000);
    s3 = await restartableS3();
    const store = await S3Store.open({
      bucket: s3.bucket,
      prefix: 'feeds',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    ctx = { ...t.ctx, store };
    zone = await feedZone(t.ctx.db, { createdAt: H10 });
    const v = await feedVehicle(t.ctx.db, zone);
    for (const [s, e] of [
      ['10:05', '10:20'],
      ['10:40', '11:10'],
      ['11:30', '11:50'],
    ]) {
      tripIds.push(await feedTrip(t.ctx.db, { deviceId: v.id, zoneId: zone, start: at(`2026-11-21T${s}:00Z`), end: at(`2026-11-21T${e}:00Z`) }));
    }
    await feedEvent(t.ctx.db, { deviceId: v.id, zoneId: zone, eventTypes: ['battery_low'], state: 'non_operational', ts: at('2026-11-21T11:55:00Z') });
  });
  after(async () => {
    await ctx?.store.close();
    await s3?.close();
  });

  it('jobs fail and retry while S3 is down; publish-status shows failed; after the restart every hour is published', async () => {
    const files = HOURLY_FEEDS.length * 2;
    // one pg-boss job per (zone, hour) publishes that hour's files together
    const hourJobs = 2;
    await s3.stop();
    count(ROW, 'faults');
    const pub = await startPublisher(ctx, { cron: false, concurrency: 4, pollingIntervalSeconds: 0.5 });
    try {
      expect(await pub.tick()).to.equal(hourJobs);
      const down = await waitFor(
        'every hour to fail',
        async () => {
          const s = await publishStatus(ctx, { zones: [zone], from: H10, to: H11 });
          return s.totals.failed === files ? s : undefined;
        },
        45_000,
        200,
      );
      expect(down.failures.map((f) => f.error).join('\n')).to.match(/s3 put|ECONNREFUSED|connect/i);
      // pg-boss keeps every failed job for a retry, with a delay (backoff), not at once; a job marks
      // its files failed before it throws, so pg-boss may record the retry a moment after
      const jobs = await waitFor(
        'every hour job to wait for its retry',
        async () => {
          const rows = await t.ctx.db.many(`SELECT state, retry_count, start_after > now() AS delayed FROM pgboss.job WHERE name = $1`, [QUEUES.hour]);
          return rows.filter((j) => j.state === 'retry').length === hourJobs ? rows : undefined;
        },
        10_000,
        100,
      );
      expect(jobs.filter((j) => j.state === 'retry')).to.have.length(hourJobs);
      expect(jobs.every((j) => j.state !== 'retry' || j.delayed)).to.equal(true);

      // the ops CLI in its own process, with the same environment: non-zero exit, the hours named
      const env = {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATABASE_URL: t.database.url,
        STORE_URL: `s3://${s3.bucket}/feeds`,
        S3_ENDPOINT: s3.endpoint,
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      };
      const cli = await run(process.execPath, [entry('ops'), 'publish-status', '--zone', zone, '--from', '2026-11-21T10', '--to', '2026-11-21T11'], {
        cwd: ROOT,
        env,
      }).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e) => ({ code: e.code as number, stdout: String(e.stdout) }),
      );
      expect(cli.code, cli.stdout).to.equal(1);
      expect(cli.stdout).to.contain(`failed ${files}`);
      expect(cli.stdout).to.contain(`FAILED mds-2.0-trips ${zone} 2026-11-21T10`);

      // the server comes back on the same port and directory
      await s3.start();
      count(ROW, 'faults');
      // the cron path: failed hours are due again after their backoff (2^attempts minutes)
      t.ctx.clock.advance(5 * 60_000);
      await waitFor(
        'every hour to be published after the restart',
        async () => {
          await pub.tick();
          const s = await publishStatus(ctx, { zones: [zone], from: H10, to: H11 });
          return s.totals.published === files ? s : undefined;
        },
        45_000,
        300,
      );
    } finally {
      await pub.stop();
    }
    let trips = 0;
    for (const h of [H10, H11]) {
      for (const f of HOURLY_FEEDS) {
        const r = await readObject(ctx.store, objectKey(f, zone, h));
        count(ROW, 'inputs');
        expect(r.kind, objectKey(f, zone, h)).to.equal('complete');
        if (f.id === 'mds-2.0-trips') trips += recordsOf((r as { body: unknown }).body).length;
      }
    }
    expect(trips).to.equal(tripIds.length);
  });
});
