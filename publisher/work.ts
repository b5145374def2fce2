/**
 * pg-boss workers of a publisher process:
 *
 * - **Woken by any process's sends.** Every queue of the platform is created with `notify`
 *   (lib/publication/queue.ts QUEUE_DEFAULTS), and each publisher's pg-boss listens
 *   (`useListenNotify`, publisher/index.ts): a job sent by any process (another publisher's clock,
 *   the console's republish through the API, a GBFS zone job's scope jobs) is a NOTIFY in its
 *   transaction, and it wakes the workers of that queue in every publisher at once. Polling stays,
 *   every POLLING_SECONDS whether the listener is up or not (pg-boss would relax it to 30 s while it
 *   is): a job sent to start later (a GBFS scope job, 3 s) or retried after its backoff is not there
 *   when its NOTIFY wakes the workers, and nothing wakes them while the listener reconnects (its
 *   heartbeat can time out on a saturated machine): with the 30 s poll, BENCH=breadth once saw every
 *   GBFS status file of 100 idle zones reach 32 s, past its 30 s ttl (pg-boss 10's 2 s poll: 15 s).
 * - **Bursting through a backlog.** A worker that fetches batches (`batchSize` > 1) fetches again
 *   at once while its fetches come back full (`burstWhenBatchFull`): the day of 100 zones the
 *   catch-up queues is drained at the rate the jobs run, not one batch per poll.
 * - **Counted.** Every job a handler took is one `jobs_run_total{queue, outcome}`
 *   (lib/core/metrics.ts), done or failed, so each process's /metrics shows what it ran however many
 *   publishers share the queues.
 */
import type { Job, JobResult, PgBoss, WorkOptions } from 'pg-boss';
import { metrics } from '../lib/core/metrics.js';

/** How long a worker waits after a fetch unless a NOTIFY or a full batch says there is more (pg-boss's default). */
export const POLLING_SECONDS = 2;

/** How often a worker polls, NOTIFY or not (tests shorten it). */
export interface Polling {
  pollingIntervalSeconds: number;
}

/** Sends a queue's one pending job (`singletonKey`: none is added while one waits); its NOTIFY wakes the workers. */
export async function sendNow(boss: PgBoss, queue: string, singletonKey: string): Promise<void> {
  await boss.send(queue, {}, { singletonKey });
}

type Options = Pick<WorkOptions, 'batchSize'> & Polling;

const withBurst = (options: Options): WorkOptions => ({
  // the same poll with NOTIFY as without (see above)
  notifyPollingIntervalSeconds: options.pollingIntervalSeconds,
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
