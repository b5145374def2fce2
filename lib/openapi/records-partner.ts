/**
 * Response records of the partner rental API for the documentation (partner-rental-api.md §2), as
 * api/partner/responses.ts builds them. The request bodies are not here: the document imports them
 * from schemas/partner/requests.ts, the schemas the routes validate with.
 */
import type { Schema } from './common.js';
import { schemaRef, UUID_V4 } from './common.js';

const rfc3339Utc = { type: 'string', format: 'date-time', description: 'RFC 3339, UTC, no fractional seconds', examples: ['2026-11-21T09:30:00Z'] };
const minor = (description: string) => ({ type: 'integer', description: `${description}, minor units of the currency` });
const currency = { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 alphabetic code', examples: ['EUR'] };

export const PARTNER_RECORD_SCHEMAS: Record<string, Schema> = {
  Location: {
    type: 'object',
    required: ['latitude', 'longitude'],
    properties: { latitude: { type: 'number', minimum: -90, maximum: 90 }, longitude: { type: 'number', minimum: -180, maximum: 180 } },
  },
  User: {
    type: 'object',
    required: ['id', 'type', 'attributes'],
    properties: {
      id: UUID_V4,
      type: { const: 'user' },
      attributes: {
        type: 'object',
        required: ['email', 'externalId'],
        properties: { email: { type: 'string', description: "the user's real e-mail address" }, externalId: { type: 'string', description: "the user's id in the partner's own system" } },
      },
    },
  },
  Cost: {
    type: 'object',
    required: ['subtotal', 'total'],
    properties: {
      startPrice: { type: ['integer', 'null'], description: 'unlock fee, minor units; null when unknown for historical data' },
      pricePerMinute: { type: ['integer', 'null'], description: 'price per rounded-up minute, minor units; null when unknown for historical data' },
      subtotal: minor('total excluding VAT'),
      total: {
        type: 'object',
        required: ['amount', 'currency', 'vat', 'vatPercentage'],
        properties: {
          amount: minor('total including VAT'),
          currency,
          vat: minor('VAT amount'),
          vatPercentage: { type: 'number', minimum: 0, maximum: 1, description: 'VAT share as a fraction (0.21 = 21 %)' },
        },
      },
    },
  },
  Rental: {
    type: 'object',
    required: ['id', 'type', 'attributes'],
    properties: {
      id: UUID_V4,
      type: { const: 'rental' },
      attributes: {
        type: 'object',
        required: ['rentalDurationMin', 'rentalDistanceMeters', 'cost', 'state', 'startedAt', 'vehicle', 'vehicleStartLocation'],
        properties: {
          rentalDurationMin: { type: 'integer', minimum: 0, description: 'full minutes, rounded up; the basis of the charge' },
          rentalDistanceMeters: { type: 'integer', minimum: 0, description: 'full meters, rounded up' },
          cost: schemaRef('Cost'),
          state: { enum: ['RUNNING', 'ENDED', 'ENDED_WITH_NO_CHARGE', 'ENDED_INTERNALLY'] },
          startedAt: rfc3339Utc,
          endedAt: rfc3339Utc,
          vehicle: {
            type: 'object',
            required: ['vehicleId', 'vehicleCode'],
            properties: { vehicleId: UUID_V4, vehicleCode: { type: 'string', pattern: '^[A-Z0-9]{4}$', description: 'the 4 characters printed on the vehicle' } },
          },
          userStartLocation: schemaRef('Location'),
          userEndLocation: schemaRef('Location'),
          vehicleStartLocation: schemaRef('Location'),
          vehicleEndLocation: schemaRef('Location'),
          receipt: {
            type: 'object',
            description: 'present on ended rentals: a signed link to the PDF receipt (valid 7 to 8 days; read the rental again for a fresh one)',
            required: ['url'],
            properties: { url: { type: 'string', format: 'uri' } },
          },
          photoUploadURL: {
            type: 'string',
            format: 'uri',
            description: 'on the end-rental response and on every read of the ended rental (by id, the user\'s rentals) while the upload window is open: the signed address for PUT of the parking photo (`/v1/rental/{id}/photo?expires=…&sig=…`), valid until 30 minutes after the end',
          },
        },
      },
    },
  },
  Price: {
    type: 'object',
    required: ['currency', 'pricePerMinute', 'startPrice', 'vat'],
    properties: {
      currency,
      pricePerMinute: minor('price per started minute including VAT'),
      startPrice: minor('unlock fee including VAT'),
      vat: { type: 'number', minimum: 0, maximum: 1, description: 'VAT share as a fraction' },
    },
  },
  Pricing: {
    type: 'object',
    required: ['id', 'type', 'attributes'],
    properties: { id: { ...UUID_V4, description: 'the vehicle the price belongs to' }, type: { const: 'pricing' }, attributes: schemaRef('Price') },
  },
  Vehicle: {
    type: 'object',
    required: ['id', 'type', 'vehicle_type', 'attributes', 'price'],
    properties: {
      id: UUID_V4,
      type: { const: 'vehicle' },
      vehicle_type: { enum: ['scooter', 'bicycle'] },
      attributes: {
        type: 'object',
        required: ['batteryLevel', 'location', 'code', 'zoneId', 'locked', 'status', 'maxRangeMeters'],
        properties: {
          batteryLevel: { type: 'integer', minimum: 0, maximum: 100 },
          location: schemaRef('Location'),
          code: { type: 'string', pattern: '^[A-Z0-9]{4}$' },
          zoneId: { type: 'string' },
          locked: { type: 'boolean' },
          status: { enum: ['ready', 'riding', 'booked', 'unavailable'] },
          maxRangeMeters: { type: 'number', minimum: 0, description: 'range left with the current charge' },
        },
      },
      price: schemaRef('Price'),
    },
  },
  ZoneAreas: {
    type: 'object',
    required: ['id', 'type', 'attributes'],
    properties: {
      id: { type: 'string', description: 'the zone id' },
      type: { const: 'area' },
      attributes: {
        type: 'object',
        required: ['areas'],
        properties: {
          areas: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'type', 'area_type', 'geometry'],
              properties: {
                id: { type: 'string' },
                type: { const: 'area' },
                name: { type: ['string', 'null'] },
                area_type: {
                  enum: ['operations', 'no-parking', 'parking-spot', 'slow-zone', 'no-riding', 'incentive', 'free-floating'],
                  description: 'free-floating only on /v2',
                },
                vehicle_types: { type: 'array', items: { enum: ['scooter', 'bicycle'] }, description: 'empty: no restriction' },
                geometry: schemaRef('MultiPolygon'),
              },
            },
          },
        },
      },
    },
  },
  MultiPolygon: {
    type: 'object',
    required: ['type', 'coordinates'],
    properties: {
      type: { const: 'MultiPolygon' },
      coordinates: { type: 'array', items: { type: 'array', items: { type: 'array', items: { type: 'array', minItems: 2, items: { type: 'number' } } } } },
    },
  },
  AreaOccupancy: {
    type: 'object',
    required: ['id', 'occupancy', 'capacity'],
    properties: {
      id: { type: 'string', description: 'parking-spot area id' },
      occupancy: { type: 'number', description: 'scooters parked there now (every status but riding); bicycles are not counted, also where the spot admits them' },
      capacity: { type: 'number', description: 'maximum scooters' },
    },
  },
  OperationalZones: {
    type: 'object',
    required: ['id', 'type', 'attributes'],
    properties: {
      id: { type: 'string' },
      type: { const: 'zone' },
      attributes: {
        type: 'object',
        required: ['zones'],
        properties: {
          zones: {
            type: 'array',
            items: {
              type: 'object',
              required: ['zoneId', 'zoneName', 'parkingMode', 'licenceVerificationRequired', 'isSleeping'],
              properties: {
                zoneId: { type: 'string' },
                zoneName: { type: 'string', description: 'city name' },
                parkingMode: { enum: ['free-floating', 'parking-spot'] },
                licenceVerificationRequired: { type: 'boolean' },
                speedConfig: {
                  type: 'object',
                  properties: {
                    maxSpeed: { type: ['number', 'null'] },
                    minRequiredRides: { type: ['integer', 'null'] },
                    reducedSpeed: { type: ['number', 'null'] },
                    speedUnit: { enum: ['km/h', 'mph', null] },
                  },
                },
                isSleeping: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
  },
  PhotoDecision: {
    type: 'object',
    required: ['decision'],
    properties: { decision: { enum: ['good-parking', 'bad-parking', 'bad-photo', 'no-decision', 'unknown'] } },
  },
  JsonApiError: {
    type: 'object',
    required: ['status', 'code', 'title', 'detail'],
    properties: {
      status: { type: 'string', pattern: '^[1-5][0-9]{2}$', description: 'the HTTP status, as a string (JSON:API)' },
      code: { type: 'string', description: 'the ErrorCode (partner-rental-api.md §7)' },
      title: { type: 'string', description: 'the HTTP reason phrase' },
      detail: { type: 'string' },
      meta: { type: 'object', description: 'extra facts, e.g. `{decision: "bad-photo"}` on ValidateParkingPhotoFailed' },
    },
  },
  JsonApiErrors: {
    type: 'object',
    required: ['errors'],
    properties: {
      errors: { type: 'array', minItems: 1, items: schemaRef('JsonApiError') },
      decision: { enum: ['bad-photo'], description: 'the parking decision an error answer recorded (ValidateParkingPhotoFailed: `bad-photo`), at the same place as in a successful upload' },
    },
  },
};
