/**
 * Rental housekeeping, scheduled by the publisher every 30–60 s. The sweeps are idempotent and safe
 * with several workers at once: the engine's end is a conditional update under the rental's row
 * lock (a rental ends once), the photo expiry one UPDATE over SKIP LOCKED rows, and the claims of
 * starts whose process died are taken by a conditional update (lib/domain/rentals/claims.ts).
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { endRental } from '../../lib/domain/rentals/engine.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';

/** Requirement: a rental whose vehicle has not moved for 10 minutes ends automatically. */
const IDLE_AUTO_END_MS = 10 * 60 * 1000;
const BATCH = 500;

/**
 * Ends (ENDED_WITH_NO_CHARGE, vehicle locked through the gateway) every running rental whose vehicle
 * has not moved for 10 minutes and stands where ending is permitted. Returns how many it ended.
 * Rentals in a no-parking place keep running; a failed lock is retried on the next sweep.
 */
export async function autoEndIdleRentals(ctx: AppContext): Promise<number> {
  const idleBefore = new Date(ctx.clock.now().getTime() - IDLE_AUTO_END_MS);
  const candidates = await ctx.db.many(sql('RentalIdleCandidates'), [idleBefore, BATCH]);
  let ended = 0;
  for (const { id } of candidates) {
    try {
      await endRental(ctx, { rentalId: id, endState: 'ENDED_WITH_NO_CHARGE', idleBefore });
      ended++;
    } catch (err) {
      const code = err instanceof RentalError ? err.code : undefined;
      // another worker won, the vehicle moved meanwhile, or it stands where it cannot be parked
      if (code === 'RentalAlreadyEnded' || code === 'RentalNotIdle' || code === 'FailedToEndRentalNoParking') continue;
      ctx.log.warn({ err, rentalId: id }, 'auto end failed; retried on the next sweep');
    }
  }
  if (ended) ctx.log.info({ ended }, 'idle rentals ended');
  return ended;
}

/** Ended rentals without a photo decision 30 minutes after their end get bad-parking. Returns the count. */
export async function expirePhotoWindows(ctx: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await ctx.db.many(sql('RentalExpirePhotoWindows'), [ctx.clock.now(), BATCH]);
    total += rows.length;
    if (rows.length < BATCH) return total;
  }
}
