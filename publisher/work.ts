/**
 * pg-boss workers of a publisher process, counted: every job a handler took is one
 * `jobs_run_total{queue, outcome}` (lib/metrics.ts), done or failed, so each process's /metrics
 * shows what it ran however many publishers share the queues.
 */
import type PgBoss from 'pg-boss';
import { metrics } from '../lib/metrics.js';

/** `boss.work(name, options, handler)`, with the jobs of each call counted by outcome. */
export function work<T extends object>(
  boss: PgBoss,
  name: string,
  options: PgBoss.WorkOptions,
  handler: (jobs: Array<PgBoss.Job<T>>) => Promise<void>,
): Promise<string> {
  return boss.work<T>(name, options, async (jobs) => {
    try {
      await handler(jobs);
    } catch (err) {
      metrics.jobsRun.inc({ queue: name, outcome: 'failed' }, jobs.length);
      throw err;
    }
    metrics.jobsRun.inc({ queue: name, outcome: 'done' }, jobs.length);
  });
}
