/**
 * The queue of hourly-file work (pg-boss queue `feeds-publish-hour`): what the publisher's tick and
 * the operator console send, and what the publisher's workers run. Its name, options and job shape
 * are declared here once, for both processes; they meet only in Postgres (the pgboss schema).
 *
 * One job publishes files of one (zone, hour) together (publishHourSet reads each source row once
 * for all of them). The tick's jobs have the singleton key `{zone}:{hour}`: at most one queued per
 * hour, whichever publisher sent it. A republish asked for by the console rewrites its files even
 * when their content is unchanged (`force`), under a key of its own per (zone, hour, files), so it is
 * never folded into a tick's job that would not rewrite them, and asking again while it waits queues
 * nothing more.
 */
import { PgBoss, type Queue } from 'pg-boss';
import type { FromSchema } from 'json-schema-to-ts';
import type { AppContext } from '../domain/context.js';
import type { Db } from '../core/db.js';
import { floorHour, formatHour, HOUR_MS } from '../feeds/hours.js';
import { TIME_HOUR_SCHEMA } from '../../schemas/common.js';
import { HOURLY_FEEDS, selectFeeds } from '../feeds/publications.js';
import { resolveZones } from './status.js';
import { sql } from '../core/sql/typed.js';

/**
 * What every queue of the platform is created with: `notify`, so that a job sent by any process (a
 * publisher's clock, the console's republish through the API) wakes the workers of every publisher
 * at once through LISTEN/NOTIFY (publisher/work.ts).
 */
export const QUEUE_DEFAULTS = { notify: true } as const;

/** pg-boss's schema in our database. */
export const PGBOSS_SCHEMA = 'pgboss';

export const HOUR_QUEUE = 'feeds-publish-hour';

/**
 * short: at most one queued job per singleton key, any number running. Not 'stately' (one running
 * per key): a publisher killed mid-job leaves its job 'active' until it expires (30 min), and under
 * stately the re-enqueued job of that file then fails pg-boss's fetch with a unique violation, which
 * stalls the whole queue behind it (test/faults-publisher-kill.test.ts). Two running publications
 * of one file are harmless: the publication lock serialises them, and the second finds the content
 * unchanged.
 */
export const HOUR_QUEUE_OPTIONS = {
  ...QUEUE_DEFAULTS,
  name: HOUR_QUEUE,
  policy: 'short',
  retryLimit: 6,
  retryDelay: 15,
  retryBackoff: true,
  expireInSeconds: 30 * 60,
} as const;

/**
 * Creates the queues (and, with `update`, moves their options to these) under one cluster-wide
 * advisory lock: pg-boss's create_queue deadlocks (40P01) when two processes create the same queues
 * at once, which killed one of two publishers starting together (test/multi-process.test.ts). The
 * lock is a session lock on a connection of our own pool; pg-boss runs its statements on its own.
 */
export async function ensureQueues(db: Db, boss: PgBoss, queues: readonly Queue[], update = true): Promise<void> {
  const client = await db.pool.connect();
  let broken = false;
  try {
    await client.query(sql('PgBossQueuesLock').text);
    for (const queue of queues) {
      await boss.createQueue(queue.name, queue);
      // a queue's name and policy are fixed once it exists (pg-boss refuses to update them)
      const { name, policy: _policy, ...options } = queue;
      if (update) await boss.updateQueue(name, options);
    }
    // the republishes migration 000240 kept from a pg-boss 10 schema, sent again once
    if (queues.some((q) => q.name === HOUR_QUEUE)) {
      // each row is deleted by the one process that reads it, whichever holds the lock
      for (const { data } of await db.many(sql('PgBossCarriedOverTake'), [HOUR_QUEUE])) await sendHourSet(boss, data as unknown as HourSetJob);
    }
  } finally {
    // a lock we could not release must not go back to the pool with the connection
    await client.query(sql('PgBossQueuesUnlock').text).catch(() => (broken = true));
    client.release(broken);
  }
}

/** One job: files of one (zone, hour). */
export interface HourSetJob {
  zone: string;
  /** `YYYY-MM-DDTHH` */
  hour: string;
  feedIds: string[];
  /** every file of the set is catch-up history (queued behind the current hours) */
  catchup?: boolean;
  /** write the objects even when their content is unchanged (a republish) */
  force?: boolean;
}

/** One file due (publisher/schedule.ts); grouped into jobs by `groupByHour`. */
export interface HourJob {
  feedId: string;
  zone: string;
  /** `YYYY-MM-DDTHH` */
  hour: string;
  /** history older than the look-back: queued behind the current hours */
  catchup?: boolean;
}

function singletonKey(j: { zone: string; hour: string }): string {
  return `${j.zone}:${j.hour}`;
}

function republishKey(j: HourSetJob): string {
  return `republish:${singletonKey(j)}:${j.feedIds.join(',')}`;
}

/** Groups per-file jobs into one job per (zone, hour), in the order first seen. */
export function groupByHour(jobs: readonly HourJob[]): HourSetJob[] {
  const sets = new Map<string, HourSetJob>();
  for (const j of jobs) {
    const key = singletonKey(j);
    const set = sets.get(key) ?? { zone: j.zone, hour: j.hour, feedIds: [], catchup: true };
    if (!set.feedIds.includes(j.feedId)) set.feedIds.push(j.feedId);
    if (!j.catchup) set.catchup = false;
    sets.set(key, set);
  }
  return [...sets.values()];
}

/**
 * Sends one job; the id, or null when pg-boss dropped it because a job of the same singleton key
 * is queued. Current hours and republishes go before catch-up history: a zone catching up a year
 * must not hold them back.
 */
export async function sendHourSet(boss: PgBoss, j: HourSetJob): Promise<string | null> {
  return boss.send(HOUR_QUEUE, j, { singletonKey: j.force ? republishKey(j) : singletonKey(j), priority: j.catchup ? 0 : 1 });
}

const senders = new WeakMap<Db, Promise<PgBoss>>();

/**
 * A pg-boss client of this process that only sends (no workers, no maintenance, no schedules),
 * through the process's own pool: what the API needs to hand work to the publishers. It installs
 * pg-boss's schema and the queue if no publisher has yet (both idempotent), so a republish asked
 * for before any publisher started waits in the queue for the first one.
 */
export function publicationQueue(ctx: Pick<AppContext, 'db' | 'log'>): Promise<PgBoss> {
  let p = senders.get(ctx.db);
  if (!p) {
    p = (async () => {
      const boss = new PgBoss({
        db: { executeSql: (text: string, values?: unknown[]) => ctx.db.pool.query(text, values) },
        schema: PGBOSS_SCHEMA,
        supervise: false,
        schedule: false,
        migrate: true,
      });
      boss.on('error', (err: Error) => ctx.log.error({ err: err.message }, 'pg-boss error'));
      await boss.start();
      await ensureQueues(ctx.db, boss, [HOUR_QUEUE_OPTIONS], false);
      return boss;
    })();
    // a failed start (the database down) is tried again by the next caller
    p.catch(() => senders.delete(ctx.db));
    senders.set(ctx.db, p);
  }
  return p;
}

const feedIds = { type: 'array', items: { type: 'string' }, minItems: 1 } as const;

/** What a republish request queued: the console's answer (POST /console/api/republish, 202). */
export const RepublishQueuedSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['zone', 'jobs', 'skipped'],
  properties: {
    zone: { type: 'string' },
    jobs: {
      description: 'one job per hour, rewriting its files; a publisher runs it within seconds (the publishing table shows the result)',
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['hour', 'feeds', 'id'],
        properties: {
          hour: TIME_HOUR_SCHEMA,
          feeds: feedIds,
          id: { description: 'the pg-boss job id; null when the same republish is already queued', type: ['string', 'null'] },
        },
      },
    },
    skipped: {
      description: 'cells that name no file to publish: an hour that has not closed yet, or before the zone existed',
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['feed', 'hour', 'reason'],
        properties: { feed: { type: 'string' }, hour: TIME_HOUR_SCHEMA, reason: { type: 'string' } },
      },
    },
  },
} as const;
export type RepublishQueued = FromSchema<typeof RepublishQueuedSchema>;

/**
 * Queues the republish of chosen (feed, hour) cells of one zone: one forced job per hour. Unknown
 * zones (OpsError) and feeds (UnknownFeedError) are refused before anything is queued; a cell whose
 * hour has no file to publish is reported as skipped. `feed` takes what `make republish` takes (an
 * id or a prefix).
 */
export async function queueRepublish(
  ctx: AppContext,
  boss: PgBoss,
  zoneId: string,
  cells: ReadonlyArray<{ feed: string; hour: Date }>,
): Promise<RepublishQueued> {
  const [zone] = await resolveZones(ctx, [zoneId]);
  const chosen = cells.map((c) => ({ hour: floorHour(c.hour), feeds: selectFeeds([c.feed]) }));
  const lastClosed = floorHour(new Date(ctx.clock.now().getTime() - HOUR_MS));
  const firstHour = floorHour(zone.created_at);
  const skipped: RepublishQueued['skipped'] = [];
  const byHour = new Map<string, Set<string>>();
  for (const c of chosen) {
    const hour = formatHour(c.hour);
    const reason = c.hour > lastClosed ? 'the hour has not closed yet' : c.hour < firstHour ? `zone ${zoneId} did not exist yet` : undefined;
    for (const f of c.feeds) {
      if (reason) skipped.push({ feed: f.id, hour, reason });
      else byHour.set(hour, (byHour.get(hour) ?? new Set()).add(f.id));
    }
  }
  const jobs: RepublishQueued['jobs'] = [];
  for (const [hour, ids] of [...byHour].sort(([a], [b]) => a.localeCompare(b))) {
    // catalogue order: the same cells in another order are the same job (and singleton key)
    const feeds = HOURLY_FEEDS.filter((f) => ids.has(f.id)).map((f) => f.id);
    jobs.push({ hour, feeds, id: await sendHourSet(boss, { zone: zoneId, hour, feedIds: feeds, force: true }) });
  }
  return { zone: zoneId, jobs, skipped };
}
