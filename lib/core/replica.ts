/**
 * Reads on a streaming replica (DATABASE_REPLICA_URL, `db.replica`) that never contradict the
 * primary. A replica replays the primary's WAL a moment behind it, so each kind of read states what
 * it must include, and goes to the primary when the replica cannot promise it:
 *
 *   readOnReplica(db, read),        may lag a moment (zone geometry, tariffs, realtime feeds): the
 *   streamOnReplica(db, open, …)    replica, or the primary while the replica is unreachable
 *   lookupOnReplica(db, query, …)   one row: a row the replica lacks is looked up on the primary, so
 *                                   a thing created a moment ago is never answered "not found"
 *   readCaughtUp(db, waitMs, read)  must show every write its caller could have seen (a vehicle list
 *                                   after a rental start): the replica once it has replayed what the
 *                                   primary had committed when the read began (waiting up to
 *                                   DATABASE_REPLICA_WAIT_MS for it), else the primary
 *   readerPast(db, instant, now, …) everything committed on the primary before `instant` (an hour's
 *                                   files after its close plus lateness) or before now (a GBFS build
 *                                   after reading its change counters): the replica once it has
 *                                   replayed that far (`replayedPast`), else the primary, logged;
 *   readOnReader(reader, read, …)   the read on readerPast's choice, on the primary if the replica
 *                                   then fails to answer
 *   replayLagBytes(db)              how far behind the replica is (the metrics' gauge)
 *
 * "Replayed that far" compares WAL positions (sql/queries/replica.sql): the primary's insert position
 * read now (`pg_current_wal_insert_lsn()`: every commit visible there has its commit record before it, with
 * synchronous_commit off too) against the replica's `pg_last_wal_replay_lsn()`. Once the replica has
 * replayed to it, every transaction the primary had committed by then is visible to a new snapshot
 * on the replica. Timestamps cannot say this: `pg_last_xact_replay_timestamp()` is the commit time of
 * the last transaction replayed, and on an idle primary it stops, so a replica that has replayed
 * everything would look behind for ever (and commit times are not quite in WAL order, so a replay
 * timestamp past the instant does not prove every earlier commit replayed). A heartbeat row written
 * by the publisher would prove it, at the cost of a table and a write per check; the WAL position
 * needs neither, and is read after the caller's own last statement on the primary (the publisher's
 * claim of the hour, the vehicle list's zone version), so the replica is also past everything that
 * statement saw. Nor is a per-zone version compared across the two servers: 000190 sums a zone's
 * version over shards that concurrent commits bump side by side, and a replica can reach the sum the
 * primary showed by replaying a later commit of one shard before an earlier one of another.
 * The one case the position misses is an idle primary whose last record ended exactly on a WAL page
 * boundary (the insert position then points past the next page's header): the read goes to the
 * primary, which has nothing else to do then.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DbError, type Db, type DbErrorKind, type NamedQuery, type Queryable, type Row } from './db.js';
import { sql, type TypedQuery, type UntypedQuery } from './sql/typed.js';
import type { Logger } from './log.js';

/**
 * How long background work (`replayedPast`, `readerPast`) waits for a streaming replica, normally a
 * millisecond or two behind, to reach the primary's position; a request (`readCaughtUp`) waits
 * DATABASE_REPLICA_WAIT_MS, then reads on the primary.
 */
const REPLAY_WAIT_MS = 1000;
/** After the replica failed to answer, reads go straight to the primary for this long. */
const REPLICA_RETRY_MS = 5000;

/** Replica failures that the primary answers instead: unreachable, or a statement cancelled by recovery (SQLSTATE 40001). */
const FALLBACK_KINDS: ReadonlySet<DbErrorKind> = new Set(['unavailable', 'retryable']);

const restingUntil = new WeakMap<Db, number>();

function resting(replica: Db): boolean {
  const until = restingUntil.get(replica);
  return until !== undefined && performance.now() < until;
}

function rest(replica: Db, err: DbError): void {
  if (!resting(replica)) replica.log.warn({ err: err.message, pool: 'replica', retryMs: REPLICA_RETRY_MS }, 'replica unreachable: reading from the primary');
  restingUntil.set(replica, performance.now() + REPLICA_RETRY_MS);
}

/** A read the replica failed: unreachable, it rests; a statement it cancelled, only this read moves. */
function fellBack(replica: Db, err: DbError): void {
  if (err.kind === 'unavailable') rest(replica, err);
  else replica.log.info({ err: err.message, pool: 'replica' }, 'replica cancelled a read: reading from the primary');
}

const replicaFailure = (err: unknown): err is DbError => err instanceof DbError && err.role === 'replica';

/**
 * Runs `read` on the replica, or on the primary when there is none, while it rests after a failure,
 * or when it fails to answer (unreachable, or the statement cancelled by a recovery conflict). An
 * error of the read itself, or of the primary, is the caller's.
 */
export async function readOnReplica<T>(db: Db, read: (db: Db) => Promise<T>): Promise<T> {
  const replica = db.replica;
  if (replica === db || resting(replica)) return read(db);
  try {
    return await read(replica);
  } catch (err) {
    if (!replicaFailure(err) || !FALLBACK_KINDS.has(err.kind)) throw err;
    fellBack(replica, err);
    return read(db);
  }
}

export interface StreamOptions {
  /**
   * The stream names one thing (a device): when the replica has no row of it, it is opened again on
   * the primary, so that, as with lookupOnReplica, only the primary ever says "no such thing".
   */
  emptyOnPrimary?: boolean;
}

/**
 * The rows of a stream opened on the replica (a cursor in a snapshot, lib/feeds/mds/sources.ts), like
 * readOnReplica: when the replica fails before the first row (it cannot be reached, or cancels the
 * statement), the stream is opened again on the primary. A failure after rows have been handed on is
 * the caller's: the rows already sent cannot be taken back. Before the first row the stream has
 * touched only the replica's pool, so its error is the replica's whichever role it names.
 */
export async function* streamOnReplica<T>(db: Db, open: (db: Db) => AsyncGenerator<T>, opts: StreamOptions = {}): AsyncGenerator<T> {
  const replica = db.replica;
  if (replica === db || resting(replica)) {
    yield* open(db);
    return;
  }
  const rows = open(replica);
  let first: IteratorResult<T>;
  try {
    first = await rows.next();
  } catch (err) {
    if (!(err instanceof DbError) || !FALLBACK_KINDS.has(err.kind)) throw err;
    fellBack(replica, err);
    yield* open(db);
    return;
  }
  if (first.done && opts.emptyOnPrimary) {
    yield* open(db);
    return;
  }
  try {
    if (first.done) return;
    yield first.value;
    yield* rows;
  } finally {
    // a consumer that stops early: the cursor's snapshot is closed (a no-op once it has ended)
    await rows.return(undefined);
  }
}

/**
 * One row from the replica; a row the replica does not have yet (created a moment ago on the
 * primary) is looked up on the primary, so only the primary ever says "no such row". Also returns
 * the pool that found it: what belongs to the row is read from the same one.
 */
export function lookupOnReplica<P extends readonly unknown[], R extends Row>(
  db: Db,
  query: TypedQuery<P, R>,
  params: NoInfer<P>,
): Promise<{ row: R | undefined; db: Db }>;
export function lookupOnReplica<T extends Row = Row>(db: Db, query: UntypedQuery, params: readonly unknown[]): Promise<{ row: T | undefined; db: Db }>;
export async function lookupOnReplica(db: Db, query: NamedQuery, params: readonly unknown[]): Promise<{ row: Row | undefined; db: Db }> {
  const found = await readOnReplica(db, async (pool) => ({ row: await pool.maybeOne(query, params), db: pool }));
  if (found.row !== undefined || found.db === db) return found;
  return { row: await db.maybeOne(query, params), db };
}

export interface ReplayOptions {
  /**
   * Where the primary's WAL position is read: the caller's own session when its last statement there
   * must be covered too (the publisher's claim); the pool by default.
   */
  primary?: Queryable;
  /** how long to wait for the replica to reach that position (default REPLAY_WAIT_MS) */
  waitMs?: number;
}

interface ReplayCheck {
  replayed: boolean;
  behindBytes: number;
}

async function replayCheck(db: Db, opts: ReplayOptions): Promise<ReplayCheck> {
  const { lsn } = await (opts.primary ?? db).one(sql('ReplicaPrimaryWalPosition'));
  const waitMs = opts.waitMs ?? REPLAY_WAIT_MS;
  // a streaming replica passes the position within a few milliseconds: poll at a tenth of the wait
  const pollMs = Math.min(20, Math.max(2, waitMs / 10));
  const deadline = performance.now() + waitMs;
  for (;;) {
    const r = await db.replica.one(sql('ReplicaReplayedTo'), [lsn]);
    if (r.replayed || performance.now() >= deadline) return { replayed: r.replayed, behindBytes: r.behind_bytes };
    await sleep(pollMs);
  }
}

/**
 * Runs `read` where it shows every transaction the primary had committed when it was called (so
 * every write its caller could have seen): on the replica once that has replayed the primary's
 * position read first (waiting up to `waitMs`, DATABASE_REPLICA_WAIT_MS), else on the primary. `read`
 * is given the pool it runs on. An error of the primary is thrown; an unreachable replica is left to
 * rest.
 */
export async function readCaughtUp<T>(db: Db, waitMs: number, read: (db: Db) => Promise<T>): Promise<T> {
  const replica = db.replica;
  if (replica === db || resting(replica)) return read(db);
  let caughtUp = false;
  try {
    caughtUp = (await replayCheck(db, { waitMs })).replayed;
  } catch (err) {
    if (!replicaFailure(err)) throw err;
    if (err.kind === 'unavailable') rest(replica, err);
  }
  return caughtUp ? readOnReplica(db, read) : read(db);
}

/**
 * Whether `db.replica` shows everything the primary committed before `instant`: `now` (the caller's
 * clock) is past it, and the replica has replayed the primary's WAL up to the position read now,
 * waiting up to `waitMs` for it. True without a replica once the instant has passed (the read pool is
 * the primary). Throws the DbError of a server that does not answer.
 */
export async function replayedPast(db: Db, instant: Date, now: Date, opts: ReplayOptions = {}): Promise<boolean> {
  if (now.getTime() < instant.getTime()) return false;
  if (db.replica === db) return true;
  return (await replayCheck(db, opts)).replayed;
}

/**
 * The pool for work that must include everything committed on the primary before `instant` (pass
 * `now` for "everything committed so far"): the replica when it has replayed past it, else the
 * primary, with a log line saying why (`log`: the caller's, carrying its zone and hour). An error of
 * the primary is thrown; a replica that fails to answer is left to rest like readOnReplica's.
 */
export async function readerPast(db: Db, instant: Date, now: Date, log: Logger, opts: ReplayOptions = {}): Promise<Db> {
  const replica = db.replica;
  if (replica === db || resting(replica)) return db;
  if (now.getTime() < instant.getTime()) {
    log.debug({ pool: 'primary', instant: instant.toISOString() }, 'before the instant a replica could be trusted with: reading from the primary');
    return db;
  }
  try {
    const check = await replayCheck(db, opts);
    if (check.replayed) return replica;
    log.info(
      { pool: 'primary', instant: instant.toISOString(), behindBytes: check.behindBytes },
      'replica has not replayed far enough: reading from the primary',
    );
  } catch (err) {
    if (!replicaFailure(err)) throw err;
    if (err.kind === 'unavailable') rest(replica, err);
    else log.warn({ err: err.message, pool: 'replica' }, 'replica could not say how far it has replayed: reading from the primary');
  }
  return db;
}

/**
 * Runs `read` on `reader` when readerPast chose the replica, else `onPrimary` (the caller's own
 * session on the primary: the publisher's lock connection, a GBFS job's transaction). A replica that
 * fails to answer now (unreachable, or the statement cancelled by a recovery conflict) is handled like
 * readOnReplica's: `onPrimary` runs instead, so a replica lost between the check and the read costs
 * no work. Whatever `read` returns that runs on after it (a snapshot's cursor) fails on its own.
 */
export async function readOnReader<T>(reader: Db, read: (replica: Db) => Promise<T>, onPrimary: () => Promise<T>): Promise<T> {
  if (reader.role !== 'replica') return onPrimary();
  try {
    return await read(reader);
  } catch (err) {
    if (!replicaFailure(err) || !FALLBACK_KINDS.has(err.kind)) throw err;
    fellBack(reader, err);
    return onPrimary();
  }
}

/**
 * Bytes of the primary's WAL that the replica has not replayed yet, read now, without waiting (0
 * without a replica). Throws the DbError of a server that does not answer.
 */
export async function replayLagBytes(db: Db): Promise<number> {
  if (db.replica === db) return 0;
  return (await replayCheck(db, { waitMs: 0 })).behindBytes;
}
