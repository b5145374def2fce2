/**
 * The insurance trip record and file head as we emit them (requirement §2.6): the one description
 * of the record, which the publisher validates with, the record type derives from and the feeds'
 * OpenAPI document publishes (api/openapi/records-feeds.ts).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { location, nonNegativeInt, timestampMs, uuid } from '../mds/common.js';

export const InsuranceTripSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'trip_id',
    'device_id',
    'provider_id',
    'accessibility_attributes',
    'city',
    'country',
    'distance',
    'duration',
    'average_ride_speed',
    'start_location',
    'end_location',
    'start_time',
    'end_time',
    'is_group_ride',
    'license_plate',
    'license_plate_id',
    'ride_type',
    'trip_type',
    'user_ride_count',
    'vehicle_short_id',
  ],
  properties: {
    trip_id: uuid,
    device_id: uuid,
    provider_id: uuid,
    accessibility_attributes: { type: 'array', items: { type: 'string' } },
    city: { type: 'string', minLength: 1 },
    country: { type: 'string', pattern: '^[A-Z]{2}$' },
    distance: { ...nonNegativeInt, description: 'meters' },
    duration: { ...nonNegativeInt, description: 'seconds' },
    average_ride_speed: { type: 'number', minimum: 0, description: 'km/h, two decimals; 0 for a zero-length ride' },
    start_location: location,
    end_location: location,
    start_time: timestampMs,
    end_time: timestampMs,
    is_group_ride: { type: 'boolean' },
    license_plate: { type: 'string' },
    license_plate_id: { type: 'string' },
    ride_type: { enum: ['solo', 'group-host', 'group-guest'] },
    trip_type: {
      type: 'array',
      minItems: 1,
      maxItems: 1,
      items: { enum: ['rider', 'maas', 'operator'] },
      description: 'the sales channel: rider (partner app), maas, operator (our own brand)',
    },
    user_ride_count: { type: 'integer', minimum: 1 },
    vehicle_short_id: { type: 'string', pattern: '^[A-Z0-9]{4}$', description: 'the 4-character code printed on the vehicle' },
  },
} as const;
export type InsuranceTrip = FromSchema<typeof InsuranceTripSchema>;

export const InsuranceHeadSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['last_updated', 'version'],
  properties: { last_updated: timestampMs, version: { const: '2.0.0' } },
} as const;
