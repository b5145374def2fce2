/**
 * Postgres access. Every runtime query is a named query from a `.sql` file in `sql/queries/`
 * (loaded once), run through one helper that names it (prepared statement), times it and tags its
 * errors. Row-count helpers turn a wrong count into a typed error; SQLSTATEs are mapped here only.
 *
 * A Db is the primary's pool; `db.replica` is the pool of a streaming replica (DATABASE_REPLICA_URL,
 * read-only sessions) or, when none is configured, the primary's pool itself, so a read that may lag
 * is written once, `db.replica.many(…)`, whatever the deployment. When it must not lag: lib/core/replica.ts.
 */
import pg from 'pg';
import QueryStream from 'pg-query-stream';
import type { Logger } from './log.js';
import type { ParamsArg, TypedQuery, UntypedQuery } from './sql/typed.js';
import type { NamedQuery } from './sql/catalog.js';

// Return int8/numeric as JS numbers where they fit: counts and money here are far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

export type { NamedQuery } from './sql/catalog.js';

/** SQLSTATE codes we act on (https://www.postgresql.org/docs/15/errcodes-appendix.html). */
export const SQLSTATE = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  checkViolation: '23514',
  notNullViolation: '23502',
  exclusionViolation: '23P01',
  invalidTextRepresentation: '22P02',
  invalidDatetimeFormat: '22007',
  datetimeFieldOverflow: '22008',
  numericValueOutOfRange: '22003',
  stringDataRightTruncation: '22001',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
  adminShutdown: '57P01',
  crashShutdown: '57P02',
  cannotConnectNow: '57P03',
  objectInUse: '55006',
} as const;

export type DbErrorKind = 'conflict' | 'invalid' | 'retryable' | 'timeout' | 'unavailable' | 'row_count' | 'other';

/** Which server a pool talks to: named in its slow-statement and error lines. */
export type DbRole = 'primary' | 'replica';

export class DbError extends Error {
  /** the server that answered (or failed to) */
  readonly role: DbRole;

  constructor(
    message: string,
    readonly kind: DbErrorKind,
    readonly query: string,
    readonly code?: string,
    readonly constraint?: string,
    options?: { cause?: unknown; role?: DbRole },
  ) {
    super(message, options);
    this.name = 'DbError';
    this.role = options?.role ?? 'primary';
  }
}

/**
 * A failure that is the database's, not the request's: unreachable (refused, lost, the pool's wait
 * past its timeout) or a statement cancelled by its timeout. The one rule every API family answers
 * with a 503 and Retry-After (api/kit/outage.ts) and the rental engine passes on unnamed.
 */
export function isDbOutage(err: unknown): err is DbError {
  return err instanceof DbError && (err.kind === 'unavailable' || err.kind === 'timeout');
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/** Maps a driver error to a DbError kind; the one place where SQLSTATEs are interpreted. */
export function classify(err: unknown, query: string, role: DbRole = 'primary'): DbError {
  if (err instanceof DbError) return err;
  const e = err as { code?: string; constraint?: string; message?: string };
  const code = e?.code;
  let kind: DbErrorKind = 'other';
  switch (code) {
    case SQLSTATE.uniqueViolation:
    case SQLSTATE.exclusionViolation:
    case SQLSTATE.foreignKeyViolation:
      kind = 'conflict';
      break;
    case SQLSTATE.checkViolation:
    case SQLSTATE.notNullViolation:
    case SQLSTATE.invalidTextRepresentation:
    case SQLSTATE.invalidDatetimeFormat:
    case SQLSTATE.datetimeFieldOverflow:
    case SQLSTATE.numericValueOutOfRange:
    case SQLSTATE.stringDataRightTruncation:
      kind = 'invalid';
      break;
    case SQLSTATE.serializationFailure:
    case SQLSTATE.deadlockDetected:
    case SQLSTATE.lockNotAvailable:
      kind = 'retryable';
      break;
    case SQLSTATE.queryCanceled:
      kind = 'timeout';
      break;
    case SQLSTATE.adminShutdown:
    case SQLSTATE.crashShutdown:
    case SQLSTATE.cannotConnectNow:
      kind = 'unavailable';
      break;
    default:
      if (
        (code && CONNECTION_CODES.has(code)) ||
        /Connection terminated|timeout exceeded when trying to connect|connect ECONNREFUSED|Client has encountered a connection error/i.test(e?.message ?? '')
      ) {
        kind = 'unavailable';
      }
  }
  return new DbError(`${query}${role === 'replica' ? ' (replica)' : ''}: ${e?.message ?? String(err)}`, kind, query, code, e?.constraint, { cause: err, role });
}

/** Any row: what a row type must be (the driver's; its members are `any` in pg's typings). Not a row to read. */
export type Row = pg.QueryResultRow;

/**
 * The row of an untyped query (`q('Name')`, ad hoc text): its columns are `unknown`, so reading one
 * needs a check or a named type. Runtime reads are typed queries; what stays untyped is statements
 * whose rows are not read (`BEGIN`), and the tests' probes, which name their row type.
 */
export type UnknownRow = Record<string, unknown>;

/**
 * Something that runs queries: the pool or a client inside a transaction. A typed query
 * (`sql('Name')`, lib/core/sql/typed.ts) has its parameters checked and its rows typed; the untyped
 * forms (`q('Name')`, ad hoc text) take no typed query, so one cannot fall through to them, and
 * their rows are `UnknownRow` unless the caller names a type.
 */
export interface Queryable {
  query<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<pg.QueryResult<R>>;
  query<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<pg.QueryResult<T>>;
  one<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<R>;
  one<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<T>;
  maybeOne<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<R | undefined>;
  maybeOne<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<T | undefined>;
  many<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<R[]>;
  many<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<T[]>;
}

/** The parameters of a runner call: the typed overloads pass them as a rest argument. */
const paramsOf = (args: readonly unknown[]) => [...((args[0] as readonly unknown[] | undefined) ?? [])];

/** A statement slower than this is logged with its name (a cursor: its whole read). */
const SLOW_QUERY_MS = 500;

abstract class Runner implements Queryable {
  constructor(
    readonly log: Logger,
    readonly role: DbRole = 'primary',
  ) {}
  protected abstract run(config: pg.QueryConfig): Promise<pg.QueryResult>;

  query<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<pg.QueryResult<R>>;
  query<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<pg.QueryResult<T>>;
  async query<T extends Row = UnknownRow>(query: NamedQuery | string, ...args: readonly unknown[]): Promise<pg.QueryResult<T>> {
    const params = paramsOf(args);
    const named = typeof query === 'string' ? undefined : query;
    const label = named?.name ?? 'adhoc';
    const started = performance.now();
    try {
      const res = await this.run(named ? { name: named.name, text: named.text, values: params } : { text: query as string, values: params });
      const ms = performance.now() - started;
      if (ms > SLOW_QUERY_MS) this.log.warn({ query: label, ms: Math.round(ms), pool: this.role }, 'slow query');
      return res as pg.QueryResult<T>;
    } catch (err) {
      throw classify(err, label, this.role);
    }
  }

  one<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<R>;
  one<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<T>;
  async one<T extends Row = UnknownRow>(query: NamedQuery | string, ...args: readonly unknown[]): Promise<T> {
    const res = await this.query<T>(query, paramsOf(args));
    if (res.rows.length !== 1) {
      throw new DbError(
        `${typeof query === 'string' ? 'adhoc' : query.name}: expected one row, got ${res.rows.length}`,
        'row_count',
        typeof query === 'string' ? 'adhoc' : query.name,
      );
    }
    return res.rows[0];
  }

  maybeOne<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<R | undefined>;
  maybeOne<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<T | undefined>;
  async maybeOne<T extends Row = UnknownRow>(query: NamedQuery | string, ...args: readonly unknown[]): Promise<T | undefined> {
    const res = await this.query<T>(query, paramsOf(args));
    if (res.rows.length > 1) {
      throw new DbError(
        `${typeof query === 'string' ? 'adhoc' : query.name}: expected at most one row, got ${res.rows.length}`,
        'row_count',
        typeof query === 'string' ? 'adhoc' : query.name,
      );
    }
    return res.rows[0];
  }

  many<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, ...params: ParamsArg<NoInfer<P>>): Promise<R[]>;
  many<T extends Row = UnknownRow>(query: UntypedQuery | string, params?: readonly unknown[]): Promise<T[]>;
  async many<T extends Row = UnknownRow>(query: NamedQuery | string, ...args: readonly unknown[]): Promise<T[]> {
    return (await this.query<T>(query, paramsOf(args))).rows;
  }
}

class ClientRunner extends Runner {
  constructor(
    readonly client: pg.PoolClient,
    log: Logger,
    role?: DbRole,
  ) {
    super(log, role);
  }
  protected run(config: pg.QueryConfig) {
    return this.client.query(config);
  }

  /**
   * The rows of a named query through a cursor (pg-query-stream), `batchSize` at a time: tagged and
   * timed like every other statement. Leaving early is allowed; the caller must then discard the
   * connection (the cursor may still be talking to the server).
   */
  stream<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, params: Readonly<NoInfer<P>>, batchSize: number): AsyncGenerator<R>;
  stream<T extends Row = UnknownRow>(query: UntypedQuery, params: readonly unknown[], batchSize: number): AsyncGenerator<T>;
  async *stream<T extends Row = UnknownRow>(query: NamedQuery, params: readonly unknown[], batchSize: number): AsyncGenerator<T> {
    const started = performance.now();
    const rows = this.client.query(new QueryStream(query.text, [...params], { batchSize, highWaterMark: batchSize }));
    try {
      for await (const row of rows) yield row as T;
    } catch (err) {
      throw classify(err, query.name, this.role);
    }
    const ms = performance.now() - started;
    if (ms > SLOW_QUERY_MS) this.log.warn({ query: query.name, ms: Math.round(ms), cursor: true, pool: this.role }, 'slow query');
  }
}

/**
 * The named, timed runner on a connection the caller holds (a snapshot's, a publisher lock's): the
 * same statements as `Db` and `tx`, for work that needs its own session.
 */
export function onConnection(
  client: pg.PoolClient,
  log: Logger,
  role?: DbRole,
): Queryable & { readonly client: pg.PoolClient; stream: ClientRunner['stream'] } {
  return new ClientRunner(client, log, role);
}

export type Tx = Queryable & { readonly client: pg.PoolClient };

export interface TxOptions {
  /** Retries of serialization failures and deadlocks (whole transaction). Default 3. */
  retries?: number;
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
}

export interface DbOptions {
  max?: number;
  applicationName?: string;
  statementTimeoutMs?: number;
  /** a streaming replica of this database: `replica` is then a read-only pool on it, of the same size */
  replicaUrl?: string;
}

export class Db extends Runner {
  readonly pool: pg.Pool;
  /**
   * The pool for reads that may lag the primary: the streaming replica's when one is configured,
   * else this pool itself. A replica's sessions are read-only (`default_transaction_read_only`), so a
   * write sent there by mistake fails even when the URL names a primary.
   */
  readonly replica: Db;

  constructor(connectionString: string, log: Logger, opts: DbOptions = {}, role: DbRole = 'primary') {
    super(log, role);
    this.replica = opts.replicaUrl && role === 'primary' ? new Db(opts.replicaUrl, log, { ...opts, replicaUrl: undefined }, 'replica') : this;
    this.pool = new pg.Pool({
      connectionString,
      max: opts.max ?? 20,
      // Fail fast while Postgres is down: callers answer 503 instead of hanging.
      connectionTimeoutMillis: 2000,
      idleTimeoutMillis: 30000,
      application_name: opts.applicationName ?? 'platform',
      statement_timeout: opts.statementTimeoutMs ?? 30000,
      // No JIT: our statements are short, and compiling one whose estimated cost passes
      // jit_above_cost takes far longer than running it (the publisher's catch-up scan: ~900 ms
      // compiled, ~15 ms not). Per connection, so an external database needs no setting; `options`
      // in DATABASE_URL replaces this.
      options: role === 'replica' ? '-c jit=off -c default_transaction_read_only=on' : '-c jit=off',
    });
    // An idle client losing its connection (Postgres restart) must not crash the process.
    this.pool.on('error', (err) => log.warn({ err: err.message, pool: role }, 'idle postgres client error'));
    // …and neither must a checked-out client losing it between two queries (inside a transaction
    // waiting for the vehicle gateway, or a cursor streaming a feed file): pg emits 'error' on the
    // client, and an unhandled 'error' event ends the process. The query in progress fails and is
    // mapped to 'unavailable' (503) by classify().
    this.pool.on('connect', (client) => client.on('error', (err) => log.warn({ err: err.message, pool: role }, 'postgres connection lost')));
  }

  protected run(config: pg.QueryConfig) {
    return this.pool.query(config);
  }

  /** Runs `fn` in a transaction; retries the whole transaction on serialization failure/deadlock. */
  async tx<T>(fn: (tx: Tx) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    const retries = opts.retries ?? 3;
    for (let attempt = 0; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw classify(err, 'connect', this.role);
      }
      const runner = new ClientRunner(client, this.log, this.role);
      let released = false;
      try {
        await runner.query(opts.isolation ? `BEGIN ISOLATION LEVEL ${opts.isolation.toUpperCase()}` : 'BEGIN');
        const result = await fn(runner);
        await runner.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch {
          // the connection is gone: drop it from the pool
          client.release(true);
          released = true;
        }
        const e = classify(err, 'tx', this.role);
        if (e.kind === 'retryable' && attempt < retries) {
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
          continue;
        }
        throw err instanceof DbError || !(err as { code?: unknown } | null)?.code ? err : e;
      } finally {
        if (!released) client.release();
      }
    }
  }

  /** Ends this pool and its replica's. */
  async close(): Promise<void> {
    await Promise.all([this.pool.end(), this.replica === this ? undefined : this.replica.close()]);
  }
}
