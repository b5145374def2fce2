/**
 * The one pricing function of the platform (partner rentals and TOMP bookings). Prices include VAT
 * and are integer minor units; the rental keeps the prices committed at its start.
 *
 *   total    = startPrice + pricePerMinute × ceil(duration in minutes)     (VAT included)
 *   vat      = total − round(total / (1 + vatRate))
 *   subtotal = total − vat
 */

export interface CostInput {
  startPrice: number;
  pricePerMinute: number;
  /** VAT share as a fraction, e.g. 0.19 */
  vatRate: number;
  durationSeconds: number;
  distanceMeters: number;
  endedAt: Date;
  /** false for ENDED_WITH_NO_CHARGE: every amount is 0 */
  charge: boolean;
}

export interface Cost {
  durationMin: number;
  total: number;
  vat: number;
  subtotal: number;
}

/** Before this instant rides under 100 m or under 2 minutes were free (requirement, pricing rule 3). */
const ALL_RIDES_CHARGED_FROM = new Date('2024-01-01T00:00:00Z');

export function durationMinutes(durationSeconds: number): number {
  return Math.ceil(Math.max(0, durationSeconds) / 60);
}

export function vatOf(total: number, vatRate: number): number {
  return total - Math.round(total / (1 + vatRate));
}

export function computeCost(i: CostInput): Cost {
  const durationMin = durationMinutes(i.durationSeconds);
  // "under 2 minutes" is the actual duration, not the rounded-up charge minutes
  const legacyFree = i.endedAt < ALL_RIDES_CHARGED_FROM && (i.distanceMeters < 100 || i.durationSeconds < 120);
  if (!i.charge || legacyFree) return { durationMin, total: 0, vat: 0, subtotal: 0 };
  const total = i.startPrice + i.pricePerMinute * durationMin;
  const vat = vatOf(total, i.vatRate);
  return { durationMin, total, vat, subtotal: total - vat };
}
