/**
 * Records the TOMP subset answers with (api/tomp/views.ts and api/tomp/operator.ts build them), as
 * JSON Schemas: the one description of each answer. The endpoint table (api/tomp/endpoints.ts) names
 * them per response and the OpenAPI document publishes them as named components.
 */
import { Coordinates, Place, SupportRequest } from './requests.js';

const utc = { type: 'string', format: 'date-time', examples: ['2026-11-21T09:30:00Z'] } as const;

export const TompErrorRecord = {
  type: 'object',
  required: ['status', 'detail'],
  properties: {
    status: { type: 'integer', description: 'the HTTP status' },
    title: { type: 'string', description: 'the HTTP reason phrase' },
    detail: { type: 'string' },
    type: {
      type: 'string',
      description: 'machine-readable reason where useful, e.g. the rental engine’s code (VehicleNotAvailable, FailedToEndRentalNoParking, …)',
    },
    errorcode: { type: 'integer', description: 'TOMP’s numeric error code; not used by this implementation' },
  },
} as const;

const FarePartRecord = {
  type: 'object',
  required: ['amount', 'currencyCode', 'type'],
  properties: {
    amount: { type: 'number', description: 'in the currency’s base unit (1.00 EUR, not 100), VAT included' },
    currencyCode: { type: 'string', pattern: '^[A-Z]{3}$' },
    vatRate: { type: 'number', description: 'VAT in percent' },
    type: { enum: ['FIXED', 'FLEX'] },
    unitType: { const: 'MINUTE', description: 'FLEX parts only' },
    units: { type: 'number', description: 'FLEX parts only: the number of minutes the amount is for' },
    name: { type: 'string' },
  },
} as const;

const FareRecord = {
  type: 'object',
  required: ['estimated', 'parts'],
  properties: {
    estimated: { type: 'boolean', description: 'true on a new booking, false once the leg is in use or finished' },
    parts: { type: 'array', items: FarePartRecord },
  },
} as const;

export const RegionRecord = {
  type: 'object',
  required: ['regionId', 'name', 'type', 'serviceArea'],
  properties: {
    regionId: { type: 'string', description: 'the operator’s zone id; for a city rule’s area (`areas=city`), the area id' },
    name: { type: 'string' },
    type: {
      enum: ['OPERATING', 'NO_PARKING', 'NO_ACCESS', 'SPEEDLIMIT'],
      description:
        'OPERATING: a zone. With `areas=city`, the areas of the city’s MDS Policy rules in force as well (docs/city-policy.md): NO_PARKING (no-parking), NO_ACCESS (no-riding), SPEEDLIMIT (a slow zone, its limit in typeUnit/typeValue)',
    },
    typeUnit: { const: 'KMPH', description: 'SPEEDLIMIT only' },
    typeValue: { type: 'number', description: 'SPEEDLIMIT only: the limit in km/h' },
    areaStartTime: { type: 'string', format: 'date-time', description: 'a city rule’s area: the start of its policy' },
    areaEndTime: { type: 'string', format: 'date-time', description: 'a city rule’s area: the end of its policy, when it has one' },
    serviceArea: {
      type: 'object',
      description: 'GeoJSON Polygon of the zone boundary or the area (its largest polygon when it has several)',
      required: ['type', 'coordinates'],
      properties: { type: { const: 'Polygon' }, coordinates: { type: 'array', items: { type: 'array', items: { type: 'array', items: { type: 'number' } } } } },
    },
  },
} as const;

const PROCESS_PHASES = ['operatorInformation', 'planning', 'booking', 'tripExecution', 'support', 'payment', 'general'] as const;

export const SystemInformationRecord = {
  type: 'object',
  required: ['version', 'baseUrl', 'endpoints', 'scenarios', 'processIdentifiers'],
  properties: {
    version: { const: '1.6.1' },
    baseUrl: { type: 'string', format: 'uri' },
    endpoints: {
      type: 'array',
      items: {
        type: 'object',
        required: ['method', 'path', 'status'],
        properties: {
          method: { enum: ['GET', 'POST'] },
          path: { type: 'string' },
          status: { const: 'IMPLEMENTED' },
          eventType: { type: 'string' },
          supportsPaging: { type: 'boolean' },
          maxPageSize: { type: 'integer' },
        },
      },
    },
    scenarios: { type: 'array', items: { enum: ['POSTPONED_COMMIT', 'PAY_WHEN_FINISHED'] } },
    processIdentifiers: {
      type: 'object',
      description: 'booking holds AUTO_COMMIT (POSTPONED_COMMIT for partners with postponed commit); the others are empty',
      required: PROCESS_PHASES,
      properties: Object.fromEntries(PROCESS_PHASES.map((k) => [k, { type: 'array', items: { type: 'string' } }])),
    },
  },
} as const;

export const PricingPlanRecord = {
  type: 'object',
  required: ['planId', 'regionId', 'name', 'isTaxable', 'description', 'fare'],
  properties: {
    planId: { type: 'string', description: '`{zoneId}:{vehicleTypeId}`' },
    regionId: { type: 'string' },
    name: { type: 'string' },
    isTaxable: { type: 'boolean', description: 'false: prices include VAT' },
    description: { type: 'string' },
    fare: FareRecord,
  },
} as const;

export const LegRecord = {
  type: 'object',
  required: ['id', 'state', 'from', 'departureTime', 'assetType', 'asset', 'pricing'],
  properties: {
    id: { type: 'string' },
    state: { enum: ['NOT_STARTED', 'IN_USE', 'START_FINISHING', 'FINISHED', 'CANCELLED'] },
    from: Place,
    to: { allOf: [Place], description: 'where the trip ended (FINISHED legs)' },
    departureTime: utc,
    actualDepartureTime: utc,
    actualArrivalTime: utc,
    distance: { type: 'integer', description: 'meters (FINISHED legs)' },
    assetType: {
      type: 'object',
      required: ['id', 'assetClass', 'assetSubClass'],
      properties: { id: { type: 'string' }, assetClass: { enum: ['STEP', 'BICYCLE'] }, assetSubClass: { type: 'string' } },
    },
    asset: {
      type: 'object',
      required: ['id'],
      properties: {
        id: { type: 'string' },
        stateOfCharge: { type: ['number', 'null'], description: 'battery, percent' },
        maxRange: { type: ['number', 'null'], description: 'meters, the vehicle type’s full range' },
      },
    },
    pricing: FareRecord,
  },
} as const;

export const BookingRecord = {
  type: 'object',
  required: ['id', 'state', 'from', 'legs'],
  properties: {
    id: { type: 'string' },
    state: { enum: ['PENDING', 'CONFIRMED', 'STARTED', 'START_FINISHING', 'FINISHED', 'CANCELLED', 'EXPIRED'] },
    from: Place,
    customer: { type: 'object', properties: { externalId: { type: 'string' } } },
    departureTime: utc,
    legs: { type: 'array', minItems: 1, maxItems: 1, items: LegRecord },
  },
} as const;

export const SupportStatusRecord = {
  type: 'object',
  required: ['id', 'supportType', 'time', 'contactInformationEndUser', 'comment', 'status'],
  properties: { ...SupportRequest.properties, status: { const: 'PROCESSING' } },
} as const;

/** The records by the names the OpenAPI document gives them (components.schemas). */
export const TOMP_RECORDS: Record<string, object> = {
  TompError: TompErrorRecord,
  Coordinates,
  Place,
  FarePart: FarePartRecord,
  Fare: FareRecord,
  Region: RegionRecord,
  SystemInformation: SystemInformationRecord,
  PricingPlan: PricingPlanRecord,
  Leg: LegRecord,
  Booking: BookingRecord,
  SupportStatus: SupportStatusRecord,
};
