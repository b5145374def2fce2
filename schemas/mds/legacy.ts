/**
 * Legacy MDS 1.2.0 and 0.4.1 records as we emit them: the one description of each record. The
 * publisher validates the hourly files' records with them, the record types are derived from them
 * (`FromSchema`), and the legacy OpenAPI document publishes them (api/openapi/records-feeds.ts).
 * battery_pct is optional in both official versions; we always write it (null when unknown).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { featurePoint, nonNegativeInt, timestampMs, uuid } from './common.js';

const vehicleType = { enum: ['scooter', 'bicycle'] } as const;
const propulsion = { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['electric', 'electric_assist', 'human'] } } as const;
const batteryPct = { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'a fraction of 1; null when unknown' } as const;
const route = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'features'],
  properties: { type: { const: 'FeatureCollection' }, features: { type: 'array', minItems: 2, items: featurePoint } },
} as const;
const name = { type: 'string', minLength: 1, maxLength: 255 } as const;
const common = {
  provider_name: name,
  provider_id: uuid,
  device_id: uuid,
  vehicle_id: { ...name, description: 'the code printed on the vehicle' },
  vehicle_type: vehicleType,
} as const;

/** 1.2.0 vehicle_state */
const state12 = { enum: ['available', 'elsewhere', 'non_operational', 'on_trip', 'removed', 'reserved', 'unknown'] } as const;
/** 1.2.0 vehicle_events (the vocabulary is lib/feeds/mds/legacy.ts EVENTS_12) */
const eventTypes12 = { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[a-z_]+$' } } as const;
/** 0.4.1 event_type_reason */
const eventTypeReason04 = {
  enum: [
    'service_start',
    'user_drop_off',
    'rebalance_drop_off',
    'maintenance_drop_off',
    'agency_drop_off',
    'user_pick_up',
    'low_battery',
    'maintenance',
    'service_end',
    'rebalance_pick_up',
    'maintenance_pick_up',
    'agency_pick_up',
  ],
} as const;
const currentLocation = { ...featurePoint, description: 'when the vehicle is not on a trip and has moved since its last event' } as const;

export const StatusChange12Schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_name',
    'provider_id',
    'device_id',
    'vehicle_id',
    'vehicle_type',
    'propulsion_types',
    'vehicle_state',
    'event_types',
    'event_time',
    'event_location',
    'battery_pct',
  ],
  properties: {
    ...common,
    propulsion_types: propulsion,
    vehicle_state: state12,
    event_types: eventTypes12,
    event_time: timestampMs,
    event_location: featurePoint,
    battery_pct: batteryPct,
    trip_id: uuid,
  },
} as const;
export type StatusChange12 = FromSchema<typeof StatusChange12Schema>;

export const Trip12Schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_name',
    'provider_id',
    'device_id',
    'vehicle_id',
    'vehicle_type',
    'propulsion_types',
    'trip_id',
    'trip_duration',
    'trip_distance',
    'route',
    'accuracy',
    'start_time',
    'end_time',
  ],
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
export type Trip12 = FromSchema<typeof Trip12Schema>;

export const StatusChange04Schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_name',
    'provider_id',
    'device_id',
    'vehicle_id',
    'vehicle_type',
    'propulsion_type',
    'event_type',
    'event_type_reason',
    'event_time',
    'event_location',
    'battery_pct',
  ],
  properties: {
    ...common,
    propulsion_type: propulsion,
    event_type: { enum: ['available', 'reserved', 'unavailable', 'removed'] },
    event_type_reason: eventTypeReason04,
    event_time: timestampMs,
    event_location: featurePoint,
    battery_pct: batteryPct,
    associated_trip: uuid,
  },
} as const;
export type StatusChange04 = FromSchema<typeof StatusChange04Schema>;

export const Trip04Schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_name',
    'provider_id',
    'device_id',
    'vehicle_id',
    'vehicle_type',
    'propulsion_type',
    'trip_id',
    'trip_duration',
    'trip_distance',
    'route',
    'accuracy',
    'start_time',
    'end_time',
  ],
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
export type Trip04 = FromSchema<typeof Trip04Schema>;

/** A vehicle of the 1.2.0 /vehicles answer. */
export const Vehicle12Schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_name',
    'provider_id',
    'device_id',
    'vehicle_id',
    'vehicle_type',
    'propulsion_types',
    'last_event_time',
    'last_vehicle_state',
    'last_event_types',
    'last_event_location',
    'battery_pct',
  ],
  properties: {
    ...common,
    propulsion_types: propulsion,
    last_event_time: timestampMs,
    last_vehicle_state: state12,
    last_event_types: eventTypes12,
    last_event_location: featurePoint,
    current_location: currentLocation,
    battery_pct: batteryPct,
  },
} as const;
export type Vehicle12 = FromSchema<typeof Vehicle12Schema>;

/** A vehicle of the 0.4.1 /vehicles answer: only available, reserved and unavailable vehicles are listed. */
export const Vehicle04Schema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_name',
    'provider_id',
    'device_id',
    'vehicle_id',
    'vehicle_type',
    'propulsion_type',
    'last_event_time',
    'last_event_type',
    'last_event_type_reason',
    'last_event_location',
    'battery_pct',
  ],
  properties: {
    ...common,
    propulsion_type: propulsion,
    last_event_time: timestampMs,
    last_event_type: { enum: ['available', 'reserved', 'unavailable'] },
    last_event_type_reason: eventTypeReason04,
    last_event_location: featurePoint,
    current_location: currentLocation,
    battery_pct: batteryPct,
  },
} as const;
export type Vehicle04 = FromSchema<typeof Vehicle04Schema>;

export const LegacyHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version'],
  properties: { version: { enum: ['1.2.0', '0.4.1'] } },
} as const;
