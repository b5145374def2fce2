/**
 * The TOMP subset's endpoint table (docs/tomp-api.md): every operation, once. The router
 * (./router.ts) mounts it, the OpenAPI document (api/openapi/tomp.ts) describes it and
 * /operator/meta lists it. Paths are relative to /edge/tomp.
 */
import type { HeaderSpec, ResponseSpec } from '../kit/endpoints.js';
import { BOOKING_OPERATIONS, BookingOperation, LEG_EVENTS, LegEvent, OneStopBookingRequest, SupportRequest } from '../../schemas/tomp/requests.js';
import { BookingRecord, LegRecord, PricingPlanRecord, RegionRecord, SupportStatusRecord, SystemInformationRecord } from '../../schemas/tomp/responses.js';
import { bookingEvents, bookingRead, legEvents, legRead, oneStop, support } from './bookings.js';
import { endpoint, type TompEndpoint } from './endpoint.js';
import { listedEndpoints, MAX_PAGE, meta, pricingPlans, regions, type ListedEndpoint } from './operator.js';

const CONTENT_LANGUAGE: HeaderSpec = {
  description: 'the language of the answer: the caller’s preferred tag from Accept-Language, else the booking’s, else `en`',
  required: true,
};

/** A 2xx answer: TOMP requires Content-Language on every one. */
const ok = (description: string, schema: object, headers: Record<string, HeaderSpec> = {}): ResponseSpec => ({
  description,
  schema,
  headers: { 'Content-Language': CONTENT_LANGUAGE, ...headers },
});
const id = (what: string) => ({ id: { description: `${what} id`, schema: { type: 'string', maxLength: 64 } } });

/** /operator/meta's list, derived from the table on its first request (the table is complete by then). */
let listed: ListedEndpoint[] | undefined;

export const TOMP_ENDPOINTS: readonly TompEndpoint[] = [
  endpoint({
    operationId: 'getMeta',
    method: 'get',
    path: '/operator/meta',
    summary: 'Operator metadata',
    description: 'An array with one object: version 1.6.1, the implemented endpoints, scenarios and process identifiers.',
    tag: 'Operator information',
    auth: 'accessToken',
    responses: { 200: ok('the metadata', { type: 'array', minItems: 1, maxItems: 1, items: SystemInformationRecord }) },
    errors: [],
    handle: (app, ctx) => meta(app, ctx, (listed ??= listedEndpoints(TOMP_ENDPOINTS))),
  }),
  endpoint({
    operationId: 'getRegions',
    method: 'get',
    path: '/operator/regions',
    summary: 'Operating regions',
    description:
      'OPERATING regions (the partner’s zones). With `areas=city`, also the areas of the city’s MDS Policy rules in force now, as TOMP area types (NO_PARKING, NO_ACCESS, SPEEDLIMIT), after the zones.',
    tag: 'Operator information',
    auth: 'accessToken',
    query: {
      offset: {
        description: 'records to skip',
        schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 },
        invalid: 'offset must be a non-negative integer, at most 2147483647',
      },
      limit: {
        description: `page size, at most ${MAX_PAGE}`,
        schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_PAGE },
        invalid: `limit must be a non-negative integer, at most ${MAX_PAGE}`,
      },
      areas: {
        description: '`city`: add the city’s rule areas in force (docs/city-policy.md); absent: OPERATING regions only',
        schema: { enum: ['city'] },
        invalid: 'areas must be `city` or absent',
      },
    },
    responses: { 200: ok('the regions', { type: 'array', items: RegionRecord }) },
    errors: [],
    meta: { maxPageSize: MAX_PAGE },
    handle: regions,
  }),
  endpoint({
    operationId: 'getPricingPlans',
    method: 'get',
    path: '/operator/pricing-plans',
    summary: 'Pricing plans',
    description: 'One plan per zone and vehicle type: a FIXED unlock fee and a FLEX price per MINUTE.',
    tag: 'Operator information',
    auth: 'accessToken',
    query: {
      regionId: {
        description: 'only the plans of this region',
        schema: { type: 'string', maxLength: 64 },
        invalid: 'regionId and stationId may be given once, at most 64 characters each',
      },
      stationId: {
        description: 'matches nothing: there are no stations',
        schema: { type: 'string', maxLength: 64 },
        invalid: 'regionId and stationId may be given once, at most 64 characters each',
      },
    },
    responses: { 200: ok('the pricing plans', { type: 'array', items: PricingPlanRecord }) },
    errors: [],
    handle: pricingPlans,
  }),
  endpoint<OneStopBookingRequest>({
    operationId: 'oneStopBooking',
    idempotent: true,
    method: 'post',
    path: '/bookings/one-stop',
    summary: 'Book one vehicle in one call',
    description:
      "Planning and booking in one step; `useAssets` holds exactly one vehicle id (the vehicle id, its GBFS vehicle_id or the printed code). With AUTO_COMMIT the rental starts at once (booking CONFIRMED, leg NOT_STARTED, estimated pricing); partners with postponed commit get a PENDING booking that must be committed (`POST /bookings/{id}/events`) before `Expires`. `from` is where the traveller stands: it must be within the zone's unlock distance (50 m) of the vehicle's own position (take it from GBFS vehicle_status), and within `radius` when one is sent (406 UserTooFarFromVehicle). In zones that require licence verification the booking needs a `customer.licenses` entry for the asset's class (STEP for kick scooters, BICYCLE for bicycles) whose `validUntil` is today or later, or absent; otherwise 406 UserLicenceVerificationRequired with a detail that says what is missing.",
    tag: 'Booking',
    auth: 'accessToken',
    headers: {
      'Accept-Language': {
        description: 'languages the user wants results in; keep it short, ideally one tag',
        schema: { type: 'string', maxLength: 256 },
        example: 'en',
      },
    },
    body: {
      schema: OneStopBookingRequest,
      required: true,
      example: {
        from: { coordinates: { lng: -3.7038, lat: 40.4168 } },
        useAssets: ['9b2e4f7a-1c3d-4e5f-8a9b-0c1d2e3f4a5b'],
        customer: { externalId: 'rider-42', licenses: [{ assetClass: 'STEP', validUntil: '2030-01-31', issuingCountry: 'DK' }] },
      },
    },
    responses: {
      201: ok('the booking', BookingRecord, {
        Expires: { description: 'HTTP date until which the result is valid; a PENDING booking expires then', required: true },
        Location: { description: 'the address of the booking', schema: { type: 'string', format: 'uri' }, required: true },
      }),
    },
    errors: [
      {
        406: [
          'no booking possible: unknown asset, vehicle not available, customer or vehicle already on a trip, zone sleeping, `from` beyond the unlock distance or `radius`, no valid `customer.licenses` where licence verification is required (see `type`; the detail says what is missing)',
        ],
        428: ['the customer is blocked by the operator'],
        503: ['the vehicle did not answer the unlock command (nothing is booked), or the database is unavailable'],
      },
    ],
    handle: oneStop,
  }),
  endpoint({
    operationId: 'getBooking',
    method: 'get',
    path: '/bookings/{id}',
    summary: 'A booking with its current state',
    description: 'The booking with its state (PENDING, CONFIRMED, … FINISHED, CANCELLED, EXPIRED) and its leg; a booking of another MaaS provider is 404.',
    tag: 'Booking',
    auth: 'accessToken',
    params: id('booking'),
    responses: { 200: ok('the booking', BookingRecord) },
    errors: [{ 404: ['unknown booking, or one of another partner'] }],
    handle: bookingRead,
  }),
  endpoint<BookingOperation>({
    operationId: 'bookingEvent',
    idempotent: true,
    method: 'post',
    path: '/bookings/{id}/events',
    summary: 'Commit or cancel a PENDING booking',
    description: '`operation` COMMIT starts the rental (CONFIRMED); CANCEL releases the vehicle (CANCELLED). Other operations → 400.',
    tag: 'Booking',
    auth: 'accessToken',
    params: id('booking'),
    body: { schema: BookingOperation, required: true, example: { operation: 'COMMIT' } },
    responses: { 200: ok('the booking', BookingRecord, { Expires: { description: 'HTTP date until which a PENDING booking is held' } }) },
    errors: [
      {
        404: ['unknown booking'],
        406: ['COMMIT failed: the vehicle can no longer be booked (the hold is released)'],
        409: ['the booking is not PENDING, or it has expired'],
      },
    ],
    meta: { eventTypes: BOOKING_OPERATIONS },
    handle: bookingEvents,
  }),
  endpoint({
    operationId: 'getLeg',
    method: 'get',
    path: '/legs/{id}',
    summary: 'A leg',
    description:
      'The leg of a booking: its state, the asset and the pricing (estimated until the leg is FINISHED, final then); a leg of another MaaS provider is 404.',
    tag: 'Trip execution',
    auth: 'accessToken',
    params: id('leg'),
    responses: { 200: ok('the leg', LegRecord) },
    errors: [{ 404: ['unknown leg, or one of another partner'] }],
    handle: legRead,
  }),
  endpoint<LegEvent>({
    operationId: 'legEvent',
    idempotent: true,
    method: 'post',
    path: '/legs/{id}/events',
    summary: 'Leg event: START_FINISHING or FINISH',
    description: 'FINISH ends the rental (vehicle locked) and answers the leg FINISHED with the final pricing. Other TOMP events → 400.',
    tag: 'Trip execution',
    auth: 'accessToken',
    params: id('leg'),
    body: { schema: LegEvent, required: true, example: { event: 'FINISH', userLocation: { coordinates: { lng: -3.7035, lat: 40.4169 } } } },
    responses: { 200: ok('the updated leg with its new state and pricing', LegRecord) },
    errors: [
      {
        404: ['unknown leg'],
        409: ['event not allowed in the current state, leg already finished, or the vehicle is where the trip may not end (move it and retry)'],
        503: ['the vehicle did not lock (the leg is unchanged; retry after Retry-After, e.g. a jammed Bluetooth lock), or the database is unavailable'],
      },
    ],
    meta: { eventTypes: LEG_EVENTS },
    handle: legEvents,
  }),
  endpoint<SupportRequest>({
    operationId: 'support',
    idempotent: true,
    method: 'post',
    path: '/support',
    summary: 'Raise a support ticket for a booking',
    description: '`/support/` (the TOMP path) is the same endpoint.',
    tag: 'Support',
    auth: 'accessToken',
    body: {
      schema: SupportRequest,
      required: true,
      example: {
        id: '0b8e2f4c-6a1d-4e3b-9c5f-7d2a1b3c4e5f',
        supportType: 'BROKEN_DOWN',
        time: '2026-11-21T10:00:00Z',
        contactInformationEndUser: '+34 600 000 000',
        comment: 'brake does not work',
      },
    },
    responses: { 200: ok('the ticket with its status', SupportStatusRecord) },
    errors: [{ 404: ['unknown booking, or one of another partner'] }],
    meta: { path: '/support/' },
    handle: support,
  }),
];
