/**
 * Row shapes of the source queries in sql/queries/mds.sql: what the streaming sources yield and the
 * record mappers take, as the typed-SQL generator reads them from the database (lib/core/sql/queries.gen.ts):
 * a column renamed, retyped or made nullable in the SQL changes them, and every mapper that reads it
 * fails the type check. Nullability the generator cannot prove is asserted in the SQL (`-- not null:`
 * lines, each with its reason); the enum-like text columns (form factor, propulsion, trip type, ride
 * type, an event's vehicle state) come out as the literal unions of their tables' CHECK constraints.
 * Times are integer milliseconds, points are lat/lng in WGS 84.
 */
import type { RowOf } from '../../core/sql/typed.js';

/** A trip with its vehicle, type and zone: feeds MDS 2.0 / 1.2 / 0.4 trips and insurance trips. */
export type TripRow = RowOf<'MdsTripsOfHour'>;

/**
 * An MDS 2.0 event with the vehicle fields the legacy status changes need (an hour's events; a page
 * of /events/recent, MdsEventsPage, has the same columns and its cursor position).
 */
export type EventRow = RowOf<'MdsEventsOfHour'>;

/** A telemetry point of an hour. */
export type TelemetryRow = RowOf<'MdsTelemetryOfHour'>;

/** A vehicle with its type. */
export type VehicleRow = RowOf<'MdsVehicles'>;

/**
 * A vehicle with its last event (event columns unprefixed, as EventRow's) and last telemetry
 * (`telemetry_*`, as TelemetryRow's). Its `vehicle_state` is plain text: vehicle_current_state copies
 * it from an event but has no CHECK of its own, and no mapper needs it narrower.
 */
export type VehicleStatusRow = RowOf<'MdsVehicleStatus'>;

/** What the mappers need to know about us: `Config` satisfies it. */
export interface Provider {
  readonly providerId: string;
  readonly providerName: string;
}
