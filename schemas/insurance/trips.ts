/** The insurance trip record and file head as we emit them (requirement §2.6). */
import { location, nonNegativeInt, timestampMs, uuid } from '../mds/common.js';

export const InsuranceTripSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['trip_id', 'device_id', 'provider_id', 'accessibility_attributes', 'city', 'country', 'distance', 'duration', 'average_ride_speed',
    'start_location', 'end_location', 'start_time', 'end_time', 'is_group_ride', 'license_plate', 'license_plate_id', 'ride_type', 'trip_type',
    'user_ride_count', 'vehicle_short_id'],
  properties: {
    trip_id: uuid,
    device_id: uuid,
    provider_id: uuid,
    accessibility_attributes: { type: 'array', items: { type: 'string' } },
    city: { type: 'string', minLength: 1 },
    country: { type: 'string', pattern: '^[A-Z]{2}$' },
    distance: nonNegativeInt,
    duration: nonNegativeInt,
    average_ride_speed: { type: 'number', minimum: 0 },
    start_location: location,
    end_location: location,
    start_time: timestampMs,
    end_time: timestampMs,
    is_group_ride: { type: 'boolean' },
    license_plate: { type: 'string' },
    license_plate_id: { type: 'string' },
    ride_type: { enum: ['solo', 'group-host', 'group-guest'] },
    trip_type: { type: 'array', minItems: 1, maxItems: 1, items: { enum: ['rider', 'maas', 'operator'] } },
    user_ride_count: { type: 'integer', minimum: 1 },
    vehicle_short_id: { type: 'string', pattern: '^[A-Z0-9]{4}$' },
  },
} as const;

export const InsuranceHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['last_updated', 'version'],
  properties: { last_updated: timestampMs, version: { const: '2.0.0' } },
} as const;
