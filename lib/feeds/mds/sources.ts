/**
 * Streaming sources of the feed records: server-side cursors (pg-query-stream) on a dedicated
 * connection inside a read-only REPEATABLE READ transaction, so that a whole hour is read from one
 * snapshot and memory stays bounded by the batch size however large the hour is. Each yields rows
 * shaped for the mappers in records.ts / legacy.ts / insurance, except the realtime vehicle lists
 * (streamVehicleRecords, streamVehicleStatusRecords), which yield the records themselves as JSON
 * text built in Postgres from the same rows and the same declarations (shape.ts). A `Db` may be the
 * streaming replica's pool (lib/core/replica.ts streamOnReplica): snapshots there work the same way.
 *
 *   for await (const row of streamTrips(ctx.db, zone, hour)) out.push(toMdsTrip(row, ctx.config));
 */
import type pg from 'pg';
import { classify, onConnection, type Db, type DbRole, type NamedQuery, type Row } from '../../core/db.js';
import { sql, type ParamsOf, type TypedQuery, type UntypedQuery } from '../../core/sql/typed.js';
import type { Logger } from '../../core/log.js';
import { LEGACY_VEHICLE_STATES } from './legacy.js';
import { MDS_VEHICLE, MDS_VEHICLE_STATUS } from './records.js';
import type { EventRow, Provider, TripRow, VehicleRow, VehicleStatusRow } from './rows.js';
import { recordSql, type Shape } from './shape.js';

/** `timestamp` parameter text of a UTC hour; the hour columns are UTC `timestamp`s. */
export function hourParam(hour: Date): string {
  return hour.toISOString().slice(0, 13) + ':00:00';
}

export interface SnapshotOptions {
  /** rows fetched per round trip (default 1000) */
  batchSize?: number;
  /** statement timeout inside the snapshot; a large hour streamed to a slow store takes a while */
  statementTimeoutMs?: number;
}

/**
 * One read-only snapshot on a dedicated connection: a few small queries and cursors that all see the
 * same data. Close it with `close()` (always, e.g. in `finally`). Its statements and errors name the
 * server it reads (`role`): the primary, or the streaming replica (a realtime feed, an hour's files).
 */
export class Snapshot {
  private isBroken = false;
  private closed = false;
  private readonly runner: ReturnType<typeof onConnection>;

  private constructor(
    private readonly client: pg.PoolClient,
    log: Logger,
    private readonly batchSize: number,
    private readonly ownsClient: boolean,
    /** the server the snapshot reads */
    readonly role: DbRole,
  ) {
    this.runner = onConnection(client, log, role);
  }

  /** A snapshot on a connection of its own from `db`'s pool (the primary's or the replica's), released by close(). */
  static async open(db: Db, opts: SnapshotOptions = {}): Promise<Snapshot> {
    let client: pg.PoolClient;
    try {
      client = await db.pool.connect();
    } catch (err) {
      throw classify(err, 'connect', db.role);
    }
    return Snapshot.start(new Snapshot(client, db.log, opts.batchSize ?? 1000, true, db.role), opts);
  }

  /**
   * A snapshot on the caller's connection (which may hold session state such as an advisory lock) to
   * the server `role` names; close() ends the transaction but leaves the connection to the caller:
   * check `broken` first.
   */
  static async begin(client: pg.PoolClient, log: Logger, opts: SnapshotOptions = {}, role: DbRole = 'primary'): Promise<Snapshot> {
    return Snapshot.start(new Snapshot(client, log, opts.batchSize ?? 1000, false, role), opts);
  }

  private static async start(s: Snapshot, opts: SnapshotOptions): Promise<Snapshot> {
    try {
      await s.runner.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      // without one, the session's own: a request's snapshot times out like its other statements
      // (the pool's statement_timeout, then the outage rule's 503); long work passes its own
      if (opts.statementTimeoutMs !== undefined) await s.runner.query(`SET LOCAL statement_timeout = ${Math.max(0, Math.floor(opts.statementTimeoutMs))}`);
    } catch (err) {
      s.isBroken = true;
      await s.close();
      throw classify(err, 'snapshot', s.role);
    }
    return s;
  }

  /** Through the named, timed runner of lib/core/db.ts. */
  query<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, params: Readonly<NoInfer<P>>): Promise<R[]>;
  query<T extends Row = Row>(query: UntypedQuery, params: readonly unknown[]): Promise<T[]>;
  async query<T extends Row = Row>(query: NamedQuery, params: readonly unknown[]): Promise<T[]> {
    try {
      return (await this.runner.query<T>(query, params)).rows;
    } catch (err) {
      this.isBroken = true;
      throw err;
    }
  }

  /** Rows of `query` through a cursor. Stopping early is fine: the connection is then discarded. */
  stream<P extends readonly unknown[], R extends Row>(query: TypedQuery<P, R>, params: Readonly<NoInfer<P>>): AsyncGenerator<R>;
  stream<T extends Row = Row>(query: UntypedQuery, params: readonly unknown[]): AsyncGenerator<T>;
  async *stream<T extends Row = Row>(query: NamedQuery, params: readonly unknown[]): AsyncGenerator<T> {
    let done = false;
    try {
      yield* this.runner.stream<T>(query, params, this.batchSize);
      done = true;
    } finally {
      // an unfinished cursor may still be talking to the server: never hand that connection back
      if (!done) this.isBroken = true;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.isBroken) {
      try {
        await this.runner.query('COMMIT');
      } catch {
        this.isBroken = true;
      }
    }
    if (this.ownsClient) this.client.release(this.isBroken ? true : undefined);
  }

  /** The connection can no longer be trusted (an error, or a cursor left unfinished). */
  get broken(): boolean {
    return this.isBroken;
  }
}

/** Runs one cursor query in its own snapshot. */
async function* streamOne<P extends readonly unknown[], R extends Row>(
  db: Db,
  query: TypedQuery<P, R>,
  params: Readonly<NoInfer<P>>,
  opts?: SnapshotOptions,
): AsyncGenerator<R> {
  const snap = await Snapshot.open(db, opts);
  try {
    yield* snap.stream(query, params);
  } finally {
    await snap.close();
  }
}

/** Trips of a zone that ended in the UTC hour starting at `hour`, by end_time. */
export function streamTrips(db: Db, zoneId: string, hour: Date, opts?: SnapshotOptions): AsyncGenerator<TripRow> {
  return streamOne(db, sql('MdsTripsOfHour'), [zoneId, hourParam(hour)], opts);
}

/** Events of a zone in the UTC hour starting at `hour` (the historical events / status changes file). */
export function streamEventsOfHour(db: Db, zoneId: string, hour: Date, opts?: SnapshotOptions): AsyncGenerator<EventRow> {
  return streamOne(db, sql('MdsEventsOfHour'), [zoneId, hourParam(hour)], opts);
}

/** Vehicles of a zone (or the one device) with their type. */
export function streamVehicles(db: Db, zoneId: string, deviceId?: string, opts?: SnapshotOptions): AsyncGenerator<VehicleRow> {
  return streamOne(db, sql('MdsVehicles'), [zoneId, deviceId ?? null], opts);
}

/**
 * Vehicles of a zone (or the one device) with their last event and last telemetry, under MDS 2.0's
 * 90-minute rule at `now`: a vehicle last seen elsewhere, removed or missing drops out 90 minutes
 * after that event.
 */
export function streamVehicleStatus(db: Db, zoneId: string, now: Date, deviceId?: string, opts?: SnapshotOptions): AsyncGenerator<VehicleStatusRow> {
  return streamOne(db, sql('MdsVehicleStatus'), [zoneId, deviceId ?? null, null, now], opts);
}

/** A row of a records query: one record as compact JSON text. */
interface RecordRow {
  record: string;
}

/** A records query: its source's parameters, then the provider id as JSON text (recordParams). */
type RecordsQuery<P extends readonly unknown[]> = TypedQuery<[...P, providerJson: string], RecordRow>;

const recordQueries = new Map<string, NamedQuery>();

/**
 * The rows of `source` as records of `s`, the JSON text built in Postgres from the same columns the
 * JS mapper reads (shape.ts), in `source`'s order (`orderBy`, a column of its rows). The source's
 * rows must satisfy what the shape needs (a column it reads renamed or made nullable in the SQL
 * fails the type check here). The provider id is one more parameter after the source's
 * `sourceParams`, as JSON text (recordParams).
 *
 * One record per row, not runs of records aggregated in Postgres (string_agg): measured on a
 * 10,000-vehicle zone, the aggregate saves the driver a few ms of rows but costs Postgres as much
 * (a second sort of the zone, or the whole zone held before the first byte), and a single aggregate
 * of the zone would hold the whole answer in both processes, where the cursor keeps memory bounded
 * by its batch however large the zone. json_build_object is no shortcut either: it writes `"a" : 1`
 * with spaces, and numbers as Postgres prints them.
 */
function recordsQuery<P extends readonly unknown[], R>(
  source: TypedQuery<P, R>,
  sourceParams: P['length'],
  s: Shape<R>,
  orderBy: Extract<keyof R, string>,
): RecordsQuery<P> {
  const name = `${source.name}Records`;
  let query = recordQueries.get(name);
  if (!query) {
    // the source on lines of its own: it may begin or end with a -- comment
    query = { name, text: `SELECT ${recordSql(s, 'r', `$${sourceParams + 1}::text`)} AS record\n  FROM (\n${source.text}\n) r\n ORDER BY r.${orderBy}` };
    recordQueries.set(name, query);
  }
  // the types ride on the query for the compiler only (lib/core/sql/typed.ts)
  return query as RecordsQuery<P>;
}

const recordParams = <const P extends readonly unknown[]>(params: P, p: Provider): [...P, string] => [...params, JSON.stringify(p.providerId)];

/**
 * Records are handed on in runs of about this many characters (comma-separated JSON texts): each
 * item of an async stream costs a few promise round trips per layer, which at 10,000 records weighed
 * more than building them.
 */
const RUN_CHARS = 64 * 1024;

/** A records query read in its own snapshot, as runs of records' JSON text separated by commas. */
async function* recordRuns<P extends readonly unknown[]>(
  db: Db,
  query: TypedQuery<P, RecordRow>,
  params: Readonly<NoInfer<P>>,
  opts?: SnapshotOptions,
): AsyncGenerator<string> {
  const snap = await Snapshot.open(db, opts);
  try {
    let run = '';
    for await (const row of snap.stream(query, params)) {
      run = run === '' ? row.record : `${run},${row.record}`;
      if (run.length >= RUN_CHARS) {
        yield run;
        run = '';
      }
    }
    if (run !== '') yield run;
  } finally {
    await snap.close();
  }
}

/** The realtime /vehicles: streamVehicles' rows as MDS 2.0 vehicle records, in runs of JSON text. */
export function streamVehicleRecords(db: Db, p: Provider, zoneId: string, deviceId?: string, opts?: SnapshotOptions): AsyncGenerator<string> {
  return recordRuns(db, recordsQuery(sql('MdsVehicles'), 2, MDS_VEHICLE, 'device_id'), recordParams([zoneId, deviceId ?? null], p), opts);
}

/** The realtime /vehicles/status: streamVehicleStatus' rows as MDS 2.0 vehicle status records, in runs of JSON text. */
export function streamVehicleStatusRecords(db: Db, p: Provider, zoneId: string, now: Date, deviceId?: string, opts?: SnapshotOptions): AsyncGenerator<string> {
  return recordRuns(db, vehicleStatusRecordsQuery(), recordParams([zoneId, deviceId ?? null, null, now], p), opts);
}

/** The query behind streamVehicleStatusRecords (parameters: zone, device or null, null, now, provider id as JSON). */
export function vehicleStatusRecordsQuery(): RecordsQuery<ParamsOf<'MdsVehicleStatus'>> {
  return recordsQuery(sql('MdsVehicleStatus'), 4, MDS_VEHICLE_STATUS, 'device_id');
}

/**
 * Rows of the legacy vehicles feeds (1.2 and 0.4): like vehicle status, only for vehicles whose last
 * state the legacy feeds show. toVehicle12/toVehicle04 may still return undefined: skip those.
 */
export function streamLegacyVehicles(db: Db, zoneId: string, opts?: SnapshotOptions): AsyncGenerator<VehicleStatusRow> {
  return streamOne(db, sql('MdsVehicleStatus'), [zoneId, null, LEGACY_VEHICLE_STATES, null], opts);
}
