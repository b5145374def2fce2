/**
 * pg-boss workers of a publisher process:
 *
 * - **Drained, not polled.** pg-boss 10's worker loop waits its polling interval after every fetch,
 *   jobs or not (node_modules/pg-boss/src/worker.js), so a worker took at most batchSize jobs per
 *   interval however short they were: the hourly-file queue ran at ~4 (zone, hour) jobs a second
 *   on a publisher (2 workers, 0.5 s), and a day of 100 zones took 11 minutes to catch up while the
 *   CPU idled (BENCH=breadth). A worker whose fetch found jobs now fetches again at once
 *   (`notifyWorker`, pg-boss's own wake-up, which skips that wait); only an empty fetch waits the
 *   interval, as graphile-worker does.
 * - **Woken by this process's sends.** An empty fetch is a statement on Postgres for nothing, and
 *   a publisher has a dozen workers: at the former 0.5 s interval an idle publisher made 24 fetches
 *   a second, a third of its CPU with nothing to do (an empty database). Workers now poll every
 *   POLLING_SECONDS, and the jobs this process sends itself (the GBFS tick's zone jobs, the cron's
 *   sweeps, the hourly tick's files) wake this process's workers of that queue at once (`wake`); a
 *   job another process sent, or one sent to start later (a GBFS scope job, 3 s), waits at most one
 *   interval more.
 * - **Counted.** Every job a handler took is one `jobs_run_total{queue, outcome}` (lib/core/metrics.ts),
 *   done or failed, so each process's /metrics shows what it ran however many publishers share the
 *   queues.
 */
import type PgBoss from 'pg-boss';
import { metrics } from '../lib/core/metrics.js';

/** How long a worker waits after an empty fetch (a publisher's default; tests may set less). */
export const POLLING_SECONDS = 2;

/** The workers of each queue in this process, per pg-boss instance. */
const workers = new WeakMap<PgBoss, Map<string, string[]>>();

/** Wakes this process's workers of `queue`: they fetch now instead of after their polling wait. */
export function wake(boss: PgBoss, queue: string): void {
  for (const id of workers.get(boss)?.get(queue) ?? []) boss.notifyWorker(id);
}

/** Sends a queue's one pending job (`singletonKey`: none is added while one waits) and wakes this process's workers of it. */
export async function sendNow(boss: PgBoss, queue: string, singletonKey: string): Promise<void> {
  await boss.send(queue, {}, { singletonKey });
  wake(boss, queue);
}

/** `boss.work(name, options, handler)`: drained while it finds jobs, each call's jobs counted by outcome. */
export async function work<T extends object>(
  boss: PgBoss,
  name: string,
  options: PgBoss.WorkOptions,
  handler: (jobs: Array<PgBoss.Job<T>>) => Promise<void>,
): Promise<string> {
  // the worker's id is known once work() resolves; its first fetch may come before (then it waits once)
  const worker: { id?: string } = {};
  worker.id = await boss.work<T>(name, options, async (jobs) => {
    try {
      await handler(jobs);
    } catch (err) {
      metrics.jobsRun.inc({ queue: name, outcome: 'failed' }, jobs.length);
      throw err;
    } finally {
      // there may be more: fetch again without the polling wait (pg-boss resets the flag each loop)
      if (worker.id !== undefined && jobs.length) boss.notifyWorker(worker.id);
    }
    metrics.jobsRun.inc({ queue: name, outcome: 'done' }, jobs.length);
  });
  let byQueue = workers.get(boss);
  if (!byQueue) workers.set(boss, (byQueue = new Map<string, string[]>()));
  byQueue.set(name, [...(byQueue.get(name) ?? []), worker.id]);
  return worker.id;
}
