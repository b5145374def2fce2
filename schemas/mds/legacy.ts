/** Legacy MDS 1.2.0 and 0.4.1 records as we emit them (validated before a file is stored). */
import { featurePoint, nonNegativeInt, timestampMs, uuid } from './common.js';

const vehicleType = { enum: ['scooter', 'bicycle'] } as const;
const propulsion = { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['electric', 'electric_assist', 'human'] } } as const;
const batteryPct = { type: ['number', 'null'], minimum: 0, maximum: 1 } as const;
const route = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'features'],
  properties: { type: { const: 'FeatureCollection' }, features: { type: 'array', minItems: 2, items: featurePoint } },
} as const;
const name = { type: 'string', minLength: 1, maxLength: 255 } as const;
const common = { provider_name: name, provider_id: uuid, device_id: uuid, vehicle_id: name, vehicle_type: vehicleType } as const;

export const StatusChange12Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider_name', 'provider_id', 'device_id', 'vehicle_id', 'vehicle_type', 'propulsion_types', 'vehicle_state', 'event_types', 'event_time', 'event_location'],
  properties: {
    ...common,
    propulsion_types: propulsion,
    vehicle_state: { enum: ['available', 'elsewhere', 'non_operational', 'on_trip', 'removed', 'reserved', 'unknown'] },
    event_types: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[a-z_]+$' } },
    event_time: timestampMs,
    event_location: featurePoint,
    battery_pct: batteryPct,
    trip_id: uuid,
  },
} as const;

export const Trip12Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider_name', 'provider_id', 'device_id', 'vehicle_id', 'vehicle_type', 'propulsion_types', 'trip_id', 'trip_duration', 'trip_distance', 'route', 'accuracy', 'start_time', 'end_time'],
  properties: {
    ...common,
    propulsion_types: propulsion,
    trip_id: uuid,
    trip_duration: nonNegativeInt,
    trip_distance: nonNegativeInt,
    route,
    accuracy: nonNegativeInt,
    start_time: timestampMs,
    end_time: timestampMs,
  },
} as const;

export const StatusChange04Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider_name', 'provider_id', 'device_id', 'vehicle_id', 'vehicle_type', 'propulsion_type', 'event_type', 'event_type_reason', 'event_time', 'event_location'],
  properties: {
    ...common,
    propulsion_type: propulsion,
    event_type: { enum: ['available', 'reserved', 'unavailable', 'removed'] },
    event_type_reason: {
      enum: ['service_start', 'user_drop_off', 'rebalance_drop_off', 'maintenance_drop_off', 'agency_drop_off', 'user_pick_up', 'low_battery', 'maintenance', 'service_end', 'rebalance_pick_up', 'maintenance_pick_up', 'agency_pick_up'],
    },
    event_time: timestampMs,
    event_location: featurePoint,
    battery_pct: batteryPct,
    associated_trip: uuid,
  },
} as const;

export const Trip04Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider_name', 'provider_id', 'device_id', 'vehicle_id', 'vehicle_type', 'propulsion_type', 'trip_id', 'trip_duration', 'trip_distance', 'route', 'accuracy', 'start_time', 'end_time'],
  properties: {
    ...common,
    propulsion_type: propulsion,
    trip_id: uuid,
    trip_duration: nonNegativeInt,
    trip_distance: nonNegativeInt,
    route,
    accuracy: nonNegativeInt,
    start_time: timestampMs,
    end_time: timestampMs,
  },
} as const;

export const LegacyHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version'],
  properties: { version: { enum: ['1.2.0', '0.4.1'] } },
} as const;
