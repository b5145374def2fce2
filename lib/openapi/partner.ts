/**
 * OpenAPI 3.1 document of the partner rental API (partner-rental-api.md; code in api/partner/).
 * Request bodies come from schemas/partner/requests.ts, error codes per status from the
 * requirement's error table as lib/rentals/errors.ts catalogues them.
 */
import { EndRentalBody, RegisterUserBody, StartRentalBody, UpdateUserBody } from '../../schemas/partner/requests.js';
import type { OpenApiDocument, Operation, Parameter, PathItem, Response, Schema, SecurityRequirement } from './common.js';
import { json, oas, pathParam, queryParam, schemaRef, UUID_V4 } from './common.js';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, sharedErrorResponses, type ErrorTable } from './errors-partner.js';
import { PARTNER_RECORD_SCHEMAS } from './records-partner.js';

const KEY: SecurityRequirement[] = [{ XAuthToken: [] }, { BearerToken: [] }];

const data = (item: Schema, array: boolean): Schema => ({
  type: 'object',
  required: ['data'],
  properties: { data: array ? { type: 'array', items: item } : item },
});

function ok(description: string, schema: Schema, extra: Partial<Response> = {}): Record<string, Response> {
  return { '200': { description, content: json(schema), ...extra } };
}

interface OpSpec {
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  parameters?: Parameter[];
  body?: { schema: Schema; required: boolean; example?: unknown };
  success: Record<string, Response>;
  errors: ErrorTable[];
  /** false: the signed-URL endpoints, whose credential is the URL itself */
  apiKey?: boolean;
  deprecated?: boolean;
}

function op(s: OpSpec): Operation {
  const apiKey = s.apiKey !== false;
  return {
    operationId: s.operationId,
    summary: s.summary,
    ...(s.description ? { description: s.description } : {}),
    tags: [s.tag],
    ...(s.deprecated ? { deprecated: true } : {}),
    ...(s.parameters?.length ? { parameters: s.parameters } : {}),
    ...(s.body ? { requestBody: { required: s.body.required, content: json(s.body.schema, s.body.example) } } : {}),
    responses: { ...s.success, ...errorResponses(...s.errors, ...(apiKey ? [AUTH_ERRORS] : [])) },
    security: apiKey ? KEY : [],
  };
}

const userId = pathParam('id', 'user id (UUID v4)', UUID_V4, '3f1c2a4e-8d2b-4c1e-9f7a-1b2c3d4e5f60');
const rentalId = pathParam('id', 'rental id (UUID v4)', UUID_V4);
const vehicleId = pathParam('id', 'vehicle id (UUID v4)', UUID_V4);
const zoneId = pathParam('zoneId', 'zone id (see GET /v1/zone/info)', { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' }, 'madrid');
const signature = [
  queryParam('expires', 'expiry of the link, Unix seconds (part of the signed URL)', { type: 'string', pattern: '^[0-9]{1,12}$' }, true),
  queryParam('sig', 'HMAC signature of the link (part of the signed URL)', { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' }, true),
];

function userPaths(plural: boolean): Record<string, PathItem> {
  const suffix = plural ? 'Plural' : '';
  const alias = plural ? ' (alias of the singular path used in some of the requirement’s samples)' : '';
  const get = op({
    operationId: `getUser${suffix}`,
    summary: `Get a user${alias}`,
    tag: 'Users',
    parameters: [userId],
    success: ok('the user', data(schemaRef('User'), false)),
    errors: [{ 400: ['InvalidUserId'], 404: ['ErrUserNotFound'] }],
  });
  const patch = op({
    operationId: `updateUser${suffix}`,
    summary: `Update a user${alias}`,
    description: 'Only the fields sent change. Unknown fields are refused (InvalidRequestBody).',
    tag: 'Users',
    parameters: [userId],
    body: { schema: oas(UpdateUserBody), required: true, example: { email: 'new.address@example.com' } },
    success: ok('the updated user', data(schemaRef('User'), false)),
    errors: [BODY_ERRORS, { 400: ['InvalidUserId', 'EmptyUserEmailID', 'ErrInvalidUserEmailID'], 404: ['ErrUserNotFound'] }],
  });
  const del = op({
    operationId: `deleteUser${suffix}`,
    summary: `Erase a user (GDPR)${alias}`,
    description: 'Removes the personal data of the user (e-mail and external id are erased, rentals stay for accounting and the feeds). Not possible while a rental runs (409).',
    tag: 'Users',
    parameters: [userId],
    success: { '204': { description: 'erased; no body' } },
    errors: [{ 400: ['InvalidUserId'], 404: ['ErrUserNotFound'], 409: ['UserHasActiveRental'] }],
  });
  return plural
    ? { '/v1/users/{id}': { get, patch, delete: del } }
    : { '/v1/user/id/{id}': { get }, '/v1/user/{id}': { patch, delete: del } };
}

export function partnerDocument(opts: { publicBaseUrl: string }): OpenApiDocument {
  const paths: Record<string, PathItem> = {
    '/v1/user/register': {
      post: op({
        operationId: 'registerUser',
        summary: 'Register a user',
        description: 'A user must be registered before a rental can start. No uniqueness constraint on e-mail or externalId.',
        tag: 'Users',
        body: { schema: { ...oas(RegisterUserBody), required: ['email', 'externalId'] }, required: true, example: { email: 'rider@example.com', externalId: 'partner-user-42' } },
        success: ok('the new user', data(schemaRef('User'), false)),
        errors: [BODY_ERRORS, { 400: ['ErrEmptyUserExternalID', 'EmptyUserEmailID', 'ErrInvalidUserEmailID'], 500: ['ErrUserRegistrationFailed'] }],
      }),
    },
    ...userPaths(false),
    ...userPaths(true),
    '/v1/rental/start': {
      post: op({
        operationId: 'startRental',
        summary: 'Start a rental',
        description:
          'Unlocks the vehicle and starts a rental for the user. A user can rent one vehicle at a time; vehicles cannot be pre-booked. `beginnersMode` limits the speed to the zone’s reduced speed. Where the vehicle stands the zone rules must permit a start (GBFS `ride_start_allowed`: inside the operations areas, outside no-riding areas); else 405 ZoneIsSleeping "zone not permitting rentals".',
        tag: 'Rentals',
        body: {
          schema: oas(StartRentalBody),
          required: true,
          example: { userId: '3f1c2a4e-8d2b-4c1e-9f7a-1b2c3d4e5f60', vehicleId: '9b2e4f7a-1c3d-4e5f-8a9b-0c1d2e3f4a5b', userStartLocation: { latitude: 40.4168, longitude: -3.7038 } },
        },
        success: ok('one rental in state RUNNING', data(schemaRef('Rental'), true)),
        errors: [
          BODY_ERRORS,
          {
            400: ['InvalidUserId', 'InvalidVehicleId', 'UserNotFound', 'RentalAlreadyExists', 'VehicleNotFound', 'UserLicenceVerificationRequired'],
            405: ['UserTooFarFromVehicle', 'ZoneIsSleeping', 'VehicleNotAvailable'],
            500: ['FailedToUpdateVehicle', 'FailedToUnlockVehicle', 'FailedToStartRental'],
          },
        ],
      }),
    },
    '/v1/rental/{rentalId}/end': {
      post: op({
        operationId: 'endRental',
        summary: 'End a rental',
        description:
          'Locks the vehicle and returns the ended rental with its final cost and `photoUploadURL`. The body may be empty. Ending must be permitted where the vehicle stands, by the same zone rules the GBFS geofencing_zones publish (`ride_end_allowed`): never outside the zone\'s operations areas, nor in no-parking or no-riding areas, and only inside a parking spot in a parking-spot zone; else 405 FailedToEndRentalNoParking.',
        tag: 'Rentals',
        parameters: [pathParam('rentalId', 'rental id (UUID v4)', UUID_V4)],
        body: { schema: oas(EndRentalBody), required: false, example: { userEndLocation: { latitude: 40.4169, longitude: -3.7035 } } },
        success: ok('the ended rental, including photoUploadURL', data(schemaRef('Rental'), true)),
        errors: [BODY_ERRORS, { 400: ['InvalidRentalID', 'RentalAlreadyEnded'], 404: ['RentalIDDoesNotExist'], 405: ['FailedToEndRentalNoParking'], 500: ['FailedToEndRental'] }],
      }),
    },
    '/v1/rental/{id}': {
      get: op({
        operationId: 'getRental',
        summary: 'Get a rental',
        description: 'Poll at most every 10 seconds. Also accepts `Authorization: Bearer <API key>`.',
        tag: 'Rentals',
        parameters: [rentalId],
        success: ok('the rental (an array of one)', data(schemaRef('Rental'), true)),
        errors: [{ 400: ['InvalidRentalID'], 404: ['RentalIDDoesNotExist'] }],
      }),
    },
    '/v1/rental/user/{id}/active': {
      get: op({
        operationId: 'getActiveRental',
        summary: "The user's running rental",
        tag: 'Rentals',
        parameters: [userId],
        success: ok('the running rental (an array of one)', data(schemaRef('Rental'), true)),
        errors: [{ 400: ['InvalidInput'], 404: ['ActiveRentalNotFound'] }],
      }),
    },
    '/v1/rental/user/{id}': {
      get: op({
        operationId: 'getUserRentals',
        summary: 'All rentals of a user',
        description: 'Newest first.',
        tag: 'Rentals',
        parameters: [userId, queryParam('limit', 'at most this many rentals (default and maximum 1000)', { type: 'integer', minimum: 1, maximum: 1000 })],
        success: ok('the rentals of the user', data(schemaRef('Rental'), true)),
        errors: [{ 400: ['InvalidUserId', 'InvalidInput'], 404: ['ErrUserNotFound'] }],
      }),
    },
    '/v1/rental/{id}/photo': {
      put: {
        ...op({
          operationId: 'uploadParkingPhoto',
          summary: 'Upload the parking photo (the photoUploadURL)',
          description:
            'Send a PUT to the `photoUploadURL` of the end-rental response, within 30 minutes of the end: raw JPEG bytes (not base64), `Content-Type: image/jpeg`, portrait orientation, regular lens. The URL is pre-signed; no API key. No photo results in a bad-parking decision. The whole image must decode: a body with JPEG headers but missing or cut-off image data is 400 InvalidParkingPhoto and nothing is recorded. Every upload that makes a decision answers with a top-level `decision`: `bad-photo` (not portrait, wide-angle lens) comes as 422 ValidateParkingPhotoFailed with `decision: "bad-photo"` beside `errors`. After good-parking or bad-parking the decision is final (409); after bad-photo another photo may be sent while the window is open. The URL is also on every read of the ended rental while the window is open.',
          tag: 'Parking photo and receipt',
          parameters: [rentalId, ...signature],
          success: ok('the parking decision', schemaRef('PhotoDecision')),
          errors: [
            {
              400: ['InvalidParkingPhoto'],
              403: ['ErrInvalidURLSignature'],
              404: ['RentalIDDoesNotExist'],
              409: ['ErrRentalIsNotEnded', 'ParkingPhotoAlreadyDecided'],
              410: ['ParkingPhotoUploadWindowExpired'],
              413: ['InvalidParkingPhoto'],
              415: ['InvalidParkingPhoto'],
              422: ['ValidateParkingPhotoFailed'],
              500: ['InternalServerError'],
              503: ['ServiceUnavailable'],
            },
          ],
          apiKey: false,
        }),
        requestBody: { required: true, description: 'the JPEG photo, raw bytes', content: { 'image/jpeg': { schema: { type: 'string', contentMediaType: 'image/jpeg' } } } },
      },
    },
    '/v1/rental/{id}/receipt': {
      get: op({
        operationId: 'downloadReceipt',
        summary: 'Download the receipt (receipt.url)',
        description: 'The signed `receipt.url` of an ended rental: the PDF receipt. No API key.',
        tag: 'Parking photo and receipt',
        parameters: [rentalId, ...signature],
        success: {
          '200': {
            description: 'the receipt',
            headers: { 'Content-Disposition': { description: '`inline; filename="receipt-{id}.pdf"`', schema: { type: 'string' } } },
            content: { 'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } } },
          },
        },
        errors: [{ 403: ['ErrInvalidURLSignature'], 404: ['RentalIDDoesNotExist'], 500: ['InternalServerError'], 503: ['ServiceUnavailable'] }],
        apiKey: false,
      }),
    },
    '/v1/pricing/vehicle/{id}': {
      get: op({
        operationId: 'getVehiclePricing',
        summary: 'Price of a vehicle',
        description: 'Prices are dynamic: do not cache them (`Cache-Control: no-store`), ask when the user needs them.',
        tag: 'Vehicles and pricing',
        parameters: [vehicleId],
        success: ok('the pricing', data(schemaRef('Pricing'), false)),
        errors: [{ 400: ['InvalidVehicleId'], 404: ['VehicleNotFound'] }],
      }),
    },
    '/v1/vehicles': {
      get: op({
        operationId: 'listVehicles',
        summary: 'Vehicles available for rental in a zone',
        description: 'With their price. Refresh about every 7 seconds. `/v1/vehicles/?zoneID=` (trailing slash) is the same endpoint. A sleeping zone has no available vehicles.',
        tag: 'Vehicles and pricing',
        parameters: [queryParam('zoneID', 'zone id', { type: 'string' }, true, 'madrid')],
        success: ok('the available vehicles', data(schemaRef('Vehicle'), true)),
        errors: [{ 400: ['EmptyZoneID'], 404: ['ZoneNotFound'] }],
      }),
    },
    '/v1/vehicles/code/{code}': {
      get: op({
        operationId: 'getVehicleByCode',
        summary: 'Vehicle by its printed code',
        description: 'The 4 characters on the vehicle (also the end of its QR code address); case-insensitive.',
        tag: 'Vehicles and pricing',
        parameters: [pathParam('code', '4 alphanumeric characters', { type: 'string', pattern: '^[A-Za-z0-9]{4}$' }, 'AB12')],
        success: ok('the vehicle (an array of one)', data(schemaRef('Vehicle'), true)),
        errors: [{ 400: ['BadVehicleCode'], 404: ['VehicleNotFound'] }],
      }),
    },
    '/v1/vehicles/id/{id}': {
      get: op({
        operationId: 'getVehicleById',
        summary: 'Vehicle by id',
        tag: 'Vehicles and pricing',
        parameters: [vehicleId],
        success: ok('the vehicle (an array of one)', data(schemaRef('Vehicle'), true)),
        errors: [{ 400: ['InvalidVehicleID'], 404: ['VehicleNotFound'] }],
      }),
    },
    ...zonePaths(zoneId),
    '/v1/zone/id/{zoneId}/areasOccupancy': {
      get: op({
        operationId: 'getAreasOccupancy',
        summary: 'Occupancy of the parking spots of a zone',
        tag: 'Zones',
        parameters: [zoneId],
        success: ok('one record per parking-spot area', data(schemaRef('AreaOccupancy'), true)),
        errors: [{ 400: ['EmptyZoneID'], 404: ['ZoneNotFound'] }],
      }),
    },
    '/v1/zone/info': {
      get: op({
        operationId: 'getOperationalZones',
        summary: 'The operational zones the partner can access',
        tag: 'Zones',
        success: ok('the zones', data(schemaRef('OperationalZones'), false)),
        errors: [],
      }),
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Partner Rental API',
      version: '1.0.0',
      description: [
        'Register users, rent and end rentals, upload parking photos, read vehicles, prices and zones.',
        '',
        'Every request carries `X-Auth-Token: <API key>` (`Authorization: Bearer <API key>` is accepted too), except the signed photo upload and receipt addresses. Default rate limit: 4000 requests per minute per key, summed over all requests; 429 with `Retry-After` beyond it.',
        '',
        'Responses wrap records as `{data: …}`. Errors are JSON:API error objects `{"errors":[{"status","code","title","detail"}]}`; the `code` is the ErrorCode listed per status below. An unknown path under /v1 or /v2 answers 404 `NotFound`, a known path with another method 405 `MethodNotAllowed` (with `Allow`).',
        '',
        'No callbacks or webhooks: poll the rental (every 10 s at most), the vehicle list (about every 7 s) and the zone areas (at most every 6 hours).',
      ].join('\n'),
    },
    servers: [{ url: opts.publicBaseUrl, description: 'this deployment' }],
    tags: [
      { name: 'Users' },
      { name: 'Rentals' },
      { name: 'Parking photo and receipt', description: 'Signed addresses handed out in rental records; the URL is the credential.' },
      { name: 'Vehicles and pricing' },
      { name: 'Zones' },
    ],
    paths,
    components: {
      schemas: PARTNER_RECORD_SCHEMAS,
      responses: sharedErrorResponses(),
      securitySchemes: {
        XAuthToken: { type: 'apiKey', in: 'header', name: 'X-Auth-Token', description: 'the partner API key (valid 3 years)' },
        BearerToken: { type: 'http', scheme: 'bearer', description: 'the same API key as a Bearer value, as some samples of the requirement send it' },
      },
    },
    security: KEY,
  };
}

function zonePaths(zoneId: Parameter): Record<string, PathItem> {
  const areas = (v: 1 | 2): Operation =>
    op({
      operationId: `getZoneAreasV${v}`,
      summary: v === 1 ? 'Zone areas (v1, deprecated)' : 'Zone areas (v2)',
      description:
        (v === 1 ? 'Deprecated: use /v2, which adds the free-floating area type. ' : 'Same as v1 plus the free-floating area type. ') +
        'Zone areas change rarely: do not refresh more often than every 6 hours.',
      tag: 'Zones',
      deprecated: v === 1,
      parameters: [zoneId],
      success: ok('the areas of the zone', data(schemaRef('ZoneAreas'), false)),
      errors: [{ 400: ['EmptyZoneID'], 404: ['ZoneNotFound'] }],
    });
  const empty = (v: 1 | 2): Operation =>
    op({
      operationId: `getZoneAreasEmptyIdV${v}`,
      summary: 'Zone areas without a zone id',
      description: 'Always 400 `EmptyZoneID` (the requirement’s “zone id empty” row).',
      tag: 'Zones',
      deprecated: v === 1,
      success: {},
      errors: [{ 400: ['EmptyZoneID'] }],
    });
  return {
    '/v1/zone/id/{zoneId}': { get: areas(1) },
    '/v2/zone/id/{zoneId}': { get: areas(2) },
    '/v1/zone/id': { get: empty(1) },
    '/v2/zone/id': { get: empty(2) },
  };
}
