/**
 * How each hourly file is rendered: its source (trips, events or telemetry of the hour), the record mapper,
 * our schema for the records and the envelope around them. The official-schema check of the same
 * files is in the tests.
 *
 * The 8 files of an hour read only 3 sources, so the publisher maps each source row to every file of
 * that source in one pass (`renderingOf` per file, `sourceOf` per source).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { NamedQuery, Row } from '../../lib/core/db.js';
import { sql, type RowOf, type TypedQuery } from '../../lib/core/sql/typed.js';
import { hourParam, type Snapshot } from '../../lib/feeds/mds/sources.js';
import type { HourlyFeed, HourlyFeedId } from '../../lib/feeds/publications.js';
import type { EventRow, Provider, TelemetryRow, TripRow } from '../../lib/feeds/mds/rows.js';
import { toMdsEvent, toMdsTelemetry, toMdsTrip } from '../../lib/feeds/mds/records.js';
import { toStatusChange04, toStatusChange12, toTrip04, toTrip12 } from '../../lib/feeds/mds/legacy.js';
import { insuranceHead, mds20Head } from '../../lib/feeds/mds/envelope.js';
import { toInsuranceTrip } from './insurance.js';
import { MdsEventSchema, MdsEventsHeadSchema, MdsTelemetryHeadSchema, MdsTelemetrySchema, MdsTripSchema, MdsTripsHeadSchema } from '../../schemas/mds/v2.js';
import { LegacyHeadSchema, StatusChange04Schema, StatusChange12Schema, Trip04Schema, Trip12Schema } from '../../schemas/mds/legacy.js';
import { InsuranceHeadSchema, InsuranceTripSchema } from '../../schemas/insurance/trips.js';

/** A record's MDS `publication_time` from when it reached us (recorded_at, ms). */
export type PublicationTime = (recordedMs: number) => number;

export interface Rendering {
  /** `pub` is given to the renderings whose records carry publication_time (MDS 2.0 trips, events) */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each rendering's mapper takes its own source's row type; one table holds them all
  map: (row: any, p: Provider, pub: PublicationTime) => object | undefined;
  /** our schema of one record; runs on every record before it is written */
  record: ValidateFunction;
  head: (lastUpdatedMs: number) => object;
  headSchema: ValidateFunction;
  arrayKey: string;
  tail?: object;
}

/** Record count and watermark (latest recorded_at, ms) of a source's hour: the same row for every source. */
export type SourceStats = RowOf<'PubTripStats'>;

/** One source of the hourly files: its queries take `$1` zone, `$2` hour, then `extraParams`. */
export interface Source {
  /** the rows query (its text is also what bench/publisher.bench.ts copies out) */
  rowsQuery: NamedQuery;
  /** parameters of both queries after ($1 zone, $2 hour) */
  extraParams: readonly unknown[];
  /** the record count and watermark of zone `zoneId`'s UTC hour starting at `hour` (one row) */
  stats(snap: Snapshot, zoneId: string, hour: Date): Promise<SourceStats[]>;
  /** the rows of that hour, for the record mappers */
  rows(snap: Snapshot, zoneId: string, hour: Date): AsyncGenerator<Row>;
}

/** The parameters every source query starts with: `$1` zone, `$2` hour. */
type HourParams<E extends readonly unknown[]> = [zoneId: string | null, hour: Date | string | null, ...E];

export interface SourceOptions {
  /** when this publication runs (the telemetry privacy cut) */
  now: Date;
  /** minutes after a trip's end before its telemetry is published (MDS_TELEMETRY_TRIP_DELAY_MINUTES) */
  telemetryTripDelayMinutes: number;
}

/**
 * The validators of the hot path: every record of every file goes through one. An instance of its
 * own because it stops at the first error (`allErrors: false`, 15–40 % cheaper per record than the
 * shared request-body instance, which collects all errors for 4xx details); a failing file is
 * refused either way and one error is enough to name the bug. Compiled once per process.
 */
const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
const compiled = new Map<object, ValidateFunction>();
function compileOnce(schema: object): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) compiled.set(schema, (fn = ajv.compile(schema)));
  return fn;
}

/** A source whose rows query and stats query take the same parameters (`$1` zone, `$2` hour, then its own). */
function hourSource<E extends readonly unknown[]>(
  rowsQuery: TypedQuery<HourParams<E>, Row>,
  statsQuery: NoInfer<TypedQuery<HourParams<E>, SourceStats>>,
  extraParams: NoInfer<Readonly<E>>,
): Source {
  const params = (zoneId: string, hour: Date): HourParams<E> => [zoneId, hourParam(hour), ...extraParams];
  return {
    rowsQuery,
    extraParams,
    stats: (snap, zoneId, hour) => snap.query(statsQuery, params(zoneId, hour)),
    rows: (snap, zoneId, hour) => snap.stream(rowsQuery, params(zoneId, hour)),
  };
}

export function sourceOf(source: HourlyFeed['source'], opts: SourceOptions): Source {
  switch (source) {
    case 'trips':
      return hourSource(sql('MdsTripsOfHour'), sql('PubTripStats'), []);
    case 'events':
      return hourSource(sql('MdsEventsOfHour'), sql('PubEventStats'), []);
    case 'telemetry':
      return hourSource(sql('MdsTelemetryOfHour'), sql('PubTelemetryStats'), [opts.now, opts.telemetryTripDelayMinutes]);
  }
}

/** The record with its publication_time. */
function published<T extends object>(rec: T, row: { recorded_ms?: number | string }, pub: PublicationTime): T & { publication_time: number } {
  return { ...rec, publication_time: pub(Number(row.recorded_ms)) };
}

/**
 * Each file's rendering, by the catalogue's id: a file added to HOURLY_FEEDS without one, or one here
 * the catalogue does not have, does not compile. Built on first use (its validators compile then).
 */
const RENDERINGS: { readonly [id in HourlyFeedId]: () => Rendering } = {
  'mds-2.0-trips': () => ({
    map: (r: TripRow, p, pub) => published(toMdsTrip(r, p), r, pub),
    record: compileOnce(MdsTripSchema),
    head: (ms) => mds20Head(ms),
    headSchema: compileOnce(MdsTripsHeadSchema),
    arrayKey: 'trips',
  }),
  'mds-2.0-events': () => ({
    map: (r: EventRow, p, pub) => published(toMdsEvent(r, p), r, pub),
    record: compileOnce(MdsEventSchema),
    head: (ms) => mds20Head(ms),
    headSchema: compileOnce(MdsEventsHeadSchema),
    arrayKey: 'events',
    tail: { links: {} },
  }),
  'mds-1.2-trips': () => ({
    map: (r: TripRow, p) => toTrip12(r, p),
    record: compileOnce(Trip12Schema),
    head: () => ({ version: '1.2.0' }),
    headSchema: compileOnce(LegacyHeadSchema),
    arrayKey: 'data.trips',
  }),
  'mds-1.2-status_changes': () => ({
    map: (r: EventRow, p) => toStatusChange12(r, p),
    record: compileOnce(StatusChange12Schema),
    head: () => ({ version: '1.2.0' }),
    headSchema: compileOnce(LegacyHeadSchema),
    arrayKey: 'data.status_changes',
  }),
  'mds-0.4-trips': () => ({
    map: (r: TripRow, p) => toTrip04(r, p),
    record: compileOnce(Trip04Schema),
    head: () => ({ version: '0.4.1' }),
    headSchema: compileOnce(LegacyHeadSchema),
    arrayKey: 'data.trips',
  }),
  'mds-0.4-status_changes': () => ({
    map: (r: EventRow, p) => toStatusChange04(r, p),
    record: compileOnce(StatusChange04Schema),
    head: () => ({ version: '0.4.1' }),
    headSchema: compileOnce(LegacyHeadSchema),
    arrayKey: 'data.status_changes',
  }),
  'insurance-2.0-trips': () => ({
    map: (r: TripRow, p) => toInsuranceTrip(r, p),
    record: compileOnce(InsuranceTripSchema),
    head: (ms) => insuranceHead(ms),
    headSchema: compileOnce(InsuranceHeadSchema),
    arrayKey: 'trips',
  }),
  'mds-2.0-telemetry': () => ({
    map: (r: TelemetryRow, p) => toMdsTelemetry(r, p),
    record: compileOnce(MdsTelemetrySchema),
    head: (ms) => mds20Head(ms),
    headSchema: compileOnce(MdsTelemetryHeadSchema),
    arrayKey: 'telemetry',
  }),
};

const renderings = new Map<HourlyFeedId, Rendering>();

/** The rendering of one file (built and compiled once per process). */
export function renderingOf(f: HourlyFeed): Rendering {
  let r = renderings.get(f.id);
  if (!r) renderings.set(f.id, (r = RENDERINGS[f.id]()));
  return r;
}
