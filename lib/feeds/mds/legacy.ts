/**
 * Legacy MDS 1.2.0 and 0.4.1 record mappers. Both versions are derived from the same MDS 2.0 events
 * and trips; the vocabulary tables below translate 2.0 vehicle states and event types into the
 * older enums (specs/mds/1.2.0/status_changes.json, specs/mds/0.4.1/status_changes.json). The
 * reasoning for each row is in docs/feeds.md ("Legacy vocabulary").
 */
import type { FeaturePoint } from '../../../schemas/mds/common.js';
import type { StatusChange04, StatusChange12, Trip04, Trip12, Vehicle04, Vehicle12 } from '../../../schemas/mds/legacy.js';
import type { EventRow, Provider, TripRow, VehicleStatusRow } from './rows.js';

// The record types are their schemas' (schemas/mds/legacy.ts), the one description of each record.
export type { StatusChange04, StatusChange12, Trip04, Trip12, Vehicle04, Vehicle12 } from '../../../schemas/mds/legacy.js';

// ---------------------------------------------------------------------------------------------
// Shared shapes
// ---------------------------------------------------------------------------------------------

function featurePoint(lat: number, lng: number, timestamp: number): FeaturePoint {
  return { type: 'Feature', properties: { timestamp: Number(timestamp) }, geometry: { type: 'Point', coordinates: [Number(lng), Number(lat)] } };
}

/**
 * Nominal accuracy (meters) of the route points. The legacy trip record requires the field; our
 * vehicles report consumer-grade GNSS positions, for which 10 m is the usual horizontal accuracy.
 */
const ROUTE_ACCURACY_M = 10;

/** Our form factors in the legacy vehicle_type vocabulary (both versions know scooter and bicycle). */
function legacyVehicleType(formFactor: string): Trip12['vehicle_type'] {
  return formFactor === 'bicycle' ? 'bicycle' : 'scooter';
}

function batteryPct(percent: number | null | undefined): number | null {
  return percent === null || percent === undefined ? null : Math.round(percent) / 100;
}

/** The route of a legacy trip: its start and end points (the file carries no telemetry tracks). */
function route(row: TripRow): Trip12['route'] {
  return {
    type: 'FeatureCollection',
    features: [featurePoint(row.start_lat, row.start_lng, row.start_ms), featurePoint(row.end_lat, row.end_lng, row.end_ms)],
  };
}

const TRIP_EVENTS = new Set(['trip_start', 'trip_end', 'trip_cancel', 'trip_enter_jurisdiction', 'trip_leave_jurisdiction']);

// ---------------------------------------------------------------------------------------------
// 1.2.0
// ---------------------------------------------------------------------------------------------

export type State12 = StatusChange12['vehicle_state'];

/** 2.0 vehicle_state → 1.2 vehicle_state. 1.2 has one `unknown` for both "cannot reach" and "cannot find". */
const STATE_2_TO_12: Readonly<Record<string, State12>> = {
  removed: 'removed',
  available: 'available',
  non_operational: 'non_operational',
  reserved: 'reserved',
  on_trip: 'on_trip',
  elsewhere: 'elsewhere',
  non_contactable: 'unknown',
  missing: 'unknown',
};

/** 1.2 vehicle_event enum. */
const EVENTS_12: ReadonlySet<string> = new Set([
  'agency_drop_off',
  'agency_pick_up',
  'battery_charged',
  'battery_low',
  'comms_lost',
  'comms_restored',
  'compliance_pick_up',
  'decommissioned',
  'located',
  'maintenance',
  'maintenance_pick_up',
  'missing',
  'off_hours',
  'on_hours',
  'provider_drop_off',
  'rebalance_pick_up',
  'reservation_cancel',
  'reservation_start',
  'system_resume',
  'system_suspend',
  'trip_cancel',
  'trip_end',
  'trip_enter_jurisdiction',
  'trip_leave_jurisdiction',
  'trip_start',
  'unspecified',
]);

/** 2.0 event types that 1.2 names differently; any other 2.0 type unknown to 1.2 becomes `unspecified`. */
const EVENT_2_TO_12: Readonly<Record<string, string>> = {
  not_located: 'missing',
  changed_geographies: 'unspecified',
};

/** 1.2's rule: event_types must contain at least one of these for the state (status_changes.json allOf). */
const VALID_EVENTS_12: Readonly<Record<State12, readonly string[]>> = {
  available: [
    'agency_drop_off',
    'battery_charged',
    'comms_restored',
    'located',
    'maintenance',
    'on_hours',
    'provider_drop_off',
    'reservation_cancel',
    'system_resume',
    'trip_cancel',
    'trip_end',
    'unspecified',
  ],
  elsewhere: ['comms_restored', 'located', 'trip_leave_jurisdiction', 'unspecified'],
  non_operational: ['battery_low', 'comms_restored', 'located', 'maintenance', 'off_hours', 'system_suspend', 'unspecified'],
  on_trip: ['comms_restored', 'located', 'trip_enter_jurisdiction', 'trip_start', 'unspecified'],
  removed: ['agency_pick_up', 'comms_restored', 'compliance_pick_up', 'decommissioned', 'located', 'maintenance_pick_up', 'rebalance_pick_up', 'unspecified'],
  reserved: ['comms_restored', 'located', 'reservation_start', 'unspecified'],
  unknown: ['comms_lost', 'missing', 'unspecified'],
};

/** 2.0 (state, event types) → 1.2 (state, event types), keeping 1.2's per-state rule true. */
export function toLegacy12Vocabulary(state: string, eventTypes: readonly string[]): { vehicle_state: State12; event_types: string[] } {
  const vehicle_state = STATE_2_TO_12[state] ?? 'unknown';
  const mapped: string[] = [];
  for (const t of eventTypes) {
    const m = EVENT_2_TO_12[t] ?? (EVENTS_12.has(t) ? t : 'unspecified');
    if (!mapped.includes(m)) mapped.push(m);
  }
  if (!mapped.some((t) => VALID_EVENTS_12[vehicle_state].includes(t))) mapped.push('unspecified');
  return { vehicle_state, event_types: mapped };
}

export function toStatusChange12(row: EventRow, p: Provider): StatusChange12 {
  const v = toLegacy12Vocabulary(row.vehicle_state, row.event_types);
  const sc: StatusChange12 = {
    provider_name: p.providerName,
    provider_id: p.providerId,
    device_id: row.device_id,
    vehicle_id: row.vehicle_code,
    vehicle_type: legacyVehicleType(row.form_factor),
    propulsion_types: [row.propulsion_type],
    vehicle_state: v.vehicle_state,
    event_types: v.event_types,
    event_time: Number(row.ts_ms),
    event_location: featurePoint(row.lat, row.lng, row.ts_ms),
    battery_pct: batteryPct(row.battery_percent),
  };
  // 1.2 carries one trip per status change; our trip events reference exactly one trip
  if (row.trip_ids?.length) sc.trip_id = row.trip_ids[0]!;
  return sc;
}

export function toTrip12(row: TripRow, p: Provider): Trip12 {
  return {
    provider_name: p.providerName,
    provider_id: p.providerId,
    device_id: row.device_id,
    vehicle_id: row.vehicle_code,
    vehicle_type: legacyVehicleType(row.form_factor),
    propulsion_types: [row.propulsion_type],
    trip_id: row.trip_id,
    trip_duration: row.duration_s,
    trip_distance: row.distance_m,
    route: route(row),
    accuracy: ROUTE_ACCURACY_M,
    start_time: Number(row.start_ms),
    end_time: Number(row.end_ms),
  };
}

// ---------------------------------------------------------------------------------------------
// 0.4.1
// ---------------------------------------------------------------------------------------------

/** A 0.4 status change's event type and reason. */
export type Event04 = Pick<StatusChange04, 'event_type' | 'event_type_reason'>;

const has = (types: readonly string[], ...wanted: string[]) => types.some((t) => wanted.includes(t));

/**
 * 2.0 (state, event types) → 0.4 (event_type, event_type_reason), or undefined when 0.4 has no
 * equivalent status change (a reservation without a trip; a position update during a trip).
 * `hasTrip`: the event references a trip (0.4 requires associated_trip for user_pick_up/drop_off).
 */
export function toLegacy04Event(state: string, types: readonly string[], hasTrip: boolean): Event04 | undefined {
  switch (state) {
    case 'available':
      if (hasTrip && has(types, 'trip_end', 'trip_cancel')) return { event_type: 'available', event_type_reason: 'user_drop_off' };
      if (has(types, 'provider_drop_off')) return { event_type: 'available', event_type_reason: 'rebalance_drop_off' };
      if (has(types, 'agency_drop_off')) return { event_type: 'available', event_type_reason: 'agency_drop_off' };
      if (has(types, 'maintenance', 'battery_charged')) return { event_type: 'available', event_type_reason: 'maintenance_drop_off' };
      return { event_type: 'available', event_type_reason: 'service_start' };
    case 'on_trip':
      if (!hasTrip || types.every((t) => t === 'changed_geographies')) return undefined;
      return { event_type: 'reserved', event_type_reason: 'user_pick_up' };
    case 'reserved':
      return hasTrip ? { event_type: 'reserved', event_type_reason: 'user_pick_up' } : undefined;
    case 'non_operational':
      if (has(types, 'battery_low')) return { event_type: 'unavailable', event_type_reason: 'low_battery' };
      if (has(types, 'off_hours')) return { event_type: 'removed', event_type_reason: 'service_end' };
      return { event_type: 'unavailable', event_type_reason: 'maintenance' };
    case 'removed':
      if (has(types, 'rebalance_pick_up')) return { event_type: 'removed', event_type_reason: 'rebalance_pick_up' };
      if (has(types, 'maintenance_pick_up')) return { event_type: 'removed', event_type_reason: 'maintenance_pick_up' };
      if (has(types, 'agency_pick_up', 'compliance_pick_up')) return { event_type: 'removed', event_type_reason: 'agency_pick_up' };
      return { event_type: 'removed', event_type_reason: 'service_end' };
    case 'non_contactable':
    case 'missing':
      return { event_type: 'unavailable', event_type_reason: 'maintenance' };
    case 'elsewhere':
      return { event_type: 'removed', event_type_reason: 'service_end' };
    default:
      return undefined;
  }
}

/** The 0.4 status change of an event, or undefined when 0.4 has no equivalent (leave it out). */
export function toStatusChange04(row: EventRow, p: Provider): StatusChange04 | undefined {
  const trip = row.trip_ids?.[0];
  const e = toLegacy04Event(row.vehicle_state, row.event_types, trip !== undefined);
  if (!e) return undefined;
  const sc: StatusChange04 = {
    provider_name: p.providerName,
    provider_id: p.providerId,
    device_id: row.device_id,
    vehicle_id: row.vehicle_code,
    vehicle_type: legacyVehicleType(row.form_factor),
    propulsion_type: [row.propulsion_type],
    event_type: e.event_type,
    event_type_reason: e.event_type_reason,
    event_time: Number(row.ts_ms),
    event_location: featurePoint(row.lat, row.lng, row.ts_ms),
    battery_pct: batteryPct(row.battery_percent),
  };
  if (trip && (e.event_type_reason === 'user_pick_up' || e.event_type_reason === 'user_drop_off' || row.event_types.some((t) => TRIP_EVENTS.has(t)))) {
    sc.associated_trip = trip;
  }
  return sc;
}

export function toTrip04(row: TripRow, p: Provider): Trip04 {
  const { propulsion_types, ...rest } = toTrip12(row, p);
  return { ...rest, propulsion_type: propulsion_types };
}

// ---------------------------------------------------------------------------------------------
// Legacy vehicles (GET /vehicles): only vehicles that are available, unavailable or reserved
// (taken by a user) in the 0.4 sense; removed and elsewhere vehicles are not on our right of way.
// ---------------------------------------------------------------------------------------------

/** The 0.4 category of a vehicle's last state, or undefined when the legacy vehicles feed omits it. */
function vehicleCategory04(
  row: VehicleStatusRow,
): { event_type: Vehicle04['last_event_type']; event_type_reason: Vehicle04['last_event_type_reason'] } | undefined {
  if (row.vehicle_state === 'removed' || row.vehicle_state === 'elsewhere') return undefined;
  const e = toLegacy04Event(row.vehicle_state, row.event_types, true);
  // 0.4's vehicles feed allows only available / reserved / unavailable; off-hours vehicles stay on street
  if (!e || e.event_type === 'removed') return { event_type: 'unavailable', event_type_reason: 'maintenance' };
  return { event_type: e.event_type, event_type_reason: e.event_type_reason };
}

/** Vehicle 2.0 states that the legacy vehicles feeds return (see vehicleCategory04). */
export const LEGACY_VEHICLE_STATES: readonly string[] = ['available', 'reserved', 'on_trip', 'non_operational', 'non_contactable', 'missing'];

export function toVehicle12(row: VehicleStatusRow, p: Provider): Vehicle12 | undefined {
  if (!vehicleCategory04(row)) return undefined;
  const v = toLegacy12Vocabulary(row.vehicle_state, row.event_types);
  const out: Vehicle12 = {
    provider_name: p.providerName,
    provider_id: p.providerId,
    device_id: row.device_id,
    vehicle_id: row.vehicle_code,
    vehicle_type: legacyVehicleType(row.form_factor),
    propulsion_types: [row.propulsion_type],
    last_event_time: Number(row.ts_ms),
    last_vehicle_state: v.vehicle_state,
    last_event_types: v.event_types,
    last_event_location: featurePoint(row.lat, row.lng, row.ts_ms),
    battery_pct: batteryPct(row.vehicle_battery_percent),
  };
  const current = currentLocation(row);
  if (current) out.current_location = current;
  return out;
}

export function toVehicle04(row: VehicleStatusRow, p: Provider): Vehicle04 | undefined {
  const e = vehicleCategory04(row);
  if (!e) return undefined;
  const out: Vehicle04 = {
    provider_name: p.providerName,
    provider_id: p.providerId,
    device_id: row.device_id,
    vehicle_id: row.vehicle_code,
    vehicle_type: legacyVehicleType(row.form_factor),
    propulsion_type: [row.propulsion_type],
    last_event_time: Number(row.ts_ms),
    last_event_type: e.event_type,
    last_event_type_reason: e.event_type_reason,
    last_event_location: featurePoint(row.lat, row.lng, row.ts_ms),
    battery_pct: batteryPct(row.vehicle_battery_percent),
  };
  const current = currentLocation(row);
  if (current) out.current_location = current;
  return out;
}

/** Legacy vehicles: the current location if it differs from the last event's and the vehicle is not on a trip. */
function currentLocation(row: VehicleStatusRow): FeaturePoint | undefined {
  if (row.vehicle_state === 'on_trip' || (row.vehicle_lat === row.lat && row.vehicle_lng === row.lng)) return undefined;
  return featurePoint(row.vehicle_lat, row.vehicle_lng, row.telemetry_ms);
}
