/**
 * MDS 2.0 records (micromobility mode), shared by the hourly files (publisher) and the realtime
 * endpoints (api/feeds): each record's shape is declared once (shape.ts) over its source row
 * (rows.ts); the mappers (pure functions row → record) and the SQL that builds the realtime lists in
 * Postgres (sources.ts) both come from that declaration.
 */
import type { MdsEvent, MdsTelemetry, MdsTrip, MdsVehicle, MdsVehicleStatus } from '../../../schemas/mds/v2.js';
import type { EventRow, TelemetryRow, TripRow, VehicleRow, VehicleStatusRow } from './rows.js';
import { mapperOf, shape } from './shape.js';
import { MDS_VEHICLE_TYPES, mdsVehicleType } from '../../../schemas/mds/common.js';

// The record types are their schemas' (schemas/mds/v2.ts), the one description of each record.
export type { MdsEvent, MdsTelemetry, MdsTrip, MdsVehicle, MdsVehicleStatus } from '../../../schemas/mds/v2.js';

/** Our form factors in MDS 2.0's vehicle_type vocabulary (schemas/mds/common.ts, shared with the city Policy mapping). */
export { mdsVehicleType };

// The record shapes (lib/feeds/mds/shape.ts): one declaration each, from which come both the JS
// mappers below and the SQL that builds the realtime lists in Postgres (sources.ts).

/**
 * Trip. Every customer ride is an MDS `rider` trip, whichever channel sold it (partner app, MaaS or
 * our own brand): MDS 2.0 micromobility only knows rider / rebalance / maintenance, and the
 * channel is the insurance feed's business (its trip_type keeps rider / maas / operator).
 */
export const MDS_TRIP = shape<TripRow>()(({ uuid, provider, int, float, object, constant }) => ({
  provider_id: provider(),
  device_id: uuid('device_id'),
  trip_id: uuid('trip_id'),
  start_time: int('start_ms'),
  end_time: int('end_ms'),
  start_location: object({ lat: float('start_lat'), lng: float('start_lng') }),
  end_location: object({ lat: float('end_lat'), lng: float('end_lng') }),
  /** seconds */
  duration: int('duration_s'),
  /** meters */
  distance: int('distance_m'),
  accessibility_attributes: constant([]),
  trip_type: constant(['rider']),
}));

export const MDS_EVENT = shape<EventRow>()(({ uuid, text, provider, strings, uuids, int, float, object, optional }) => ({
  event_id: uuid('event_id'),
  device_id: uuid('device_id'),
  provider_id: provider(),
  event_types: strings('event_types'),
  vehicle_state: text('vehicle_state'),
  timestamp: int('ts_ms'),
  location: object({ lat: float('lat'), lng: float('lng') }),
  trip_ids: uuids('trip_ids', { orEmpty: true }),
  // battery_percent is an integer 0–100 in MDS; unknown is left out rather than sent as null
  battery_percent: optional(int('battery_percent')),
}));

export const MDS_TELEMETRY = shape<TelemetryRow>()(({ uuid, uuids, provider, int, float, object, constant, oneOrNull, optional }) => ({
  telemetry_id: uuid('telemetry_id'),
  device_id: uuid('device_id'),
  provider_id: provider(),
  timestamp: int('telemetry_ms'),
  location: object({ lat: float('telemetry_lat'), lng: float('telemetry_lng') }),
  // we do not use journeys (MDS: null when not applicable)
  journey_id: constant(null),
  trip_ids: oneOrNull('telemetry_trip_id'),
  battery_percent: optional(int('telemetry_battery_percent')),
  // MDS 2.1: the incidents whose time and place this point is (schemas/mds/v21.ts); absent on every other point
  incident_ids: optional(uuids('telemetry_incident_ids')),
}));

export const MDS_VEHICLE = shape<VehicleRow>()(({ uuid, text, provider, int, vocab, oneOrNull, object, constant }) => ({
  device_id: uuid('device_id'),
  provider_id: provider(),
  vehicle_id: text('vehicle_code'),
  vehicle_type: vocab('form_factor', MDS_VEHICLE_TYPES, 'other'),
  propulsion_types: oneOrNull('propulsion_type'),
  maximum_speed: int('max_speed_kph'),
  vehicle_attributes: object({ make: text('make'), model: text('model') }),
  accessibility_attributes: constant([]),
}));

/** A vehicle's last event and last telemetry (VehicleStatusRow holds both, telemetry `telemetry_*`). */
export const MDS_VEHICLE_STATUS = shape<VehicleStatusRow>()(({ uuid, provider, object }) => ({
  device_id: uuid('device_id'),
  provider_id: provider(),
  last_event: object(MDS_EVENT),
  last_telemetry: object(MDS_TELEMETRY),
}));

export const toMdsTrip = mapperOf<TripRow, MdsTrip>(MDS_TRIP);
export const toMdsEvent = mapperOf<EventRow, MdsEvent>(MDS_EVENT);
export const toMdsTelemetry = mapperOf<TelemetryRow, MdsTelemetry>(MDS_TELEMETRY);
export const toMdsVehicle = mapperOf<VehicleRow, MdsVehicle>(MDS_VEHICLE);
export const toMdsVehicleStatus = mapperOf<VehicleStatusRow, MdsVehicleStatus>(MDS_VEHICLE_STATUS);
