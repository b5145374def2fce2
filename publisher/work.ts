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
 * - **Counted.** Every job a handler took is one `jobs_run_total{queue, outcome}` (lib/metrics.ts),
 *   done or failed, so each process's /metrics shows what it ran however many publishers share the
 *   queues.
 */
import type PgBoss from 'pg-boss';
import { metrics } from '../lib/metrics.js';

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
  return worker.id;
}
