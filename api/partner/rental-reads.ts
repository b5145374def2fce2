/**
 * Reads of rentals for the APIs. A running rental is returned with its live figures (duration so far,
 * distance so far, cost if it ended now) so that a partner polling it can show
 * the running price; an ended one with what was charged.
 */
import { type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { computeCost } from '../../lib/domain/pricing.js';
import { toRentalRecord, type RentalRecord } from '../../lib/domain/rentals/types.js';

/** Fills the figures of a running rental as of `now` (duration so far, distance so far, cost if it ended now). */
async function live(db: Queryable, r: RentalRecord, now: Date): Promise<RentalRecord> {
  if (r.state !== 'RUNNING') return r;
  const { distance_m: distanceM } = await db.one(sql('RentalRideDistance'), [r.id]);
  return withFigures(r, now, distanceM);
}

/** The running rental's figures for a known distance (a rental that just started: 0, no query). */
export function withFigures(r: RentalRecord, now: Date, distanceM: number): RentalRecord {
  if (r.state !== 'RUNNING') return r;
  const cost = computeCost({
    startPrice: r.startPrice ?? 0,
    pricePerMinute: r.pricePerMinute ?? 0,
    vatRate: r.vatRate,
    durationSeconds: (now.getTime() - r.startedAt.getTime()) / 1000,
    distanceMeters: distanceM,
    endedAt: now,
    charge: true,
  });
  return { ...r, durationMin: cost.durationMin, distanceM, subtotal: cost.subtotal, totalAmount: cost.total, vatAmount: cost.vat };
}

/** The rental, or undefined (also when it belongs to another partner than `partnerId`). */
export async function getRental(db: Queryable, id: string, partnerId: string | null, now: Date): Promise<RentalRecord | undefined> {
  const row = await db.maybeOne(sql('RentalGet'), [id, partnerId]);
  return row ? live(db, toRentalRecord(row), now) : undefined;
}

export async function activeRental(db: Queryable, userId: string, partnerId: string, now: Date): Promise<RentalRecord | undefined> {
  const row = await db.maybeOne(sql('RentalActiveByUser'), [userId, partnerId]);
  return row ? live(db, toRentalRecord(row), now) : undefined;
}

/** The user's rentals, newest first. */
export async function userRentals(db: Queryable, userId: string, partnerId: string, now: Date, limit = 1000): Promise<RentalRecord[]> {
  const rows = await db.many(sql('RentalListByUser'), [userId, partnerId, limit]);
  return Promise.all(rows.map((r) => live(db, toRentalRecord(r), now)));
}
