/**
 * Request bodies of the TOMP subset we serve. They follow TOMP 1.6.1 (oneStopBookingRequest,
 * legEvent, bookingOperation, supportRequest) restricted to what we implement, with our documented
 * deviations: negative coordinates are valid (upstream `minimum: 0` bug), legEvent.time is optional
 * (the requirement lists only `event` as required; we use the server time), useAssets holds exactly
 * one id. Unknown extra TOMP fields are accepted and ignored, as TOMP bodies carry many optional
 * fields we do not use.
 */
import type { FromSchema } from 'json-schema-to-ts';

export const Coordinates = {
  type: 'object',
  required: ['lng', 'lat'],
  properties: {
    lng: { type: 'number', minimum: -180, maximum: 180 },
    lat: { type: 'number', minimum: -90, maximum: 90 },
  },
} as const;

export const Place = {
  type: 'object',
  required: ['coordinates'],
  properties: {
    name: { type: 'string', maxLength: 500 },
    coordinates: Coordinates,
  },
} as const;

export const OneStopBookingRequest = {
  type: 'object',
  required: ['from', 'useAssets', 'customer'],
  properties: {
    from: Place,
    to: Place,
    useAssets: { type: 'array', minItems: 1, maxItems: 1, items: { type: 'string', minLength: 1, maxLength: 64 } },
    customer: {
      type: 'object',
      required: ['externalId'],
      properties: {
        externalId: { type: 'string', minLength: 1, maxLength: 200 },
        // TOMP 1.6.1 license (licenseType + number, licenseCode, validUntil): the licence verification (api/tomp/licences.ts)
        licenses: {
          type: 'array',
          maxItems: 20,
          items: {
            type: 'object',
            required: ['assetClass'],
            properties: {
              assetClass: { type: 'string', minLength: 1, maxLength: 40 },
              issuingCountry: { type: 'string', maxLength: 10 },
              number: { type: 'string', maxLength: 100 },
              licenseCode: { type: 'string', maxLength: 40 },
              validUntil: { type: 'string', format: 'date', maxLength: 10 },
            },
          },
        },
      },
    },
    // metres; the traveller must be within the zone's unlock distance (50 m) anyway
    radius: { type: 'integer', format: 'int32', minimum: 0, maximum: 100000 },
    departureTime: { type: 'string', format: 'date-time', maxLength: 64 },
  },
} as const;
export type OneStopBookingRequest = FromSchema<typeof OneStopBookingRequest>;

export const LEG_EVENTS = ['START_FINISHING', 'FINISH'] as const;
/** Every legEvent.event value of TOMP 1.6.1: those we do not implement get a 400 that says so. */
const TOMP_LEG_EVENTS = [
  'PREPARE',
  'ASSIGN_ASSET',
  'SET_IN_USE',
  'PAUSE',
  'OPEN_TRUNK',
  'START_FINISHING',
  'FINISH',
  'TIME_EXTEND',
  'TIME_POSTPONE',
  'CANCEL',
] as const;

export const LegEvent = {
  type: 'object',
  required: ['event'],
  properties: {
    event: { type: 'string', enum: TOMP_LEG_EVENTS },
    time: { type: 'string', format: 'date-time', maxLength: 64 },
    comment: { type: 'string', maxLength: 2000 },
    userLocation: Place,
    asset: {
      type: 'object',
      properties: { id: { type: 'string', maxLength: 64 }, stateOfCharge: { type: 'integer', format: 'int32', minimum: 0, maximum: 100 } },
    },
    url: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 2048 } },
  },
} as const;
export type LegEvent = FromSchema<typeof LegEvent>;

export const BOOKING_OPERATIONS = ['COMMIT', 'CANCEL'] as const;

export const BookingOperation = {
  type: 'object',
  required: ['operation'],
  properties: {
    operation: { type: 'string', enum: ['CANCEL', 'DENY', 'COMMIT', 'EXTEND_EXPIRY_TIME'] },
    origin: { type: 'string', enum: ['TO', 'MP', 'END_USER', 'OTHER'] },
  },
} as const;
export type BookingOperation = FromSchema<typeof BookingOperation>;

const SUPPORT_TYPES = [
  'BROKEN_DOWN',
  'NOT_AT_LOCATION',
  'MISSING_AFTER_PAUSE',
  'NOT_CLEAN',
  'NOT_AVAILABLE',
  'UNABLE_TO_OPEN',
  'UNABLE_TO_CLOSE',
  'API_TECHNICAL',
  'API_FUNCTIONAL',
  'ACCIDENT',
  'OTHER',
] as const;

export const SupportRequest = {
  type: 'object',
  required: ['id', 'supportType', 'time', 'contactInformationEndUser', 'comment'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 },
    supportType: { type: 'string', enum: SUPPORT_TYPES },
    time: { type: 'string', format: 'date-time', maxLength: 64 },
    contactInformationEndUser: { type: 'string', minLength: 1, maxLength: 500 },
    comment: { type: 'string', minLength: 1, maxLength: 5000 },
  },
} as const;
export type SupportRequest = FromSchema<typeof SupportRequest>;
