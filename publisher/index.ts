/**
 * The publisher process: pg-boss queues + node-cron. The cron only enqueues (singleton keys, so each
 * file is published once per cluster however many publishers run); queue workers do the work with
 * retries and backoff. Schedules:
 *   every minute   due and dirty/failed hourly files → `feeds-publish-hour` (one job per file)
 *   every 30 s     rental housekeeping (auto-end idle rentals, photo windows), TOMP hold expiry
 *   every 15 s     the GBFS tick: one job per zone with work and per 2.2 scope due, shared by every
 *                  publisher (publisher/feeds/gbfs/queue.ts)
 *   every 10 min   history maintenance: partitions ahead, DEFAULT-partition rows, retention
 *                  (`history-maintenance`, publisher/jobs/history.ts), and once at start
 */
import PgBoss from 'pg-boss';
import cron, { type ScheduledTask } from 'node-cron';
import type { AppContext } from '../lib/context.js';
import { parseHour } from '../lib/feeds/hours.js';
import { feedById, type HourlyFeed } from '../lib/feeds/publications.js';
import { publishSetWithMetrics } from './publish-metrics.js';
import { dueHourJobs, groupByHour, singletonKey, type HourSetJob } from './schedule.js';
import { GBFS_RUN_SECONDS } from '../lib/feeds/gbfs/files.js';
import { autoEndIdleRentals, expirePhotoWindows } from './jobs/rentals.js';
import { expirePendingBookings } from '../lib/tomp/holds.js';
import { GBFS_QUEUES, startGbfsWorkers } from './feeds/gbfs/queue.js';
import { maintainHistory } from './jobs/history.js';
import { publishDueReports } from './reports.js';

export const QUEUES = {
  hour: 'feeds-publish-hour',
  gbfs: GBFS_QUEUES.tick,
  gbfsZone: GBFS_QUEUES.zone,
  gbfsScope: GBFS_QUEUES.scope,
  rentals: 'housekeeping-rentals',
  tomp: 'housekeeping-tomp',
  history: 'history-maintenance',
  reports: 'feeds-monthly-reports',
} as const;

export interface PublisherOptions {
  /** run the cron (enqueue); false = workers only (default true) */
  cron?: boolean;
  /** hourly-file workers in this process (default 2) */
  concurrency?: number;
  /** pg-boss polling interval (default 2 s; tests use less) */
  pollingIntervalSeconds?: number;
}

export interface Publisher {
  boss: PgBoss;
  /** one cron tick by hand: enqueue what is due now (tests, ops) */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

/** Sends one job per due file; pg-boss drops a send whose singleton key is already queued. */
export async function enqueueDue(ctx: AppContext, boss: PgBoss): Promise<number> {
  const jobs = groupByHour(await dueHourJobs(ctx));
  let sent = 0;
  for (const j of jobs) {
    // a file that becomes due while its hour's job is still queued is picked up by a later tick
    // current hours first: a zone catching up a year of history must not hold them back
    const id = await boss.send(QUEUES.hour, j, { singletonKey: singletonKey(j), priority: j.catchup ? 0 : 1 });
    if (id) sent++;
  }
  return sent;
}

export async function startPublisher(ctx: AppContext, opts: PublisherOptions = {}): Promise<Publisher> {
  const log = ctx.log.child({ component: 'publisher' });
  const boss = new PgBoss({ connectionString: ctx.config.databaseUrl, schema: 'pgboss', max: 4, application_name: 'publisher' });
  // background loops never throw: they report here
  boss.on('error', (err) => log.error({ err: err.message }, 'pg-boss error'));
  await boss.start();

  // short: at most one queued job per singleton key, any number running. Not 'stately' (one running
  // per key): a publisher killed mid-job leaves its job 'active' until it expires (30 min), and under
  // stately the re-enqueued job of that file then fails pg-boss's fetch with a unique violation, which
  // stalls the whole queue behind it (test/faults-publisher-kill.test.ts). Two running publications
  // of one file are harmless: publishHour serialises them with its advisory lock, and the second
  // finds the content unchanged. updateQueue moves databases created with 'stately'.
  const hourQueue = { policy: 'short', retryLimit: 6, retryDelay: 15, retryBackoff: true, expireInSeconds: 30 * 60 } as const;
  await boss.createQueue(QUEUES.hour, { name: QUEUES.hour, ...hourQueue });
  await boss.updateQueue(QUEUES.hour, { name: QUEUES.hour, ...hourQueue });
  // the sweeps are idempotent and safe to run concurrently, so 'short' too: a crashed worker's job
  // must not pause them until it expires
  for (const name of [QUEUES.gbfs, QUEUES.gbfsZone, QUEUES.gbfsScope, QUEUES.rentals, QUEUES.tomp, QUEUES.history, QUEUES.reports]) {
    const sweepQueue = { name, policy: 'short', retryLimit: 0, expireInSeconds: 5 * 60 } as const;
    await boss.createQueue(name, sweepQueue);
    await boss.updateQueue(name, sweepQueue);
  }

  // pg-boss waits one polling interval between jobs of a worker: keep it short so a backlog drains fast
  const polling = { pollingIntervalSeconds: opts.pollingIntervalSeconds ?? 0.5 };
  for (let i = 0; i < Math.max(1, opts.concurrency ?? 2); i++) {
    await boss.work<HourSetJob>(QUEUES.hour, { ...polling, batchSize: 1 }, async ([job]) => {
      const data = job!.data;
      const hour = parseHour(data.hour);
      const feeds = (data.feedIds ?? []).map(feedById);
      if (!hour || !feeds.length || feeds.some((f) => !f)) {
        log.error({ job: data }, 'malformed publish job dropped');
        return;
      }
      const results = await publishSetWithMetrics(ctx, data.zone, hour, feeds as HourlyFeed[]);
      const failed = results.filter((r) => r.outcome === 'failed');
      // a throw fails the job: pg-boss retries it with backoff (the failed rows already say so);
      // the files of the hour that did publish come out unchanged on the retry
      if (failed.length) throw new Error(`${failed.length} of ${results.length} files failed: ${failed.map((f) => f.feed).join(', ')}`);
    });
  }

  // the sweeps: each queue runs its functions in order, one job at a time per cluster (singleton key)
  const sweep = (name: string, fns: Array<(c: AppContext) => Promise<unknown>>) =>
    boss.work(name, polling, async () => {
      for (const fn of fns) await fn(ctx);
    });
  await sweep(QUEUES.rentals, [autoEndIdleRentals, expirePhotoWindows]);
  await sweep(QUEUES.tomp, [expirePendingBookings]);
  await startGbfsWorkers(ctx, boss, polling);
  await sweep(QUEUES.history, [maintainHistory]);
  await sweep(QUEUES.reports, [publishDueReports]);

  const tick = () => enqueueDue(ctx, boss);
  const tasks: ScheduledTask[] = [];
  if (opts.cron ?? true) {
    const every = (expr: string, name: string, fn: () => Promise<unknown>) => {
      tasks.push(
        cron.schedule(expr, async () => {
          try {
            await fn();
          } catch (err) {
            log.warn({ err: (err as Error).message, task: name }, 'cron enqueue failed');
          }
        }, { name: `${name}-${Math.random().toString(36).slice(2, 8)}`, noOverlap: true }),
      );
    };
    every('* * * * *', 'hourly-files', tick);
    every('*/30 * * * * *', 'rentals', () => boss.send(QUEUES.rentals, {}, { singletonKey: 'rentals' }));
    every('*/30 * * * * *', 'tomp', () => boss.send(QUEUES.tomp, {}, { singletonKey: 'tomp' }));
    every(`*/${GBFS_RUN_SECONDS} * * * * *`, 'gbfs', () => boss.send(QUEUES.gbfs, {}, { singletonKey: 'gbfs' }));
    // one run per cluster at a time (singleton key); partitions for today exist before the first write
    const history = () => boss.send(QUEUES.history, {}, { singletonKey: 'history' });
    every('*/10 * * * *', 'history', history);
    // monthly reports: a month closes once a month, late trips dirty it any time; one run per cluster
    const reports = () => boss.send(QUEUES.reports, {}, { singletonKey: 'reports' });
    every('*/10 * * * *', 'reports', reports);
    void reports().catch((err) => log.warn({ err: (err as Error).message }, 'initial reports enqueue failed'));
    void history().catch((err) => log.warn({ err: (err as Error).message }, 'initial history maintenance enqueue failed'));
    // do not wait a minute after a start for the backlog
    void tick().catch((err) => log.warn({ err: (err as Error).message }, 'initial enqueue failed'));
  }
  log.info({ concurrency: opts.concurrency ?? 2, cron: opts.cron ?? true }, 'publisher started');

  return {
    boss,
    tick,
    async stop() {
      for (const t of tasks) await t.destroy();
      await boss.stop({ graceful: true, wait: true, timeout: ctx.config.shutdownTimeoutMs });
    },
  };
}
