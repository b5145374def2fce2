/**
 * The queue of the cities' Policy reads (pg-boss queue `city-policy`): the publisher's clock sends the
 * minute's read of every source due (an empty job), and the operator console a read by hand of one
 * zone's source, now and whatever its last read (`{zone, force: true}`, what `ops policy read` does in
 * its own process). Name, options and job shape are declared here once, for both processes; the
 * publisher's worker (publisher/index.ts) runs publisher/policy/index.ts cityPolicyRound with the
 * job's data.
 */
import type { AppContext } from '../domain/context.js';
import { ensureQueues, publicationQueue, QUEUE_DEFAULTS } from './queue.js';

export const CITY_POLICY_QUEUE = 'city-policy';

/**
 * short: one queued job per singleton key (the minute's job has its own, a zone's read by hand
 * `read:{zone}`), any number running; a read is not retried (the next minute reads again).
 */
export const CITY_POLICY_QUEUE_OPTIONS = {
  ...QUEUE_DEFAULTS,
  name: CITY_POLICY_QUEUE,
  policy: 'short',
  retryLimit: 0,
  expireInSeconds: 5 * 60,
} as const;

/** What a job asks for: every source due (none given), or one zone's read now. */
export interface CityPolicyJob {
  zone?: string;
  force?: boolean;
}

/** A job's data as the worker takes it: anything but the shape above reads what is due. */
export function cityPolicyJobOf(data: unknown): CityPolicyJob {
  const d = (data ?? {}) as Record<string, unknown>;
  return typeof d.zone === 'string' ? { zone: d.zone, force: d.force === true } : {};
}

/**
 * Queues a read of the zone's source now, for the first publisher free. Asking again while one
 * waits queues nothing more: the answer is then null (the waiting read is the one asked for).
 */
export async function queuePolicyRead(ctx: Pick<AppContext, 'db' | 'log'>, zone: string): Promise<string | null> {
  const boss = await publicationQueue(ctx);
  // the queue exists once a publisher started; a read asked for before waits for the first one
  await ensureQueues(ctx.db, boss, [CITY_POLICY_QUEUE_OPTIONS], false);
  const job: CityPolicyJob = { zone, force: true };
  return boss.send(CITY_POLICY_QUEUE, job, { singletonKey: `read:${zone}` });
}
