/**
 * The parking photo of an ended rental and its decision. The caller has checked the signed URL;
 * here: the rental is ended, the 30-minute window is open, the photo is a portrait regular-lens JPEG,
 * and the decision comes from the zone's parking rules where the vehicle stood at the end.
 *
 * - A JPEG that fails the portrait or lens check is stored and decided `bad-photo` (422
 *   ValidateParkingPhotoFailed, with the top-level `decision` every decided upload carries); the
 *   partner may upload a better one while the window is open.
 * - Bytes that are not a JPEG that decodes whole (api/partner/photo-checks.ts) are refused (InvalidParkingPhoto)
 *   and nothing is recorded: the window stays open.
 * - After good-parking or bad-parking the decision is final: another upload gets 409.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { checkPhoto } from './photo-checks.js';
import { parkingAt } from '../../lib/domain/zones.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import type { PhotoDecision } from '../../lib/domain/rentals/types.js';
import { metrics } from '../../lib/core/metrics.js';

export const PHOTO_WINDOW_MS = 30 * 60 * 1000;

export async function submitParkingPhoto(ctx: AppContext, rentalId: string, bytes: Buffer): Promise<PhotoDecision> {
  const now = ctx.clock.now();
  const r = await ctx.db.maybeOne(sql('RentalPhotoTarget'), [rentalId]);
  if (!r) throw new RentalError('RentalIDDoesNotExist');
  if (r.state === 'RUNNING') throw new RentalError('ErrRentalIsNotEnded');
  // ended: rentals' CHECKs give an ended rental its end time and end location, so ended_at, lat and lng are set
  if (r.ended_at!.getTime() + PHOTO_WINDOW_MS <= now.getTime()) throw new RentalError('ParkingPhotoUploadWindowExpired');
  if (r.photo_decision !== null && r.photo_decision !== 'bad-photo') throw new RentalError('ParkingPhotoAlreadyDecided');

  const check = await checkPhoto(bytes);
  if (!check.ok && check.reason === 'not-jpeg') throw new RentalError('InvalidParkingPhoto', { detail: 'photo is not a complete, readable JPEG image' });

  const decision: PhotoDecision = check.ok ? (await parkingAt(ctx.db, r.zone_id, { lat: r.lat!, lng: r.lng! }, r.vehicle_type_id)).decision : 'bad-photo';
  const key = `photos/${rentalId}/${now.getTime()}.jpg`;
  await ctx.store.put(key, bytes, { contentType: 'image/jpeg' });
  const recorded = await ctx.db.maybeOne(sql('RentalRecordPhoto'), [rentalId, key, decision, now]);
  if (!recorded) {
    // lost a race with another upload or the expiry sweep: the earlier decision stands
    await ctx.store.delete(key).catch(() => undefined);
    throw new RentalError('ParkingPhotoAlreadyDecided');
  }
  metrics.photoDecisions.inc({ decision });
  if (!check.ok) {
    const why = check.reason === 'not-portrait' ? 'photo must be in portrait orientation' : 'photo must be taken with a regular (not wide-angle) lens';
    throw new RentalError('ValidateParkingPhotoFailed', { detail: why, meta: { decision: 'bad-photo' }, members: { decision: 'bad-photo' } });
  }
  return decision;
}
