/** Building blocks of the MDS record schemas (our own; the official ones are checked in tests). */

export { UUID_SCHEMA as uuid } from '../../lib/uuid.js';
/** integer milliseconds since the Unix epoch, not before 2018 (MDS minimum) */
export const timestampMs = { type: 'integer', minimum: 1514764800000 } as const;
export const nonNegativeInt = { type: 'integer', minimum: 0 } as const;
export const percent = { type: 'integer', minimum: 0, maximum: 100 } as const;

export const location = {
  type: 'object',
  additionalProperties: false,
  required: ['lat', 'lng'],
  properties: { lat: { type: 'number', minimum: -90, maximum: 90 }, lng: { type: 'number', minimum: -180, maximum: 180 } },
} as const;

export const featurePoint = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'properties', 'geometry'],
  properties: {
    type: { const: 'Feature' },
    properties: { type: 'object', additionalProperties: false, required: ['timestamp'], properties: { timestamp: timestampMs } },
    geometry: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'coordinates'],
      properties: {
        type: { const: 'Point' },
        coordinates: {
          type: 'array',
          minItems: 2,
          maxItems: 2,
          items: [{ type: 'number', minimum: -180, maximum: 180 }, { type: 'number', minimum: -90, maximum: 90 }],
          // never applies (maxItems 2), but gives the array a type for readers of the OpenAPI document (`items` there)
          additionalItems: { type: 'number' },
        },
      },
    },
  },
} as const;

export const VEHICLE_STATES_20 = ['removed', 'available', 'non_operational', 'reserved', 'on_trip', 'non_contactable', 'missing', 'elsewhere'] as const;
