/**
 * The one lock of every publication: one writer per lock unit across every process. A unit is the
 * object key of what a writer publishes alone (an hourly file, a monthly report), or the name of a
 * family of objects one build publishes together (`gbfs/zone/{id}`, `gbfs/scope/{id}`: a GBFS zone
 * or 2.2 scope and every file of it; object keys start with `gbfs/{version}/`, so the two never meet).
 *
 * The shape is the same for all of them: session advisory locks on the writer's own connection,
 * hashed by one statement (PublicationLock), taken in sorted order so that two writers of
 * overlapping sets cannot deadlock, and held across transactions (an hourly file claims its row, then
 * reads its snapshot, then records the result). A writer that would rather leave a busy unit to the
 * process building it (GBFS) tries instead of waiting. A connection whose state is unknown is
 * closed instead of unlocked: Postgres drops its locks with it.
 */
import type pg from 'pg';
import type { AppContext } from '../../lib/domain/context.js';
import { classify, onConnection, type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';

/** The lock unit of a GBFS build: a zone's files, or a 2.2 client scope's. */
export const gbfsUnit = (kind: 'zone' | 'scope', id: string): string => `gbfs/${kind}/${id}`;

/** The connection holding a writer's locks. */
export interface HeldLock {
  /** named, timed statements on the locking connection */
  readonly conn: Queryable & { readonly client: pg.PoolClient; stream: ReturnType<typeof onConnection>['stream'] };
  /** `fn` in a transaction on that connection */
  tx<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** the connection is broken or mid-statement: close it rather than unlock (its locks go with it) */
  discard(): void;
}

export type Locked<T> = { locked: true; value: T } | { locked: false };
/** What tryPublicationLocks took: the units held while `fn` ran (none: `fn` did not run). */
export type LockedSome<T> = { units: string[]; value: T } | { units: []; value?: undefined };

/** Runs `fn` holding the locks of `units`, waiting for them. Errors of `fn` are thrown after the locks are released. */
export async function withPublicationLock<T>(ctx: Pick<AppContext, 'db' | 'log'>, units: readonly string[], fn: (held: HeldLock) => Promise<T>): Promise<T> {
  const r = await hold(ctx, [...new Set(units)].sort(), true, fn);
  if (!r.units.length) throw new Error('a waiting lock came back untaken');
  return r.value as T;
}

/** Runs `fn` holding the lock of `unit` if no other process holds it; `{ locked: false }` (fn not run) if one does. */
export async function tryPublicationLock<T>(ctx: Pick<AppContext, 'db' | 'log'>, unit: string, fn: (held: HeldLock) => Promise<T>): Promise<Locked<T>> {
  const r = await hold(ctx, [unit], false, fn);
  return r.units.length ? { locked: true, value: r.value as T } : { locked: false };
}

/**
 * Runs `fn` once, holding those of `units` that no other process holds (taken in one statement,
 * given to `fn`); `fn` does not run when every one is held elsewhere. A batch of GBFS zone jobs is
 * built so, in one transaction (publisher/feeds/gbfs/zone.ts).
 */
export function tryPublicationLocks<T>(
  ctx: Pick<AppContext, 'db' | 'log'>,
  units: readonly string[],
  fn: (held: HeldLock, units: readonly string[]) => Promise<T>,
): Promise<LockedSome<T>> {
  return hold(ctx, [...new Set(units)].sort(), false, fn);
}

async function hold<T>(
  ctx: Pick<AppContext, 'db' | 'log'>,
  sorted: readonly string[],
  wait: boolean,
  fn: (held: HeldLock, units: readonly string[]) => Promise<T>,
): Promise<LockedSome<T>> {
  let client: pg.PoolClient;
  try {
    client = await ctx.db.pool.connect();
  } catch (err) {
    throw classify(err, 'connect');
  }
  const conn = onConnection(client, ctx.log);
  let discard = false;
  /** the lock statement answered (a failed one may have left a lock half taken) */
  let answered = false;
  /** the units held */
  let units: string[] = [];
  try {
    if (wait) {
      await conn.query(sql('PublicationLock'), [sorted]);
      units = [...sorted];
    } else {
      // a statement that fails here may have taken some: the connection is then closed (below)
      units = (await conn.many(sql('PublicationTryLocks'), [sorted])).map((r) => r.unit);
    }
    answered = true;
    if (!units.length) return { units: [] };
    const held: HeldLock = {
      conn,
      discard: () => void (discard = true),
      async tx(body) {
        await conn.query('BEGIN');
        try {
          const out = await body(conn);
          await conn.query('COMMIT');
          return out;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => (discard = true));
          throw err;
        }
      },
    };
    return { units, value: await fn(held, units) };
  } catch (err) {
    // a statement that failed on the lock itself may have left it half taken
    if (!answered) discard = true;
    throw err;
  } finally {
    if (units.length && !discard) {
      try {
        await conn.query(sql('PublicationUnlock'), [units]);
      } catch {
        discard = true;
      }
    }
    client.release(discard ? true : undefined);
  }
}
