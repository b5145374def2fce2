/** MDS 2.0 records and file envelopes as we emit them (validated before a file is stored). */
import { location, nonNegativeInt, percent, timestampMs, uuid, VEHICLE_STATES_20 } from './common.js';

export const MdsTripSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['provider_id', 'device_id', 'trip_id', 'start_time', 'end_time', 'start_location', 'end_location', 'duration', 'distance', 'accessibility_attributes', 'trip_type'],
  properties: {
    provider_id: uuid,
    device_id: uuid,
    trip_id: uuid,
    start_time: timestampMs,
    end_time: timestampMs,
    start_location: location,
    end_location: location,
    duration: nonNegativeInt,
    distance: nonNegativeInt,
    accessibility_attributes: { type: 'array', items: { enum: ['adaptive'] } },
    trip_type: { type: 'array', minItems: 1, maxItems: 1, items: { enum: ['rider', 'rebalance', 'maintenance'] } },
    // when the record first became available through the feed (issue 16; the publication log)
    publication_time: timestampMs,
  },
} as const;

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

/** One telemetry point of the hourly /telemetry file. */
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
    journey_id: { type: 'null' },
  },
} as const;

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

/** Head of the telemetry file. */
export const MdsTelemetryHeadSchema = MdsTripsHeadSchema;
