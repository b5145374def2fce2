/**
 * Row shapes of the source queries in sql/queries/mds.sql: what the streaming sources yield and the
 * record mappers take. Times are integer milliseconds, points are lat/lng in WGS 84.
 */

/** A trip with its vehicle, type and zone: feeds MDS 2.0 / 1.2 / 0.4 trips and insurance trips. */
export interface TripRow {
  trip_id: string;
  device_id: string;
  vehicle_code: string;
  license_plate: string;
  license_plate_id: string;
  form_factor: 'scooter' | 'bicycle';
  propulsion_type: 'electric' | 'electric_assist' | 'human';
  trip_type: 'rider' | 'maas' | 'operator';
  start_ms: number;
  end_ms: number;
  start_lat: number;
  start_lng: number;
  end_lat: number;
  end_lng: number;
  distance_m: number;
  duration_s: number;
  is_group_ride: boolean;
  ride_type: 'solo' | 'group-host' | 'group-guest';
  user_ride_count: number;
  city: string;
  country: string;
  recorded_ms: number;
}

/** An MDS 2.0 event with the vehicle fields the legacy status changes need. */
export interface EventRow {
  event_id: string;
  device_id: string;
  event_types: string[];
  vehicle_state: string;
  ts_ms: number;
  lat: number;
  lng: number;
  battery_percent: number | null;
  trip_ids: string[] | null;
  vehicle_code: string;
  form_factor: 'scooter' | 'bicycle';
  propulsion_type: 'electric' | 'electric_assist' | 'human';
  recorded_ms?: number;
}

export interface TelemetryRow {
  telemetry_id: string;
  device_id: string;
  telemetry_ms: number;
  telemetry_lat: number;
  telemetry_lng: number;
  telemetry_battery_percent: number | null;
  telemetry_trip_id: string | null;
}

export interface VehicleRow {
  device_id: string;
  vehicle_code: string;
  form_factor: 'scooter' | 'bicycle';
  propulsion_type: 'electric' | 'electric_assist' | 'human';
  max_speed_kph: number;
  make: string;
  model: string;
}

/** A vehicle with its last event (event fields unprefixed) and last telemetry (`telemetry_*`). */
export interface VehicleStatusRow extends EventRow, TelemetryRow {
  vehicle_battery_percent: number;
  vehicle_lat: number;
  vehicle_lng: number;
}

/** What the mappers need to know about us: `Config` satisfies it. */
export interface Provider {
  readonly providerId: string;
  readonly providerName: string;
}
