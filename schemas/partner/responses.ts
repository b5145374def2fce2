/**
 * Records the partner API emits (partner-rental-api.md §2), as JSON Schemas: the one description
 * of each answer. The endpoint table (api/partner/endpoints.ts) names them per response, the
 * OpenAPI document publishes them (api/openapi/partner.ts, as named components), and the tests
 * validate every answer they read against them, so a field renamed in a presenter fails a test,
 * not a partner.
 */
import { UUID_V4_LOWER_SCHEMA } from '../common.js';
const uuid = UUID_V4_LOWER_SCHEMA;
const rfc3339Utc = {
  type: 'string',
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$',
  description: 'RFC 3339, UTC, no fractional seconds',
  examples: ['2026-11-21T09:30:00Z'],
} as const;
const minor = (description: string) => ({ type: 'integer', minimum: 0, description: `${description}, minor units of the currency` }) as const;
const currency = { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 alphabetic code', examples: ['EUR'] } as const;
const vehicleType = { enum: ['scooter', 'bicycle'] } as const;

const LocationRecord = {
  type: 'object',
  properties: { latitude: { type: 'number', minimum: -90, maximum: 90 }, longitude: { type: 'number', minimum: -180, maximum: 180 } },
  required: ['latitude', 'longitude'],
  additionalProperties: false,
} as const;

export const UserRecord = {
  type: 'object',
  properties: {
    id: uuid,
    type: { const: 'user' },
    attributes: {
      type: 'object',
      properties: {
        email: { type: 'string', description: "the user's real e-mail address" },
        externalId: { type: 'string', description: "the user's id in the partner's own system" },
      },
      required: ['email', 'externalId'],
      additionalProperties: false,
    },
  },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

const PriceRecord = {
  type: 'object',
  properties: {
    currency,
    pricePerMinute: minor('price per started minute including VAT'),
    startPrice: minor('unlock fee including VAT'),
    vat: { type: 'number', minimum: 0, maximum: 1, description: 'VAT share as a fraction' },
  },
  required: ['currency', 'pricePerMinute', 'startPrice', 'vat'],
  additionalProperties: false,
} as const;

export const PricingRecord = {
  type: 'object',
  properties: { id: { ...uuid, description: 'the vehicle the price belongs to' }, type: { const: 'pricing' }, attributes: PriceRecord },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

export const VehicleRecord = {
  type: 'object',
  properties: {
    id: uuid,
    type: { const: 'vehicle' },
    vehicle_type: vehicleType,
    attributes: {
      type: 'object',
      properties: {
        batteryLevel: { type: 'integer', minimum: 0, maximum: 100 },
        location: LocationRecord,
        code: { type: 'string', pattern: '^[A-Z0-9]{4}$', description: 'the 4 characters printed on the vehicle' },
        zoneId: { type: 'string' },
        locked: { type: 'boolean' },
        status: { enum: ['ready', 'riding', 'booked', 'unavailable'] },
        maxRangeMeters: { type: 'number', minimum: 0, description: 'range left with the current charge' },
      },
      required: ['batteryLevel', 'location', 'code', 'zoneId', 'locked', 'status', 'maxRangeMeters'],
      additionalProperties: false,
    },
    price: PriceRecord,
  },
  required: ['id', 'type', 'vehicle_type', 'attributes', 'price'],
  additionalProperties: false,
} as const;

const CostRecord = {
  type: 'object',
  properties: {
    startPrice: { type: ['integer', 'null'], minimum: 0, description: 'unlock fee, minor units; null when unknown for historical data' },
    pricePerMinute: { type: ['integer', 'null'], minimum: 0, description: 'price per rounded-up minute, minor units; null when unknown for historical data' },
    subtotal: minor('total excluding VAT'),
    total: {
      type: 'object',
      properties: {
        amount: minor('total including VAT'),
        currency,
        vat: minor('VAT amount'),
        vatPercentage: { type: 'number', minimum: 0, maximum: 1, description: 'VAT share as a fraction (0.21 = 21 %)' },
      },
      required: ['amount', 'currency', 'vat', 'vatPercentage'],
      additionalProperties: false,
    },
  },
  required: ['subtotal', 'total'],
  additionalProperties: false,
} as const;

export const RentalRecordSchema = {
  type: 'object',
  properties: {
    id: uuid,
    type: { const: 'rental' },
    attributes: {
      type: 'object',
      properties: {
        rentalDurationMin: { type: 'integer', minimum: 0, description: 'full minutes, rounded up; the basis of the charge' },
        rentalDistanceMeters: { type: 'integer', minimum: 0, description: 'full meters, rounded up' },
        cost: CostRecord,
        state: { enum: ['RUNNING', 'ENDED', 'ENDED_WITH_NO_CHARGE', 'ENDED_INTERNALLY'] },
        startedAt: rfc3339Utc,
        endedAt: rfc3339Utc,
        vehicle: {
          type: 'object',
          properties: { vehicleId: uuid, vehicleCode: { type: 'string', pattern: '^[A-Z0-9]{4}$', description: 'the 4 characters printed on the vehicle' } },
          required: ['vehicleId', 'vehicleCode'],
          additionalProperties: false,
        },
        userStartLocation: LocationRecord,
        userEndLocation: LocationRecord,
        vehicleStartLocation: LocationRecord,
        vehicleEndLocation: LocationRecord,
        receipt: {
          type: 'object',
          description: 'present on ended rentals: a signed link to the PDF receipt (valid 7 to 8 days; read the rental again for a fresh one)',
          properties: { url: { type: 'string', format: 'uri' } },
          required: ['url'],
          additionalProperties: false,
        },
        photoUploadURL: {
          type: 'string',
          format: 'uri',
          description:
            "on the end-rental response and on every read of the ended rental (by id, the user's rentals) while the upload window is open: the signed address for PUT of the parking photo (`/v1/rental/{id}/photo?expires=…&sig=…`), valid until 30 minutes after the end",
        },
      },
      required: ['rentalDurationMin', 'rentalDistanceMeters', 'cost', 'state', 'startedAt', 'vehicle', 'vehicleStartLocation'],
      additionalProperties: false,
      // ended rentals carry their end time and a receipt (requirement: receipt required for ended rentals)
      if: { properties: { state: { not: { const: 'RUNNING' } } } },
      then: { required: ['endedAt', 'receipt', 'vehicleEndLocation'] },
    },
  },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

const MultiPolygonRecord = {
  type: 'object',
  properties: {
    type: { const: 'MultiPolygon' },
    coordinates: { type: 'array', items: { type: 'array', items: { type: 'array', items: { type: 'array', minItems: 2, items: { type: 'number' } } } } },
  },
  required: ['type', 'coordinates'],
} as const;

export const ZoneAreasRecord = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'the zone id' },
    type: { const: 'area' },
    attributes: {
      type: 'object',
      properties: {
        areas: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              type: { const: 'area' },
              name: { type: ['string', 'null'] },
              area_type: {
                enum: ['operations', 'no-parking', 'parking-spot', 'slow-zone', 'no-riding', 'incentive', 'free-floating'],
                description: 'free-floating only on /v2',
              },
              vehicle_types: { type: 'array', items: vehicleType, description: 'empty: no restriction' },
              geometry: MultiPolygonRecord,
              source: {
                enum: ['operator', 'city'],
                description:
                  "operator: the operator's zone definition; city: a rule of the city's MDS Policy in force now (docs/city-policy.md), which wins where it overlaps the operator's areas",
              },
            },
            required: ['id', 'type', 'area_type', 'geometry', 'source'],
            additionalProperties: false,
          },
        },
      },
      required: ['areas'],
      additionalProperties: false,
    },
  },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

export const AreaOccupancyRecord = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'parking-spot area id' },
    occupancy: {
      type: 'number',
      description: 'scooters parked there now (every status but riding); bicycles are not counted, also where the spot admits them',
    },
    capacity: { type: 'number', description: 'maximum scooters' },
  },
  required: ['id', 'occupancy', 'capacity'],
  additionalProperties: false,
} as const;

export const OperationalZonesRecord = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'the partner id' },
    type: { const: 'zone' },
    attributes: {
      type: 'object',
      properties: {
        zones: {
          type: 'array',
          items: {
            type: 'object',
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
                additionalProperties: false,
              },
              isSleeping: { type: 'boolean' },
            },
            required: ['zoneId', 'zoneName', 'parkingMode', 'licenceVerificationRequired', 'isSleeping'],
            additionalProperties: false,
          },
        },
      },
      required: ['zones'],
      additionalProperties: false,
    },
  },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

export const PhotoDecisionRecord = {
  type: 'object',
  properties: { decision: { enum: ['good-parking', 'bad-parking', 'bad-photo', 'no-decision', 'unknown'] } },
  required: ['decision'],
  additionalProperties: false,
} as const;

const JsonApiErrorRecord = {
  type: 'object',
  properties: {
    status: { type: 'string', pattern: '^[1-5][0-9]{2}$', description: 'the HTTP status, as a string (JSON:API)' },
    code: { type: 'string', description: 'the ErrorCode (partner-rental-api.md §7)' },
    title: { type: 'string', description: 'the HTTP reason phrase' },
    detail: { type: 'string' },
    meta: { type: 'object', description: 'extra facts, e.g. `{decision: "bad-photo"}` on ValidateParkingPhotoFailed' },
  },
  required: ['status', 'code', 'title', 'detail'],
} as const;

export const JsonApiErrorsRecord = {
  type: 'object',
  properties: {
    errors: { type: 'array', minItems: 1, items: JsonApiErrorRecord },
    decision: {
      enum: ['bad-photo'],
      description: 'the parking decision an error answer recorded (ValidateParkingPhotoFailed: `bad-photo`), at the same place as in a successful upload',
    },
  },
  required: ['errors'],
} as const;

/** The JSON:API envelope of the answers: `{data: record}` or `{data: [records]}`. */
export function dataOf(record: object, many: boolean): object {
  return { type: 'object', properties: { data: many ? { type: 'array', items: record } : record }, required: ['data'], additionalProperties: false };
}

/** The records by the names the OpenAPI document gives them (components.schemas). */
export const PARTNER_RECORDS = {
  Location: LocationRecord,
  User: UserRecord,
  Cost: CostRecord,
  Rental: RentalRecordSchema,
  Price: PriceRecord,
  Pricing: PricingRecord,
  Vehicle: VehicleRecord,
  ZoneAreas: ZoneAreasRecord,
  MultiPolygon: MultiPolygonRecord,
  AreaOccupancy: AreaOccupancyRecord,
  OperationalZones: OperationalZonesRecord,
  PhotoDecision: PhotoDecisionRecord,
  // JsonApiErrorsRecord is not one of them: each error response narrows it to its status and codes (api/openapi/errors-partner.ts)
  JsonApiError: JsonApiErrorRecord,
} satisfies Record<string, object>;
