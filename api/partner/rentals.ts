/**
 * Rentals: start, end, reads; the signed parking photo upload and receipt download
 * (partner-rental-api.md §4, error table §7; decisions in docs/partner-api.md).
 */
import { sql } from '../../lib/core/sql/typed.js';
import { startRental, endRental } from '../../lib/domain/rentals/engine.js';
import { RentalError, requireUuid } from '../../lib/domain/rentals/errors.js';
import { activeRental, getRental, userRentals, withFigures } from './rental-reads.js';
import { submitParkingPhoto } from './photo.js';
import { toRentalRecord } from '../../lib/domain/rentals/types.js';
import { storeReceipt, receiptKey } from '../../lib/domain/rentals/receipts.js';
import { verifySignedPath } from './signed-urls.js';
import { UUID_V4_SCHEMA } from '../../lib/core/uuid.js';
import { StartRentalBody, EndRentalBody } from '../../schemas/partner/requests.js';
import { dataOf, PhotoDecisionRecord, RentalRecordSchema } from '../../schemas/partner/responses.js';
import { principalOf } from './auth.js';
import { readRaw } from './body.js';
import { endpoint, idParam, type PartnerEndpoint } from './endpoint.js';
import { presentRental } from './responses.js';

const rentals = (description: string) => ({ 200: { description, schema: dataOf(RentalRecordSchema, true) } });

/**
 * The signed addresses: the id is checked as the URL's signature is (a malformed one cannot have
 * been signed), kept as sent because the signature covers the path as sent.
 */
const signed = {
  params: { id: { description: 'rental id (UUID v4)', schema: UUID_V4_SCHEMA, invalid: 'ErrInvalidURLSignature' as const } },
  query: {
    expires: {
      description: 'expiry of the link, Unix seconds (part of the signed URL)',
      schema: { type: 'string', maxLength: 12, pattern: '^[0-9]{1,12}$' },
      required: true,
      invalid: 'ErrInvalidURLSignature' as const,
    },
    sig: {
      description: 'HMAC signature of the link (part of the signed URL)',
      schema: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9_-]{1,128}$' },
      required: true,
      invalid: 'ErrInvalidURLSignature' as const,
    },
  },
};

export const RENTAL_ENDPOINTS: PartnerEndpoint[] = [
  endpoint<StartRentalBody>({
    operationId: 'startRental',
    idempotent: true,
    method: 'post',
    path: '/v1/rental/start',
    summary: 'Start a rental',
    description:
      'Unlocks the vehicle and starts a rental for the user. A user can rent one vehicle at a time; vehicles cannot be pre-booked. `beginnersMode` limits the speed to the zone’s reduced speed. Where the vehicle stands the zone rules must permit a start (GBFS `ride_start_allowed`: inside the operations areas, outside no-riding areas); else 405 ZoneIsSleeping "zone not permitting rentals".',
    tag: 'Rentals',
    auth: 'apiKey',
    body: {
      schema: StartRentalBody,
      required: true,
      example: {
        userId: '3f1c2a4e-8d2b-4c1e-9f7a-1b2c3d4e5f60',
        vehicleId: '9b2e4f7a-1c3d-4e5f-8a9b-0c1d2e3f4a5b',
        userStartLocation: { latitude: 40.4168, longitude: -3.7038 },
      },
    },
    responses: rentals('one rental in state RUNNING'),
    errors: [
      {
        400: ['InvalidUserId', 'InvalidVehicleId', 'UserNotFound', 'RentalAlreadyExists', 'VehicleNotFound', 'UserLicenceVerificationRequired'],
        405: ['UserTooFarFromVehicle', 'ZoneIsSleeping', 'VehicleNotAvailable'],
        500: ['FailedToUpdateVehicle', 'FailedToUnlockVehicle', 'FailedToStartRental'],
      },
    ],
    handle: async (app, ctx, { body }) => {
      const rental = await startRental(app, {
        partnerId: principalOf(ctx).partnerId,
        userId: requireUuid(body.userId, 'InvalidUserId'),
        vehicleId: requireUuid(body.vehicleId, 'InvalidVehicleId'),
        userStartLocation: body.userStartLocation,
        userLicenseValidated: body.userLicenseValidated,
        beginnersMode: body.beginnersMode,
        source: 'partner',
      });
      const now = app.clock.now();
      ctx.body = { data: [presentRental(app.config, withFigures(rental, now, 0), now)] };
    },
  }),
  endpoint<EndRentalBody>({
    operationId: 'endRental',
    idempotent: true,
    method: 'post',
    path: '/v1/rental/{rentalId}/end',
    summary: 'End a rental',
    description:
      "Locks the vehicle and returns the ended rental with its final cost and `photoUploadURL`. The body may be empty. Ending must be permitted where the vehicle stands, by the same zone rules the GBFS geofencing_zones publish (`ride_end_allowed`): never outside the zone's operations areas, nor in no-parking or no-riding areas, and only inside a parking spot in a parking-spot zone; else 405 FailedToEndRentalNoParking.",
    tag: 'Rentals',
    auth: 'apiKey',
    params: { rentalId: idParam('rental id (UUID v4)', 'InvalidRentalID') },
    body: { schema: EndRentalBody, required: false, example: { userEndLocation: { latitude: 40.4169, longitude: -3.7035 } } },
    responses: rentals('the ended rental, including photoUploadURL'),
    errors: [{ 400: ['RentalAlreadyEnded'], 404: ['RentalIDDoesNotExist'], 405: ['FailedToEndRentalNoParking'], 500: ['FailedToEndRental'] }],
    handle: async (app, ctx, { params, body }) => {
      const rental = await endRental(app, { partnerId: principalOf(ctx).partnerId, rentalId: params.rentalId, userEndLocation: body.userEndLocation });
      ctx.body = { data: [presentRental(app.config, rental, app.clock.now())] };
    },
  }),
  endpoint({
    operationId: 'getActiveRental',
    method: 'get',
    path: '/v1/rental/user/{id}/active',
    summary: "The user's running rental",
    description: 'The rental of the user in state RUNNING, as an array of one; 404 ActiveRentalNotFound when the user has none.',
    tag: 'Rentals',
    auth: 'apiKey',
    params: { id: idParam('user id (UUID v4)', 'InvalidInput', '3f1c2a4e-8d2b-4c1e-9f7a-1b2c3d4e5f60') },
    responses: rentals('the running rental (an array of one)'),
    errors: [{ 404: ['ActiveRentalNotFound'] }],
    handle: async (app, ctx, { params }) => {
      const now = app.clock.now();
      const rental = await activeRental(app.db, params.id, principalOf(ctx).partnerId, now);
      if (!rental) throw new RentalError('ActiveRentalNotFound');
      ctx.body = { data: [presentRental(app.config, rental, now)] };
    },
  }),
  endpoint({
    operationId: 'getUserRentals',
    method: 'get',
    path: '/v1/rental/user/{id}',
    summary: 'All rentals of a user',
    description: 'Newest first.',
    tag: 'Rentals',
    auth: 'apiKey',
    params: { id: idParam('user id (UUID v4)', 'InvalidUserId', '3f1c2a4e-8d2b-4c1e-9f7a-1b2c3d4e5f60') },
    query: {
      limit: {
        description: 'at most this many rentals (default and maximum 1000)',
        schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 1000 },
        invalid: 'InvalidInput',
      },
    },
    responses: rentals('the rentals of the user'),
    errors: [{ 404: ['ErrUserNotFound'] }],
    handle: async (app, ctx, { params, query }) => {
      const partnerId = principalOf(ctx).partnerId;
      const { exists } = await app.db.one(sql('PartnerUserExists'), [params.id, partnerId]);
      if (!exists) throw new RentalError('ErrUserNotFound');
      const now = app.clock.now();
      const list = await userRentals(app.db, params.id, partnerId, now, (query.limit as number | undefined) ?? 1000);
      ctx.body = { data: list.map((r) => presentRental(app.config, r, now)) };
    },
  }),
  endpoint({
    operationId: 'getRental',
    method: 'get',
    path: '/v1/rental/{id}',
    summary: 'Get a rental',
    description: 'Poll at most every 10 seconds. Also accepts `Authorization: Bearer <API key>`.',
    tag: 'Rentals',
    auth: 'apiKey',
    params: { id: idParam('rental id (UUID v4)', 'InvalidRentalID') },
    responses: rentals('the rental (an array of one)'),
    errors: [{ 404: ['RentalIDDoesNotExist'] }],
    handle: async (app, ctx, { params }) => {
      const now = app.clock.now();
      const rental = await getRental(app.db, params.id, principalOf(ctx).partnerId, now);
      if (!rental) throw new RentalError('RentalIDDoesNotExist');
      ctx.body = { data: [presentRental(app.config, rental, now)] };
    },
  }),
  endpoint({
    operationId: 'uploadParkingPhoto',
    method: 'put',
    path: '/v1/rental/{id}/photo',
    summary: 'Upload the parking photo (the photoUploadURL)',
    description:
      'Send a PUT to the `photoUploadURL` of the end-rental response, within 30 minutes of the end: raw JPEG bytes (not base64), `Content-Type: image/jpeg`, portrait orientation, regular lens. The URL is pre-signed; no API key. No photo results in a bad-parking decision. The whole image must decode: a body with JPEG headers but missing or cut-off image data is 400 InvalidParkingPhoto and nothing is recorded. Every upload that makes a decision answers with a top-level `decision`: `bad-photo` (not portrait, wide-angle lens) comes as 422 ValidateParkingPhotoFailed with `decision: "bad-photo"` beside `errors`. After good-parking or bad-parking the decision is final (409); after bad-photo another photo may be sent while the window is open. The URL is also on every read of the ended rental while the window is open.',
    tag: 'Parking photo and receipt',
    auth: 'signedUrl',
    ...signed,
    // read by the handler: the signature is checked before a byte of the photo is
    body: { mediaType: 'image/jpeg', required: true, description: 'the JPEG photo, raw bytes, at most MAX_PHOTO_BYTES (10 MiB by default; 413 beyond)' },
    responses: { 200: { description: 'the parking decision', schema: PhotoDecisionRecord } },
    errors: [
      {
        400: ['InvalidParkingPhoto'],
        404: ['RentalIDDoesNotExist'],
        409: ['ErrRentalIsNotEnded', 'ParkingPhotoAlreadyDecided'],
        410: ['ParkingPhotoUploadWindowExpired'],
        413: ['InvalidParkingPhoto'],
        415: ['InvalidParkingPhoto'],
        422: ['ValidateParkingPhotoFailed'],
      },
    ],
    handle: async (app, ctx, { params }) => {
      const check = verifySignedPath(app.config.signingSecret, 'photo', `/v1/rental/${params.id}/photo`, ctx.query, app.clock.now());
      if (check === 'invalid') throw new RentalError('ErrInvalidURLSignature');
      if (check === 'expired') throw new RentalError('ParkingPhotoUploadWindowExpired');
      const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase();
      if (type !== 'image/jpeg') throw new RentalError('InvalidParkingPhoto', { status: 415, detail: 'Content-Type must be image/jpeg' });
      const bytes = await readRaw(ctx, app.config.maxPhotoBytes, 'InvalidParkingPhoto');
      if (bytes.length === 0) throw new RentalError('InvalidParkingPhoto', { detail: 'empty photo' });
      ctx.body = { decision: await submitParkingPhoto(app, params.id.toLowerCase(), bytes) };
    },
  }),
  endpoint({
    operationId: 'downloadReceipt',
    method: 'get',
    path: '/v1/rental/{id}/receipt',
    summary: 'Download the receipt (receipt.url)',
    description: 'The signed `receipt.url` of an ended rental: the PDF receipt. No API key.',
    tag: 'Parking photo and receipt',
    auth: 'signedUrl',
    ...signed,
    responses: {
      200: {
        description: 'the receipt',
        mediaType: 'application/pdf',
        headers: { 'Content-Disposition': { description: '`inline; filename="receipt-{id}.pdf"`' } },
      },
    },
    errors: [{ 404: ['RentalIDDoesNotExist'] }],
    handle: async (app, ctx, { params }) => {
      const check = verifySignedPath(app.config.signingSecret, 'receipt', `/v1/rental/${params.id}/receipt`, ctx.query, app.clock.now());
      if (check !== 'ok') throw new RentalError('ErrInvalidURLSignature', { detail: check === 'expired' ? 'receipt link expired' : undefined });
      const row = await app.db.maybeOne(sql('RentalGet'), [params.id.toLowerCase(), null]);
      if (!row || row.state === 'RUNNING') throw new RentalError('RentalIDDoesNotExist');
      let obj = await app.store.get(receiptKey(row.id));
      if (!obj) {
        // not stored at end time (store outage): render it now
        await storeReceipt(app, toRentalRecord(row));
        obj = await app.store.get(receiptKey(row.id));
        if (!obj) throw new RentalError('InternalServerError');
      }
      ctx.type = 'application/pdf';
      ctx.set('Content-Disposition', `inline; filename="receipt-${row.id}.pdf"`);
      ctx.set('Cache-Control', 'private, max-age=3600');
      ctx.body = obj.body;
    },
  }),
];
