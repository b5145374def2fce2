/**
 * Rentals: start, end, reads; the signed parking photo upload and receipt download
 * (partner-rental-api.md §4, error table §7; decisions in docs/partner-api.md).
 */
import type { Router, RouterMiddleware as Mw } from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { q } from '../../lib/db.js';
import { startRental, endRental } from '../../lib/rentals/engine.js';
import { RentalError, isUuidV4, requireUuid } from '../../lib/rentals/errors.js';
import { activeRental, getRental, userRentals, withFigures } from '../../lib/rentals/queries.js';
import { submitParkingPhoto } from '../../lib/rentals/photo.js';
import { toRentalRecord } from '../../lib/rentals/types.js';
import { storeReceipt, receiptKey } from '../../lib/receipts.js';
import { verifySignedPath } from '../../lib/signing.js';
import { StartRentalBody, EndRentalBody } from '../../schemas/partner/requests.js';
import { principalOf } from './auth.js';
import { readJson, readRaw } from './body.js';
import { presentRental } from './responses.js';

export function rentalRoutes(router: Router, app: AppContext, auth: Mw): void {
  router.post('/v1/rental/start', auth, async (ctx) => {
    const body = await readJson<StartRentalBody>(ctx, StartRentalBody, app.config.maxBodyBytes);
    const userId = requireUuid(body.userId, 'InvalidUserId');
    const vehicleId = requireUuid(body.vehicleId, 'InvalidVehicleId');
    const rental = await startRental(app, {
      partnerId: principalOf(ctx).partnerId,
      userId,
      vehicleId,
      userStartLocation: body.userStartLocation,
      userLicenseValidated: body.userLicenseValidated,
      beginnersMode: body.beginnersMode,
      source: 'partner',
    });
    const now = app.clock.now();
    ctx.body = { data: [presentRental(app.config, withFigures(rental, now, 0), now)] };
  });

  router.post('/v1/rental/:rentalId/end', auth, async (ctx) => {
    const rentalId = requireUuid(ctx.params.rentalId, 'InvalidRentalID');
    const body = await readJson<EndRentalBody>(ctx, EndRentalBody, app.config.maxBodyBytes, true);
    const rental = await endRental(app, { partnerId: principalOf(ctx).partnerId, rentalId, userEndLocation: body.userEndLocation });
    ctx.body = { data: [presentRental(app.config, rental, app.clock.now())] };
  });

  router.get('/v1/rental/user/:id/active', auth, async (ctx) => {
    const userId = requireUuid(ctx.params.id, 'InvalidInput');
    const now = app.clock.now();
    const rental = await activeRental(app.db, userId, principalOf(ctx).partnerId, now);
    if (!rental) throw new RentalError('ActiveRentalNotFound');
    ctx.body = { data: [presentRental(app.config, rental, now)] };
  });

  router.get('/v1/rental/user/:id', auth, async (ctx) => {
    const userId = requireUuid(ctx.params.id, 'InvalidUserId');
    let limit = 1000;
    if (ctx.query.limit !== undefined) {
      const raw = ctx.query.limit;
      if (typeof raw !== 'string' || !/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000) throw new RentalError('InvalidInput');
      limit = Number(raw);
    }
    const partnerId = principalOf(ctx).partnerId;
    const { exists } = await app.db.one(q('PartnerUserExists'), [userId, partnerId]);
    if (!exists) throw new RentalError('ErrUserNotFound');
    const now = app.clock.now();
    const rentals = await userRentals(app.db, userId, partnerId, now, limit);
    ctx.body = { data: rentals.map((r) => presentRental(app.config, r, now)) };
  });

  router.get('/v1/rental/:id', auth, async (ctx) => {
    const id = requireUuid(ctx.params.id, 'InvalidRentalID');
    const now = app.clock.now();
    const rental = await getRental(app.db, id, principalOf(ctx).partnerId, now);
    if (!rental) throw new RentalError('RentalIDDoesNotExist');
    ctx.body = { data: [presentRental(app.config, rental, now)] };
  });

  // Signed, not authenticated by API key: the URL itself is the credential.
  router.put('/v1/rental/:id/photo', async (ctx) => {
    const id = String(ctx.params.id);
    const check = verifySignedPath(app.config.signingSecret, 'photo', `/v1/rental/${id}/photo`, ctx.query, app.clock.now());
    if (check === 'invalid' || !isUuidV4(id)) throw new RentalError('ErrInvalidURLSignature');
    if (check === 'expired') throw new RentalError('ParkingPhotoUploadWindowExpired');
    const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'image/jpeg') throw new RentalError('InvalidParkingPhoto', { status: 415, detail: 'Content-Type must be image/jpeg' });
    const bytes = await readRaw(ctx, app.config.maxPhotoBytes, 'InvalidParkingPhoto');
    if (bytes.length === 0) throw new RentalError('InvalidParkingPhoto', { detail: 'empty photo' });
    const decision = await submitParkingPhoto(app, id.toLowerCase(), bytes);
    ctx.body = { decision };
  });

  router.get('/v1/rental/:id/receipt', async (ctx) => {
    const id = String(ctx.params.id);
    const check = verifySignedPath(app.config.signingSecret, 'receipt', `/v1/rental/${id}/receipt`, ctx.query, app.clock.now());
    if (check !== 'ok' || !isUuidV4(id)) throw new RentalError('ErrInvalidURLSignature', { detail: check === 'expired' ? 'receipt link expired' : undefined });
    const row = await app.db.maybeOne(q('RentalGet'), [id.toLowerCase(), null]);
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
  });
}
