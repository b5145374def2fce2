/**
 * Records the partner API emits (partner-rental-api.md §2), as JSON Schemas. Tests validate every
 * answer they read against these, so a field renamed in a presenter fails a test, not a partner.
 */
const location = {
  type: 'object',
  properties: { longitude: { type: 'number' }, latitude: { type: 'number' } },
  required: ['longitude', 'latitude'],
  additionalProperties: false,
} as const;

const uuid = { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' } as const;
const rfc3339Utc = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' } as const;
const minor = { type: 'integer', minimum: 0 } as const;

export const UserRecord = {
  type: 'object',
  properties: {
    id: uuid,
    type: { const: 'user' },
    attributes: {
      type: 'object',
      properties: { email: { type: 'string' }, externalId: { type: 'string' } },
      required: ['email', 'externalId'],
      additionalProperties: false,
    },
  },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

export const PriceRecord = {
  type: 'object',
  properties: {
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
    pricePerMinute: minor,
    startPrice: minor,
    vat: { type: 'number', minimum: 0, maximum: 1 },
  },
  required: ['currency', 'pricePerMinute', 'startPrice', 'vat'],
  additionalProperties: false,
} as const;

export const PricingRecord = {
  type: 'object',
  properties: { id: uuid, type: { const: 'pricing' }, attributes: PriceRecord },
  required: ['id', 'type', 'attributes'],
  additionalProperties: false,
} as const;

export const VehicleRecord = {
  type: 'object',
  properties: {
    id: uuid,
    type: { const: 'vehicle' },
    vehicle_type: { enum: ['scooter', 'bicycle'] },
    attributes: {
      type: 'object',
      properties: {
        batteryLevel: { type: 'integer', minimum: 0, maximum: 100 },
        location,
        code: { type: 'string', pattern: '^[A-Z0-9]{4}$' },
        zoneId: { type: 'string' },
        locked: { type: 'boolean' },
        status: { enum: ['ready', 'riding', 'booked', 'unavailable'] },
        maxRangeMeters: { type: 'number', minimum: 0 },
      },
      required: ['batteryLevel', 'location', 'code', 'zoneId', 'locked', 'status', 'maxRangeMeters'],
      additionalProperties: false,
    },
    price: PriceRecord,
  },
  required: ['id', 'type', 'vehicle_type', 'attributes', 'price'],
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
        rentalDurationMin: minor,
        rentalDistanceMeters: minor,
        cost: {
          type: 'object',
          properties: {
            startPrice: { type: ['integer', 'null'], minimum: 0 },
            pricePerMinute: { type: ['integer', 'null'], minimum: 0 },
            subtotal: minor,
            total: {
              type: 'object',
              properties: { amount: minor, currency: { type: 'string', pattern: '^[A-Z]{3}$' }, vat: minor, vatPercentage: { type: 'number', minimum: 0, maximum: 1 } },
              required: ['amount', 'currency', 'vat', 'vatPercentage'],
              additionalProperties: false,
            },
          },
          required: ['subtotal', 'total'],
          additionalProperties: false,
        },
        state: { enum: ['RUNNING', 'ENDED', 'ENDED_WITH_NO_CHARGE', 'ENDED_INTERNALLY'] },
        startedAt: rfc3339Utc,
        endedAt: rfc3339Utc,
        vehicle: {
          type: 'object',
          properties: { vehicleId: uuid, vehicleCode: { type: 'string', pattern: '^[A-Z0-9]{4}$' } },
          required: ['vehicleId', 'vehicleCode'],
          additionalProperties: false,
        },
        userStartLocation: location,
        userEndLocation: location,
        vehicleStartLocation: location,
        vehicleEndLocation: location,
        receipt: { type: 'object', properties: { url: { type: 'string', format: 'uri' } }, required: ['url'], additionalProperties: false },
        photoUploadURL: { type: 'string', format: 'uri' },
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
