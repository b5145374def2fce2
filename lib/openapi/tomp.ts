/**
 * OpenAPI 3.1 document of the TOMP 1.6.1 subset (tomp-booking-api.md, docs/tomp-api.md; code in
 * api/tomp/). Paths are relative to the server `${publicBaseUrl}/edge/tomp`. Request bodies come
 * from schemas/tomp/requests.ts; the response records are described here as lib/tomp/views.ts and
 * api/tomp/operator.ts build them.
 */
import { BookingOperation, LegEvent, OneStopBookingRequest, SupportRequest } from '../../schemas/tomp/requests.js';
import type { Header, OpenApiDocument, Operation, Parameter, Response, Schema } from './common.js';
import { header, json, oas, pathParam, queryParam, schemaRef } from './common.js';

const utc = { type: 'string', format: 'date-time', examples: ['2026-11-21T09:30:00Z'] };

const SCHEMAS: Record<string, Schema> = {
  TompError: {
    type: 'object',
    required: ['status', 'detail'],
    properties: {
      status: { type: 'integer', description: 'the HTTP status' },
      title: { type: 'string', description: 'the HTTP reason phrase' },
      detail: { type: 'string' },
      type: { type: 'string', description: 'machine-readable reason where useful, e.g. the rental engine’s code (VehicleNotAvailable, FailedToEndRentalNoParking, …)' },
      errorcode: { type: 'integer', description: 'TOMP’s numeric error code; not used by this implementation' },
    },
  },
  Coordinates: oas(OneStopBookingRequest.properties.from.properties.coordinates),
  Place: { type: 'object', required: ['coordinates'], properties: { name: { type: 'string' }, coordinates: schemaRef('Coordinates') } },
  FarePart: {
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
  },
  Fare: {
    type: 'object',
    required: ['estimated', 'parts'],
    properties: {
      estimated: { type: 'boolean', description: 'true on a new booking, false once the leg is in use or finished' },
      parts: { type: 'array', items: schemaRef('FarePart') },
    },
  },
  Region: {
    type: 'object',
    required: ['regionId', 'name', 'type', 'serviceArea'],
    properties: {
      regionId: { type: 'string', description: 'the operator’s zone id' },
      name: { type: 'string' },
      type: { const: 'OPERATING' },
      serviceArea: {
        type: 'object',
        description: 'GeoJSON Polygon of the zone boundary (its largest polygon when it has several)',
        required: ['type', 'coordinates'],
        properties: { type: { const: 'Polygon' }, coordinates: { type: 'array', items: { type: 'array', items: { type: 'array', items: { type: 'number' } } } } },
      },
    },
  },
  SystemInformation: {
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
        required: ['operatorInformation', 'planning', 'booking', 'tripExecution', 'support', 'payment', 'general'],
        properties: Object.fromEntries(
          ['operatorInformation', 'planning', 'booking', 'tripExecution', 'support', 'payment', 'general'].map((k) => [k, { type: 'array', items: { type: 'string' } }]),
        ),
      },
    },
  },
  PricingPlan: {
    type: 'object',
    required: ['planId', 'regionId', 'name', 'isTaxable', 'description', 'fare'],
    properties: {
      planId: { type: 'string', description: '`{zoneId}:{vehicleTypeId}`' },
      regionId: { type: 'string' },
      name: { type: 'string' },
      isTaxable: { type: 'boolean', description: 'false: prices include VAT' },
      description: { type: 'string' },
      fare: schemaRef('Fare'),
    },
  },
  Leg: {
    type: 'object',
    required: ['id', 'state', 'from', 'departureTime', 'assetType', 'asset', 'pricing'],
    properties: {
      id: { type: 'string' },
      state: { enum: ['NOT_STARTED', 'IN_USE', 'START_FINISHING', 'FINISHED', 'CANCELLED'] },
      from: schemaRef('Place'),
      to: { ...schemaRef('Place'), description: 'where the trip ended (FINISHED legs)' },
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
      pricing: schemaRef('Fare'),
    },
  },
  Booking: {
    type: 'object',
    required: ['id', 'state', 'from', 'legs'],
    properties: {
      id: { type: 'string' },
      state: { enum: ['PENDING', 'CONFIRMED', 'STARTED', 'START_FINISHING', 'FINISHED', 'CANCELLED', 'EXPIRED'] },
      from: schemaRef('Place'),
      customer: { type: 'object', properties: { externalId: { type: 'string' } } },
      departureTime: utc,
      legs: { type: 'array', minItems: 1, maxItems: 1, items: schemaRef('Leg') },
    },
  },
  SupportStatus: {
    type: 'object',
    required: ['id', 'supportType', 'time', 'contactInformationEndUser', 'comment', 'status'],
    properties: { ...oas(SupportRequest.properties), status: { const: 'PROCESSING' } },
  },
};

const CONTENT_LANGUAGE: Header = header('the language of the answer: the caller’s preferred tag from Accept-Language, else the booking’s, else `en`', { type: 'string' }, true);
const RETRY_AFTER: Header = header('seconds to wait before retrying', { type: 'integer', minimum: 0 }, true);

const err = (description: string, headers?: Record<string, Header>): Response => ({
  description,
  ...(headers ? { headers } : {}),
  content: json(schemaRef('TompError')),
});

const COMMON: Record<string, Response> = {
  '401': err('no X-Access-Token, or an unknown, expired or revoked key'),
  '403': err('a valid key of another API (partner rental or insurer key)'),
  '429': err('rate limit exceeded (default 4000 requests per minute per key)', {
    'Retry-After': RETRY_AFTER,
    'X-RateLimit-Limit': header('requests per minute allowed for the key', { type: 'integer' }),
    'X-RateLimit-Remaining': header('requests left in the current minute', { type: 'integer' }),
  }),
  '500': err('unexpected error'),
  '503': err('temporary issue (database, or a vehicle that did not answer a lock command); retry after Retry-After', { 'Retry-After': RETRY_AFTER }),
};
const BODY: Record<string, Response> = {
  '400': err('malformed JSON, wrong types, missing fields, coordinates out of range'),
  '413': err('body larger than the limit (64 KiB by default)'),
};

const ok = (status: string, description: string, schema: Schema, headers: Record<string, Header> = {}): Record<string, Response> => ({
  [status]: { description, headers: { 'Content-Language': CONTENT_LANGUAGE, ...headers }, content: json(schema) },
});

function op(o: { operationId: string; summary: string; description?: string; tag: string; parameters?: Parameter[]; body?: { schema: Schema; example: unknown }; responses: Record<string, Response> }): Operation {
  return {
    operationId: o.operationId,
    summary: o.summary,
    ...(o.description ? { description: o.description } : {}),
    tags: [o.tag],
    ...(o.parameters ? { parameters: o.parameters } : {}),
    ...(o.body ? { requestBody: { required: true, content: json(o.body.schema, o.body.example) } } : {}),
    responses: { ...o.responses, ...(o.body ? BODY : {}), ...COMMON, ...o.responses },
  };
}

const id = (what: string) => pathParam('id', `${what} id`, { type: 'string' });

export function tompDocument(opts: { publicBaseUrl: string }): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'TOMP booking API (TOMP 1.6.1 subset)',
      version: '1.6.1',
      description: [
        'A MaaS provider discovers regions and pricing plans, books one specific vehicle in a single call, follows the leg, finishes it with a leg event and reads the final price; support tickets can be raised for a booking.',
        '',
        'Every request carries `X-Access-Token: <API key>`. Errors are `{status, title, detail}` plus `type` (a machine-readable reason) where useful. An unknown path answers 404 and a known path with another method 405 (with `Allow`), both before the key is checked. Every 2xx answer carries `Content-Language`.',
        '',
        'Typical flow: list regions, list pricing plans, book one vehicle (`/bookings/one-stop`), read the leg, post `FINISH` to `/legs/{id}/events`, read the booking for the final pricing.',
      ].join('\n'),
    },
    servers: [{ url: `${opts.publicBaseUrl}/edge/tomp`, description: 'this deployment' }],
    tags: [{ name: 'Operator information' }, { name: 'Booking' }, { name: 'Trip execution' }, { name: 'Support' }],
    paths: {
      '/operator/regions': {
        get: op({
          operationId: 'getRegions',
          summary: 'Operating regions',
          description: 'Only OPERATING regions (the partner’s zones) are returned.',
          tag: 'Operator information',
          parameters: [
            queryParam('offset', 'records to skip', { type: 'integer', minimum: 0 }),
            queryParam('limit', 'page size, at most 1000', { type: 'integer', minimum: 0, maximum: 1000 }),
          ],
          responses: { ...ok('200', 'the regions', { type: 'array', items: schemaRef('Region') }), '400': err('bad paging parameters') },
        }),
      },
      '/operator/meta': {
        get: op({
          operationId: 'getMeta',
          summary: 'Operator metadata',
          description: 'An array with one object: version 1.6.1, the implemented endpoints, scenarios and process identifiers.',
          tag: 'Operator information',
          responses: ok('200', 'the metadata', { type: 'array', minItems: 1, maxItems: 1, items: schemaRef('SystemInformation') }),
        }),
      },
      '/operator/pricing-plans': {
        get: op({
          operationId: 'getPricingPlans',
          summary: 'Pricing plans',
          description: 'One plan per zone and vehicle type: a FIXED unlock fee and a FLEX price per MINUTE.',
          tag: 'Operator information',
          parameters: [
            queryParam('regionId', 'only the plans of this region', { type: 'string' }),
            queryParam('stationId', 'matches nothing: there are no stations', { type: 'string' }),
          ],
          responses: { ...ok('200', 'the pricing plans', { type: 'array', items: schemaRef('PricingPlan') }), '400': err('a filter given more than once') },
        }),
      },
      '/bookings/one-stop': {
        post: op({
          operationId: 'oneStopBooking',
          summary: 'Book one vehicle in one call',
          description:
            'Planning and booking in one step; `useAssets` holds exactly one vehicle id (the vehicle id, its GBFS vehicle_id or the printed code). With AUTO_COMMIT the rental starts at once (booking CONFIRMED, leg NOT_STARTED, estimated pricing); partners with postponed commit get a PENDING booking that must be committed (`POST /bookings/{id}/events`) before `Expires`. `from` is where the traveller stands: it must be within the zone\'s unlock distance (50 m) of the vehicle\'s own position (take it from GBFS vehicle_status), and within `radius` when one is sent (406 UserTooFarFromVehicle). In zones that require licence verification the booking needs a `customer.licenses` entry for the asset\'s class (STEP for kick scooters, BICYCLE for bicycles) whose `validUntil` is today or later, or absent; otherwise 406 UserLicenceVerificationRequired with a detail that says what is missing.',
          tag: 'Booking',
          body: {
            schema: oas(OneStopBookingRequest),
            example: {
              from: { coordinates: { lng: -3.7038, lat: 40.4168 } },
              useAssets: ['9b2e4f7a-1c3d-4e5f-8a9b-0c1d2e3f4a5b'],
              customer: { externalId: 'rider-42', licenses: [{ assetClass: 'STEP', validUntil: '2030-01-31', issuingCountry: 'DK' }] },
            },
          },
          parameters: [{ name: 'Accept-Language', in: 'header', description: 'languages the user wants results in; keep it short, ideally one tag', schema: { type: 'string' }, example: 'en' }],
          responses: {
            ...ok('201', 'the booking', schemaRef('Booking'), {
              Expires: header('HTTP date until which the result is valid; a PENDING booking expires then', { type: 'string' }, true),
              Location: header('the address of the booking', { type: 'string', format: 'uri' }, true),
            }),
            '406': err('no booking possible: unknown asset, vehicle not available, customer or vehicle already on a trip, zone sleeping, `from` beyond the unlock distance or `radius`, no valid `customer.licenses` where licence verification is required (see `type`; the detail says what is missing)'),
            '428': err('the customer is blocked by the operator'),
            '503': err('the vehicle did not answer the unlock command (nothing is booked), or the database is unavailable', { 'Retry-After': RETRY_AFTER }),
          },
        }),
      },
      '/bookings/{id}': {
        get: op({
          operationId: 'getBooking',
          summary: 'A booking with its current state',
          tag: 'Booking',
          parameters: [id('booking')],
          responses: { ...ok('200', 'the booking', schemaRef('Booking')), '404': err('unknown booking, or one of another partner') },
        }),
      },
      '/bookings/{id}/events': {
        post: op({
          operationId: 'bookingEvent',
          summary: 'Commit or cancel a PENDING booking',
          description: '`operation` COMMIT starts the rental (CONFIRMED); CANCEL releases the vehicle (CANCELLED). Other operations → 400.',
          tag: 'Booking',
          parameters: [id('booking')],
          body: { schema: oas(BookingOperation), example: { operation: 'COMMIT' } },
          responses: {
            ...ok('200', 'the booking', schemaRef('Booking'), { Expires: header('HTTP date until which a PENDING booking is held', { type: 'string' }) }),
            '404': err('unknown booking'),
            '406': err('COMMIT failed: the vehicle can no longer be booked (the hold is released)'),
            '409': err('the booking is not PENDING, or it has expired'),
          },
        }),
      },
      '/legs/{id}': {
        get: op({
          operationId: 'getLeg',
          summary: 'A leg',
          tag: 'Trip execution',
          parameters: [id('leg')],
          responses: { ...ok('200', 'the leg', schemaRef('Leg')), '404': err('unknown leg, or one of another partner') },
        }),
      },
      '/legs/{id}/events': {
        post: op({
          operationId: 'legEvent',
          summary: 'Leg event: START_FINISHING or FINISH',
          description: 'FINISH ends the rental (vehicle locked) and answers the leg FINISHED with the final pricing. Other TOMP events → 400.',
          tag: 'Trip execution',
          parameters: [id('leg')],
          body: { schema: oas(LegEvent), example: { event: 'FINISH', userLocation: { coordinates: { lng: -3.7035, lat: 40.4169 } } } },
          responses: {
            ...ok('200', 'the updated leg with its new state and pricing', schemaRef('Leg')),
            '404': err('unknown leg'),
            '409': err('event not allowed in the current state, leg already finished, or the vehicle is where the trip may not end (move it and retry)'),
            '503': err('the vehicle did not lock (the leg is unchanged; retry after Retry-After, e.g. a jammed Bluetooth lock), or the database is unavailable', { 'Retry-After': RETRY_AFTER }),
          },
        }),
      },
      '/support': {
        post: op({
          operationId: 'support',
          summary: 'Raise a support ticket for a booking',
          description: '`/support/` (the TOMP path) is the same endpoint.',
          tag: 'Support',
          body: {
            schema: oas(SupportRequest),
            example: { id: '0b8e2f4c-6a1d-4e3b-9c5f-7d2a1b3c4e5f', supportType: 'BROKEN_DOWN', time: '2026-11-21T10:00:00Z', contactInformationEndUser: '+34 600 000 000', comment: 'brake does not work' },
          },
          responses: { ...ok('200', 'the ticket with its status', schemaRef('SupportStatus')), '404': err('unknown booking, or one of another partner') },
        }),
      },
    },
    components: {
      schemas: SCHEMAS,
      securitySchemes: { XAccessToken: { type: 'apiKey', in: 'header', name: 'X-Access-Token', description: 'the MaaS provider’s API key' } },
    },
    security: [{ XAccessToken: [] }],
  };
}
