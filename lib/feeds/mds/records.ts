/**
 * MDS 2.0 record mappers (micromobility mode), shared by the hourly files (publisher) and the
 * realtime endpoints (api/feeds). Pure functions from a source row (rows.ts) to the record.
 */
import type { EventRow, Provider, TelemetryRow, TripRow, VehicleRow, VehicleStatusRow } from './rows.js';

export interface MdsLocation {
  lat: number;
  lng: number;
}

export interface MdsTrip {
  provider_id: string;
  device_id: string;
  trip_id: string;
  start_time: number;
  end_time: number;
  start_location: MdsLocation;
  end_location: MdsLocation;
  /** seconds */
  duration: number;
  /** meters */
  distance: number;
  accessibility_attributes: string[];
  trip_type: string[];
}

export interface MdsEvent {
  event_id: string;
  device_id: string;
  provider_id: string;
  event_types: string[];
  vehicle_state: string;
  timestamp: number;
  location: MdsLocation;
  battery_percent?: number;
  trip_ids: string[];
}

export interface MdsTelemetry {
  telemetry_id: string;
  device_id: string;
  provider_id: string;
  timestamp: number;
  location: MdsLocation;
  battery_percent?: number;
  journey_id: string | null;
  trip_ids: string[] | null;
}

export interface MdsVehicle {
  device_id: string;
  provider_id: string;
  vehicle_id: string;
  vehicle_type: string;
  propulsion_types: string[];
  maximum_speed: number;
  vehicle_attributes: { make: string; model: string };
  accessibility_attributes: string[];
}

export interface MdsVehicleStatus {
  device_id: string;
  provider_id: string;
  last_event: MdsEvent;
  last_telemetry: MdsTelemetry;
}

/** Our form factors in MDS 2.0's vehicle_type vocabulary (GBFS 3 form_factor). */
export function mdsVehicleType(formFactor: string): string {
  return formFactor === 'scooter' ? 'scooter_standing' : formFactor === 'bicycle' ? 'bicycle' : 'other';
}

function loc(lat: number, lng: number): MdsLocation {
  return { lat: Number(lat), lng: Number(lng) };
}

/**
 * Trip. Every customer ride is an MDS `rider` trip, whichever channel sold it (partner app, MaaS or
 * our own brand): MDS 2.0 micromobility only knows rider / rebalance / maintenance, and the
 * channel is the insurance feed's business (its trip_type keeps rider / maas / operator).
 */
export function toMdsTrip(row: TripRow, p: Provider): MdsTrip {
  return {
    provider_id: p.providerId,
    device_id: row.device_id,
    trip_id: row.trip_id,
    start_time: Number(row.start_ms),
    end_time: Number(row.end_ms),
    start_location: loc(row.start_lat, row.start_lng),
    end_location: loc(row.end_lat, row.end_lng),
    duration: row.duration_s,
    distance: row.distance_m,
    accessibility_attributes: [],
    trip_type: ['rider'],
  };
}

export function toMdsEvent(row: EventRow, p: Provider): MdsEvent {
  const e: MdsEvent = {
    event_id: row.event_id,
    device_id: row.device_id,
    provider_id: p.providerId,
    event_types: row.event_types,
    vehicle_state: row.vehicle_state,
    timestamp: Number(row.ts_ms),
    location: loc(row.lat, row.lng),
    trip_ids: row.trip_ids ?? [],
  };
  // battery_percent is an integer 0–100 in MDS; unknown is left out rather than sent as null
  if (row.battery_percent !== null && row.battery_percent !== undefined) e.battery_percent = row.battery_percent;
  return e;
}

export function toMdsTelemetry(row: TelemetryRow, p: Provider): MdsTelemetry {
  const t: MdsTelemetry = {
    telemetry_id: row.telemetry_id,
    device_id: row.device_id,
    provider_id: p.providerId,
    timestamp: Number(row.telemetry_ms),
    location: loc(row.telemetry_lat, row.telemetry_lng),
    // we do not use journeys (MDS: null when not applicable)
    journey_id: null,
    trip_ids: row.telemetry_trip_id ? [row.telemetry_trip_id] : null,
  };
  if (row.telemetry_battery_percent !== null && row.telemetry_battery_percent !== undefined) t.battery_percent = row.telemetry_battery_percent;
  return t;
}

export function toMdsVehicle(row: VehicleRow, p: Provider): MdsVehicle {
  return {
    device_id: row.device_id,
    provider_id: p.providerId,
    vehicle_id: row.vehicle_code,
    vehicle_type: mdsVehicleType(row.form_factor),
    propulsion_types: [row.propulsion_type],
    maximum_speed: row.max_speed_kph,
    vehicle_attributes: { make: row.make, model: row.model },
    accessibility_attributes: [],
  };
}

export function toMdsVehicleStatus(row: VehicleStatusRow, p: Provider): MdsVehicleStatus {
  return {
    device_id: row.device_id,
    provider_id: p.providerId,
    last_event: toMdsEvent(row, p),
    last_telemetry: toMdsTelemetry(row, p),
  };
}
