/**
 * MDS 2.0 records and file envelopes as we emit them: the one description of each record. The
 * publisher validates every record of a file with them before it is stored, the record types are
 * derived from them (`FromSchema`), and the feeds' OpenAPI document publishes them
 * (api/openapi/records-feeds.ts). Tighter than the official models where we always emit a member.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { location, nonNegativeInt, percent, PROPULSION_TYPES_20, timestampMs, uuid, VEHICLE_STATES_20, VEHICLE_TYPES_20 } from './common.js';
import { incidentIds } from './v21.js';

/** modes/micromobility/accessibility-attributes */
const accessibilityAttributes = { type: 'array', uniqueItems: true, items: { enum: ['adaptive'] } } as const;
/** data-types/string */
const text255 = { type: 'string', maxLength: 255 } as const;

export const MdsTripSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'provider_id',
    'device_id',
    'trip_id',
    'start_time',
    'end_time',
    'start_location',
    'end_location',
    'duration',
    'distance',
    'accessibility_attributes',
    'trip_type',
  ],
  properties: {
    provider_id: uuid,
    device_id: uuid,
    trip_id: uuid,
    start_time: timestampMs,
    end_time: timestampMs,
    start_location: location,
    end_location: location,
    duration: { ...nonNegativeInt, description: 'seconds' },
    distance: { ...nonNegativeInt, description: 'meters' },
    accessibility_attributes: accessibilityAttributes,
    trip_type: { type: 'array', minItems: 1, maxItems: 1, items: { enum: ['rider', 'rebalance', 'maintenance'] } },
    // when the record first became available through the feed (issue 16; the publication log)
    publication_time: timestampMs,
  },
} as const;
export type MdsTrip = FromSchema<typeof MdsTripSchema>;

export const MdsEventSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['event_id', 'device_id', 'provider_id', 'event_types', 'vehicle_state', 'timestamp', 'location', 'trip_ids'],
  properties: {
    event_id: uuid,
    device_id: uuid,
    provider_id: uuid,
    event_types: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', pattern: '^[a-z_]+$' } },
    vehicle_state: { enum: VEHICLE_STATES_20 },
    timestamp: timestampMs,
    location,
    battery_percent: percent,
    trip_ids: { type: 'array', uniqueItems: true, items: uuid },
    publication_time: timestampMs,
  },
} as const;
export type MdsEvent = FromSchema<typeof MdsEventSchema>;

/** One telemetry point: of the hourly /telemetry file, and a vehicle status' last_telemetry. */
export const MdsTelemetrySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['telemetry_id', 'device_id', 'provider_id', 'timestamp', 'location', 'trip_ids', 'journey_id'],
  properties: {
    telemetry_id: uuid,
    device_id: uuid,
    provider_id: uuid,
    timestamp: timestampMs,
    location,
    battery_percent: percent,
    trip_ids: { anyOf: [{ type: 'array', minItems: 1, uniqueItems: true, items: uuid }, { type: 'null' }] },
    // MDS: the journey's id when the mode uses journeys, else null; micromobility trips have none
    journey_id: { anyOf: [uuid, { type: 'null' }], description: 'always null: we do not use journeys' },
    // MDS 2.1's one addition to telemetry, on a point that an incident references and on no other
    // (docs/feeds-access.md "Incidents": why 2.0 answers carry it; the official 2.0 model admits it)
    incident_ids: { ...incidentIds, description: 'MDS 2.1: the incidents (GET /incidents) this point is the time and place of; absent when none' },
  },
} as const;
export type MdsTelemetry = FromSchema<typeof MdsTelemetrySchema>;

/** A vehicle of /vehicles. */
export const MdsVehicleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['device_id', 'provider_id', 'vehicle_id', 'vehicle_type', 'propulsion_types', 'maximum_speed', 'vehicle_attributes', 'accessibility_attributes'],
  properties: {
    device_id: uuid,
    provider_id: uuid,
    vehicle_id: { ...text255, minLength: 1, description: 'the short code printed on the vehicle' },
    vehicle_type: { enum: VEHICLE_TYPES_20 },
    propulsion_types: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: PROPULSION_TYPES_20 } },
    maximum_speed: { ...nonNegativeInt, description: 'km/h' },
    vehicle_attributes: { type: 'object', additionalProperties: false, required: ['make', 'model'], properties: { make: text255, model: text255 } },
    accessibility_attributes: accessibilityAttributes,
  },
} as const;
export type MdsVehicle = FromSchema<typeof MdsVehicleSchema>;

/** A vehicle's last event and last telemetry (/vehicles/status). */
export const MdsVehicleStatusSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['device_id', 'provider_id', 'last_event', 'last_telemetry'],
  properties: { device_id: uuid, provider_id: uuid, last_event: MdsEventSchema, last_telemetry: MdsTelemetrySchema },
} as const;
export type MdsVehicleStatus = FromSchema<typeof MdsVehicleStatusSchema>;

const head = {
  version: { const: '2.0.0' },
  last_updated: { type: 'object', additionalProperties: false, required: ['last_updated'], properties: { last_updated: timestampMs } },
  ttl: { type: 'object', additionalProperties: false, required: ['ttl'], properties: { ttl: nonNegativeInt } },
} as const;

/** Head of the trips file (the records are validated one by one while streaming). */
export const MdsTripsHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'last_updated', 'ttl'],
  properties: head,
} as const;

/** Head and tail of the historical events file. */
export const MdsEventsHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'last_updated', 'ttl'],
  properties: head,
} as const;

/** Head of the telemetry file (the same fields as the trips and events heads). */
export const MdsTelemetryHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'last_updated', 'ttl'],
  properties: head,
} as const;
