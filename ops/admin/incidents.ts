/**
 * Incidents raised by operator staff (`ops incidents add|update|list`): a crash the street team saw,
 * a vandalised vehicle, a remote takeover. They are served to cities with the TOMP tickets' ones by
 * the MDS 2.1 /incidents endpoint (api/feeds/incidents.ts); the table and its rules are migration
 * 000330's.
 */
import type { Db } from '../../lib/core/db.js';
import { sql, type RowOf } from '../../lib/core/sql/typed.js';
import { isUuid } from '../../lib/core/uuid.js';
import { INCIDENT_TYPES_21, type IncidentType } from '../../schemas/mds/v21.js';
import { AdminError } from './credentials.js';

export interface IncidentInput {
  /** the zone the operator names: the vehicle must be in it */
  zone: string;
  /** the vehicle's id or printed code */
  vehicle: string;
  type: string;
  time: Date;
  lat?: number;
  lng?: number;
  /** the trip the vehicle was on; by default the rental running at `time`, if any */
  trip?: string;
  description?: string;
  severity?: string;
  reportId?: string;
  reportType?: string;
  preliminary?: boolean;
}

export interface IncidentAdded {
  incidentId: string;
  deviceId: string;
  tripId: string | null;
  /** the telemetry point that carries the incident (its time and place for cities), or null */
  telemetryTs: Date | null;
}

const isType = (t: string): t is IncidentType => (INCIDENT_TYPES_21 as readonly string[]).includes(t);

/** Adds an incident; operator mistakes (unknown vehicle, wrong zone, bad type or place) are AdminErrors. */
export async function addIncident(db: Db, now: Date, input: IncidentInput): Promise<IncidentAdded> {
  if (!isType(input.type)) throw new AdminError(`incident type ${input.type}: use one of ${INCIDENT_TYPES_21.join(', ')} (MDS 2.1)`);
  if (Number.isNaN(input.time.getTime())) throw new AdminError('--time must be an ISO 8601 date-time (2026-11-21T09:30:00Z)');
  if (input.time.getTime() > now.getTime() + 60_000) throw new AdminError('--time is in the future');
  if ((input.lat === undefined) !== (input.lng === undefined)) throw new AdminError('give --lat and --lng together, or neither');
  if (input.lat !== undefined && (!(Math.abs(input.lat) <= 90) || !(Math.abs(input.lng!) <= 180))) {
    throw new AdminError('--lat must be within ±90 and --lng within ±180 (WGS 84 degrees)');
  }
  if (input.trip !== undefined && !isUuid(input.trip)) throw new AdminError('--trip must be a trip id (uuid)');
  const byId = isUuid(input.vehicle) ? input.vehicle.toLowerCase() : null;
  const vehicle = await db.maybeOne(sql('IncidentVehicle'), [byId, byId ? null : input.vehicle.toUpperCase(), input.time]);
  if (!vehicle) throw new AdminError(`no vehicle ${input.vehicle} (its id or printed code)`);
  if (vehicle.zone_id !== input.zone) throw new AdminError(`vehicle ${input.vehicle} is in zone ${vehicle.zone_id}, not ${input.zone}`);
  let tripId = vehicle.trip_id;
  if (input.trip !== undefined) {
    const trip = input.trip.toLowerCase();
    if (!(await db.maybeOne(sql('IncidentTripOfVehicle'), [vehicle.device_id, trip])))
      throw new AdminError(`trip ${trip} is not a rental of vehicle ${input.vehicle}`);
    tripId = trip;
  }
  const row = await db.one(sql('IncidentInsertOps'), [
    input.zone,
    vehicle.device_id,
    tripId,
    input.type,
    input.time,
    input.lng ?? null,
    input.lat ?? null,
    input.description ?? null,
    input.severity ?? null,
    input.reportId ?? null,
    input.reportType ?? null,
    input.preliminary ?? null,
  ]);
  return { incidentId: row.incident_id, deviceId: vehicle.device_id, tripId, telemetryTs: row.telemetry_ts };
}

/** Changes an incident's description, severity or preliminary flag; its last_updated moves. */
export async function updateIncident(db: Db, incidentId: string, change: { description?: string; severity?: string; preliminary?: boolean }): Promise<void> {
  if (change.description === undefined && change.severity === undefined && change.preliminary === undefined) {
    throw new AdminError('nothing to change: give --description, --severity, --preliminary or --final');
  }
  const row = await db.maybeOne(sql('IncidentUpdateOps'), [incidentId, change.description ?? null, change.severity ?? null, change.preliminary ?? null]);
  if (!row) throw new AdminError(`no incident ${incidentId}`);
}

/** The newest incidents, of one zone or every zone. */
export function listIncidents(db: Db, zone: string | undefined, limit: number): Promise<Array<RowOf<'IncidentList'>>> {
  return db.many(sql('IncidentList'), [zone ?? null, limit]);
}
