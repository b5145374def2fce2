/**
 * The publisher process: pg-boss queues, their workers, and the clocks that send them jobs. A clock
 * only sends (singleton keys: each piece of work is queued once per cluster however many publishers
 * run); the workers of every publisher share the work, with retries and backoff. Where minute
 * resolution suffices the clock is pg-boss's own schedule, kept in Postgres and fired once per
 * cluster (`boss.schedule`); what runs more often than once a minute keeps a timer per process
 * (node-cron), its sends folded by the singleton key:
 *   every minute   the hourly-file tick (`feeds-publish-tick`): due and dirty/failed hourly files →
 *                  `feeds-publish-hour`, one job per (zone, hour)            pg-boss schedule
 *   every 10 min   history maintenance: partitions ahead, DEFAULT-partition rows, retention
 *                  (`history-maintenance`, publisher/jobs/history.ts)         pg-boss schedule
 *                  and the purge of expired Idempotency-Key records (publisher/jobs/idempotency.ts)
 *   every 10 min   monthly reports (`feeds-monthly-reports`)                  pg-boss schedule
 *   every 30 s     rental housekeeping (auto-end idle rentals, photo windows), TOMP hold expiry
 *   every 15 s     the GBFS tick: one job per zone with work and per 2.2 scope due, shared by every
 *                  publisher (publisher/feeds/gbfs/queue.ts)
 *   every minute   the cities' Policy and Geography documents read (`city-policy`,
 *                  publisher/policy/read.ts), then what follows from them: a timer per process
 *                  at second 0, as the sub-minute clocks, because pg-boss fires its schedules up
 *                  to half a minute late and a city's change must reach the vehicles within one
 *                  read interval plus the commands (BENCH=policy)
 *   every 10 s     the city's rules in force, their areas, and the speed commands to the vehicles
 *                  (`city-speed`, publisher/policy/apply.ts and speed.ts)
 * The minute tasks also run once when a publisher with clocks starts (no wait for the backlog).
 * `feeds-publish-hour` also takes the operator console's republishes (lib/publication/queue.ts).
 * A publisher process serves its own Prometheus metrics (listenPublisherMetrics).
 */
import type { Server } from 'node:http';
import { PgBoss } from 'pg-boss';
import cron, { type ScheduledTask } from 'node-cron';
import type { Registry } from 'prom-client';
import type { AppContext } from '../lib/domain/context.js';
import { listenOrExit } from '../lib/core/listen.js';
import { buildMetricsListener, metricsUrl, registryWithout } from '../lib/core/metrics-listener.js';
import { API_ONLY_METRICS, registry } from '../lib/core/metrics.js';
import { parseHour } from '../lib/feeds/hours.js';
import { feedById, type HourlyFeed } from '../lib/feeds/publications.js';
import { publishSetWithMetrics } from './publish-metrics.js';
import { POLLING_SECONDS, sendNow, work, workEach, type Polling } from './work.js';
import { dueHourJobs } from './schedule.js';
import {
  ensureQueues,
  groupByHour,
  HOUR_QUEUE,
  HOUR_QUEUE_OPTIONS,
  PGBOSS_SCHEMA,
  QUEUE_DEFAULTS,
  sendHourSet,
  type HourSetJob,
} from '../lib/publication/queue.js';
import { GBFS_RUN_SECONDS } from '../lib/feeds/gbfs/files.js';
import { autoEndIdleRentals, expirePhotoWindows } from './jobs/rentals.js';
import { releaseExpiredClaims } from '../lib/domain/rentals/claims.js';
import { expirePendingBookings } from '../lib/domain/tomp/holds.js';
import { GBFS_QUEUES, startGbfsWorkers } from './feeds/gbfs/queue.js';
import { GbfsMemory } from './feeds/gbfs/memory.js';
import { maintainHistory } from './jobs/history.js';
import { purgeIdempotencyRecords } from './jobs/idempotency.js';
import { publishDueReports } from './reports.js';
import { CITY_RULES_SECONDS, cityPolicyRound, cityRulesRound } from './policy/index.js';
import { CITY_POLICY_QUEUE, CITY_POLICY_QUEUE_OPTIONS, cityPolicyJobOf } from '../lib/publication/policy-queue.js';

export const QUEUES = {
  hour: HOUR_QUEUE,
  tick: 'feeds-publish-tick',
  gbfs: GBFS_QUEUES.tick,
  gbfsZone: GBFS_QUEUES.zone,
  gbfsScope: GBFS_QUEUES.scope,
  rentals: 'housekeeping-rentals',
  tomp: 'housekeeping-tomp',
  history: 'history-maintenance',
  reports: 'feeds-monthly-reports',
  cityPolicy: CITY_POLICY_QUEUE,
  citySpeed: 'city-speed',
} as const;

/**
 * Hourly-file jobs a worker fetches at once: small, so that a publisher claims no more than it is
 * about to run (the other publishers take the rest), and above 1, so that a full fetch says a
 * backlog is there to burst through (work.ts).
 */
const HOUR_BATCH = 2;

export interface PublisherOptions {
  /** run the clocks (register the cluster's schedules, fire them, run the sub-minute timers); false = workers only (default true) */
  cron?: boolean;
  /** hourly-file workers in this process (default 2) */
  concurrency?: number;
  /** pg-boss polling interval when no NOTIFY can wake the workers (default 2 s; tests use less) */
  pollingIntervalSeconds?: number;
}

export interface Publisher {
  boss: PgBoss;
  /** one hourly-file tick by hand: enqueue what is due now (tests, ops) */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

/** Sends one job per due (zone, hour); pg-boss drops a send whose singleton key is already queued. */
export async function enqueueDue(ctx: AppContext, boss: PgBoss): Promise<number> {
  const jobs = groupByHour(await dueHourJobs(ctx));
  let sent = 0;
  for (const j of jobs) {
    // a file that becomes due while its hour's job is still queued is picked up by a later tick
    if (await sendHourSet(boss, j)) sent++;
  }
  return sent;
}

export async function startPublisher(ctx: AppContext, opts: PublisherOptions = {}): Promise<Publisher> {
  const log = ctx.log.child({ component: 'publisher' });
  const clocks = opts.cron ?? true;
  // schedule: a publisher without clocks neither registers nor fires the cluster's schedules;
  // useListenNotify: one connection of the pool listens, so that a job sent by any process wakes
  // this process's workers of its queue at once (work.ts)
  const boss = new PgBoss({
    connectionString: ctx.config.databaseUrl,
    schema: PGBOSS_SCHEMA,
    max: 4,
    application_name: 'publisher',
    schedule: clocks,
    useListenNotify: true,
  });
  // background loops never throw: they report here
  boss.on('error', (err) => log.error({ err: err.message }, 'pg-boss error'));
  // pg-boss's own observations (slow statements, backlogs); a listener it could not open means the
  // workers are woken by their poll alone, which the operator should know of
  boss.on('warning', (w) => {
    const type = (w.data as { type?: string }).type;
    log[type === 'listen_notify_unavailable' ? 'warn' : 'info']({ ...w.data, warning: w.message }, 'pg-boss warning');
  });
  await boss.start();

  // the options are lib/publication/queue.ts's (the API sends to this queue too); updateQueue moves
  // databases created with older options
  // the sweeps are idempotent and safe to run concurrently, so 'short' too: a crashed worker's job
  // must not pause them until it expires; one lock for the cluster's queue creation (ensureQueues)
  const sweeps = [QUEUES.tick, QUEUES.gbfs, QUEUES.gbfsZone, QUEUES.gbfsScope, QUEUES.rentals, QUEUES.tomp, QUEUES.history, QUEUES.reports, QUEUES.citySpeed];
  await ensureQueues(ctx.db, boss, [
    HOUR_QUEUE_OPTIONS,
    CITY_POLICY_QUEUE_OPTIONS,
    ...sweeps.map((name) => ({ ...QUEUE_DEFAULTS, name, policy: 'short', retryLimit: 0, expireInSeconds: 5 * 60 }) as const),
  ]);

  // every queue notifies: a send of any process wakes the workers; batches burst while full (work.ts)
  const polling: Polling = { pollingIntervalSeconds: opts.pollingIntervalSeconds ?? POLLING_SECONDS };
  const publishJob = async (job: { data: HourSetJob }) => {
    const data = job.data;
    const hour = parseHour(data.hour);
    const feeds = (data.feedIds ?? []).map(feedById);
    if (!hour || !feeds.length || feeds.some((f) => !f)) {
      log.error({ job: data }, 'malformed publish job dropped');
      return;
    }
    const results = await publishSetWithMetrics(ctx, data.zone, hour, feeds as HourlyFeed[], { force: data.force === true });
    const failed = results.filter((r) => r.outcome === 'failed');
    // a throw fails the job: pg-boss retries it with backoff (the failed rows already say so);
    // the files of the hour that did publish come out unchanged on the retry
    if (failed.length) throw new Error(`${failed.length} of ${results.length} files failed: ${failed.map((f) => f.feed).join(', ')}`);
  };
  // HOUR_BATCH jobs per fetch, run in turn and failed one by one, so that a worker bursts through a
  // backlog (a full batch fetches again at once) while a failed (zone, hour) holds back no other
  for (let i = 0; i < Math.max(1, opts.concurrency ?? 2); i++) {
    await workEach<HourSetJob>(boss, QUEUES.hour, { ...polling, batchSize: HOUR_BATCH }, publishJob, (job, err) =>
      log.warn({ err: err.message, zone: job.data.zone, hour: job.data.hour }, 'publish job failed: pg-boss retries it'),
    );
  }

  // the sweeps: each queue runs its functions in order, one job at a time per cluster (singleton key)
  const sweep = (name: string, fns: Array<(c: AppContext) => Promise<unknown>>) =>
    work(boss, name, polling, async () => {
      for (const fn of fns) await fn(ctx);
    });
  await sweep(QUEUES.rentals, [autoEndIdleRentals, expirePhotoWindows, releaseExpiredClaims]);
  await sweep(QUEUES.tomp, [expirePendingBookings]);
  // what the GBFS builds keep between jobs, for this context's database (memory.ts)
  await startGbfsWorkers(ctx, boss, polling, new GbfsMemory());
  await sweep(QUEUES.history, [maintainHistory, purgeIdempotencyRecords]);
  await sweep(QUEUES.reports, [publishDueReports]);
  // a read that changed rules applies them at once: the city's change reaches the vehicles in the
  // same job, not at the next 10 s tick
  await work(boss, QUEUES.cityPolicy, polling, async (jobs) => {
    for (const job of jobs) await cityPolicyRound(ctx, cityPolicyJobOf(job.data));
  });
  await sweep(QUEUES.citySpeed, [cityRulesRound]);

  const tick = () => enqueueDue(ctx, boss);
  await work(boss, QUEUES.tick, polling, async () => {
    await tick();
  });

  const tasks: ScheduledTask[] = [];
  if (clocks) {
    const every = (expr: string, name: string, fn: () => Promise<unknown>) => {
      tasks.push(
        cron.schedule(
          expr,
          async () => {
            try {
              await fn();
            } catch (err) {
              log.warn({ err: (err as Error).message, task: name }, 'cron enqueue failed');
            }
          },
          { name: `${name}-${Math.random().toString(36).slice(2, 8)}`, noOverlap: true },
        ),
      );
    };
    every('*/30 * * * * *', 'rentals', () => sendNow(boss, QUEUES.rentals, 'rentals'));
    every('*/30 * * * * *', 'tomp', () => sendNow(boss, QUEUES.tomp, 'tomp'));
    every(`*/${GBFS_RUN_SECONDS} * * * * *`, 'gbfs', () => sendNow(boss, QUEUES.gbfs, 'gbfs'));
    every(`*/${CITY_RULES_SECONDS} * * * * *`, 'city-speed', () => sendNow(boss, QUEUES.citySpeed, 'city-speed'));
    every('0 * * * * *', 'city-policy', () => sendNow(boss, QUEUES.cityPolicy, 'city-policy'));
    // one row per queue in pgboss.schedule (every publisher registering it writes the same row), fired
    // once per cluster per slot: the timekeepers of the publishers claim each check in Postgres
    const minutely = { tick: '* * * * *', history: '*/10 * * * *', reports: '*/10 * * * *' } as const;
    for (const [queue, expr] of Object.entries(minutely) as Array<[keyof typeof minutely, string]>) {
      await boss.schedule(QUEUES[queue], expr, {}, { singletonKey: queue });
    }
    void sendNow(boss, QUEUES.cityPolicy, 'city-policy').catch((err) => log.warn({ err: (err as Error).message }, 'initial enqueue failed'));
    // at start, without waiting for the first slot: partitions for today exist before the first
    // write, and a backlog starts draining at once
    for (const queue of Object.keys(minutely) as Array<keyof typeof minutely>) {
      void sendNow(boss, QUEUES[queue], queue).catch((err) => log.warn({ err: (err as Error).message, queue }, 'initial enqueue failed'));
    }
  }
  log.info({ concurrency: opts.concurrency ?? 2, cron: clocks }, 'publisher started');

  return {
    boss,
    tick,
    async stop() {
      for (const t of tasks) await t.destroy();
      await boss.stop({ graceful: true, timeout: ctx.config.shutdownTimeoutMs });
    },
  };
}

/**
 * What a publisher process's /metrics serves: this process's registry without API_ONLY_METRICS. The
 * default process metrics (RSS, CPU, heap, event-loop lag); what this process counts (the hourly
 * files it published: feed_publish_duration_seconds, feed_publish_failures_total; store_errors_total;
 * rentals_ended_total of the idle rentals its sweep ended); and the cluster's gauges read from
 * Postgres at scrape time (publish lag, dirty hours, queue depth and failed jobs, history tables,
 * replica lag).
 */
export function publisherRegistry(): Registry {
  return registryWithout(registry, API_ONLY_METRICS);
}

/**
 * The publisher process's metrics listener on METRICS_HOST:PUBLISHER_METRICS_PORT (loopback by
 * default), for the entry points (bin/publisher.ts, bin/run.ts's publisher child): a port taken ends
 * the process with one line naming the variable. Returns the server and its /metrics URL (the port
 * the OS picked when configured 0).
 */
export async function listenPublisherMetrics(ctx: AppContext): Promise<{ server: Server; url: string }> {
  const { host, publisherPort } = ctx.config.metrics;
  const app = buildMetricsListener(publisherRegistry(), ctx.log).callback();
  const server = await listenOrExit((req, res) => void app(req, res), publisherPort, host, 'PUBLISHER_METRICS_PORT', ctx.config.http);
  return { server, url: metricsUrl(server) };
}
