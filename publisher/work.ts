/**
 * pg-boss workers of a publisher process:
 *
 * - **Woken by any process's sends.** Every queue of the platform is created with `notify`
 *   (lib/publication/queue.ts QUEUE_DEFAULTS), and each publisher's pg-boss listens
 *   (`useListenNotify`, publisher/index.ts): a job sent by any process (another publisher's clock,
 *   the console's republish through the API, a GBFS zone job's scope jobs) is a NOTIFY in its
 *   transaction, and it wakes the workers of that queue in every publisher at once. Polling stays
 *   as pg-boss's backstop: every NOTIFY_BACKSTOP_SECONDS while the listener is up, every
 *   POLLING_SECONDS when it is not (a dropped connection, a pooler in transaction mode). A job sent
 *   to start later is not there yet when its NOTIFY wakes the workers: the GBFS scope workers, whose
 *   jobs start 3 s after their send, poll at POLLING_SECONDS regardless (gbfs/queue.ts), and a
 *   retried job (after its backoff) waits at most the backstop.
 * - **Bursting through a backlog.** A worker that fetches batches (`batchSize` > 1) fetches again
 *   at once while its fetches come back full (`burstWhenBatchFull`): the day of 100 zones the
 *   catch-up queues is drained at the rate the jobs run, not one batch per poll.
 * - **Counted.** Every job a handler took is one `jobs_run_total{queue, outcome}`
 *   (lib/core/metrics.ts), done or failed, so each process's /metrics shows what it ran however many
 *   publishers share the queues.
 */
import type { Job, JobResult, PgBoss, WorkOptions } from 'pg-boss';
import { metrics } from '../lib/core/metrics.js';

/** How long a worker waits after a fetch when no NOTIFY can wake it (pg-boss's default, and ours). */
export const POLLING_SECONDS = 2;

/** The backstop poll while NOTIFY wakes the workers: only a lost notification waits this long. */
const NOTIFY_BACKSTOP_SECONDS = 30;

/** How a worker polls: the base interval (tests shorten it), the backstop beside NOTIFY. */
export interface Polling {
  pollingIntervalSeconds: number;
  notifyPollingIntervalSeconds?: number;
}

/** Sends a queue's one pending job (`singletonKey`: none is added while one waits); its NOTIFY wakes the workers. */
export async function sendNow(boss: PgBoss, queue: string, singletonKey: string): Promise<void> {
  await boss.send(queue, {}, { singletonKey });
}

type Options = Pick<WorkOptions, 'batchSize'> & Polling;

const withBurst = (options: Options): WorkOptions => ({
  notifyPollingIntervalSeconds: NOTIFY_BACKSTOP_SECONDS,
  ...options,
  // a full batch says there is more: fetch again without waiting (ignored by pg-boss at batchSize 1)
  burstWhenBatchFull: (options.batchSize ?? 1) > 1,
});

/** `boss.work(name, options, handler)`: a batch handler that succeeds or fails whole, its jobs counted by outcome. */
export async function work<T extends object>(boss: PgBoss, name: string, options: Options, handler: (jobs: Array<Job<T>>) => Promise<void>): Promise<string> {
  return boss.work<T>(name, withBurst(options), async (jobs) => {
    try {
      await handler(jobs);
    } catch (err) {
      metrics.jobsRun.inc({ queue: name, outcome: 'failed' }, jobs.length);
      throw err;
    }
    metrics.jobsRun.inc({ queue: name, outcome: 'done' }, jobs.length);
  });
}

/**
 * `boss.work` for jobs that succeed or fail one by one: `handler` runs each job of a batch in turn,
 * and a job whose handler throws is failed alone (pg-boss retries it by its queue's policy) while
 * the others of its batch complete.
 */
export async function workEach<T extends object>(
  boss: PgBoss,
  name: string,
  options: Options,
  handler: (job: Job<T>) => Promise<void>,
  onError: (job: Job<T>, err: Error) => void,
): Promise<string> {
  return boss.work<T, unknown, WorkOptions & { perJobResults: true }>(name, { ...withBurst(options), perJobResults: true }, async (jobs) => {
    const results: JobResult[] = [];
    for (const job of jobs) {
      try {
        await handler(job);
        metrics.jobsRun.inc({ queue: name, outcome: 'done' });
        results.push({ id: job.id, status: 'completed' });
      } catch (caught) {
        const err = caught instanceof Error ? caught : new Error(String(caught));
        metrics.jobsRun.inc({ queue: name, outcome: 'failed' });
        onError(job, err);
        results.push({ id: job.id, status: 'failed', output: { message: err.message } });
      }
    }
    return results;
  });
}
