/**
 * From our rows to TOMP objects: booking, leg, asset, assetType, pricing. The states shown to the
 * MaaS provider are derived here, in one place, from the booking row and the rental behind it, so a
 * booking read right after a rental was ended elsewhere (auto-end, ops) is already FINISHED:
 *
 * | booking row            | rental                        | leg             | booking         |
 * |------------------------|-------------------------------|-----------------|-----------------|
 * | PENDING                | none                          | NOT_STARTED     | PENDING         |
 * | CANCELLED / EXPIRED    | none                          | CANCELLED       | CANCELLED/EXPIRED |
 * | CONFIRMED              | RUNNING, vehicle not moved    | NOT_STARTED     | CONFIRMED       |
 * | CONFIRMED              | RUNNING, vehicle moved        | IN_USE          | STARTED         |
 * | START_FINISHING        | RUNNING                       | START_FINISHING | START_FINISHING |
 * | any                    | ended (any end state)         | FINISHED        | FINISHED        |
 *
 * "Moved" means the vehicle's last_moved_at (kept by telemetry, > 5 m) is after the rental start.
 */
import { toMajor } from '../../lib/domain/money.js';
import type { RowOf } from '../../lib/core/sql/typed.js';
import { rfc3339Utc } from '../../lib/core/clock.js';

/** A booking with its leg, vehicle, prices and the rental behind it, as TompBookingById reads it. */
export type BookingRow = RowOf<'TompBookingById'>;

export type LegState = 'NOT_STARTED' | 'IN_USE' | 'START_FINISHING' | 'FINISHED' | 'CANCELLED';
export type BookingState = 'PENDING' | 'CONFIRMED' | 'STARTED' | 'START_FINISHING' | 'FINISHED' | 'CANCELLED' | 'EXPIRED';

const rentalEnded = (r: BookingRow) => r.rental_state !== null && r.rental_state !== 'RUNNING';
const moved = (r: BookingRow) => r.started_at !== null && r.last_moved_at.getTime() > r.started_at.getTime();

export function legStateOf(r: BookingRow): LegState {
  if (r.booking_state === 'CANCELLED' || r.booking_state === 'EXPIRED') return 'CANCELLED';
  if (r.booking_state === 'PENDING' || r.rental_state === null) return 'NOT_STARTED';
  if (rentalEnded(r)) return 'FINISHED';
  if (r.leg_state === 'START_FINISHING' || r.booking_state === 'START_FINISHING') return 'START_FINISHING';
  return moved(r) ? 'IN_USE' : 'NOT_STARTED';
}

export function bookingStateOf(r: BookingRow): BookingState {
  if (r.booking_state === 'PENDING' || r.booking_state === 'CANCELLED' || r.booking_state === 'EXPIRED') return r.booking_state;
  switch (legStateOf(r)) {
    case 'FINISHED':
      return 'FINISHED';
    case 'START_FINISHING':
      return 'START_FINISHING';
    case 'IN_USE':
      return 'STARTED';
    default:
      return 'CONFIRMED';
  }
}

/** TOMP assetClass (NeTEx): kick scooters are STEP, bicycles BICYCLE. */
function assetTypeOf(r: Pick<BookingRow, 'vehicle_type_id' | 'form_factor' | 'propulsion_type'>) {
  const electric = r.propulsion_type !== 'human';
  return {
    id: r.vehicle_type_id,
    assetClass: r.form_factor === 'scooter' ? 'STEP' : 'BICYCLE',
    assetSubClass: r.form_factor === 'scooter' ? (electric ? 'e-scooter' : 'kick-scooter') : electric ? 'e-bike' : 'bike',
  };
}

export interface FarePart {
  amount: number;
  currencyCode: string;
  vatRate: number;
  type: 'FIXED' | 'FLEX';
  name: string;
  unitType?: 'MINUTE';
  units?: number;
}

/** The tariff: an unlock fee and a price per started minute (prices include VAT, minor units). */
export function tariffParts(startPrice: number, pricePerMinute: number, currency: string, vatRate: number): FarePart[] {
  const vat = Number((vatRate * 100).toFixed(2));
  return [
    { amount: toMajor(startPrice, currency), currencyCode: currency, vatRate: vat, type: 'FIXED', name: 'unlock fee' },
    { amount: toMajor(pricePerMinute, currency), currencyCode: currency, vatRate: vat, type: 'FLEX', unitType: 'MINUTE', units: 1, name: 'price per minute' },
  ];
}

/** Parts for `minutes` started minutes: FLEX is the amount for all those minutes (TOMP: amount per `units`). */
function usedParts(fixedMinor: number, flexMinor: number, minutes: number, currency: string, vatRate: number): FarePart[] {
  const vat = Number((vatRate * 100).toFixed(2));
  return [
    { amount: toMajor(fixedMinor, currency), currencyCode: currency, vatRate: vat, type: 'FIXED', name: 'unlock fee' },
    { amount: toMajor(flexMinor, currency), currencyCode: currency, vatRate: vat, type: 'FLEX', unitType: 'MINUTE', units: minutes, name: 'price per minute' },
  ];
}

function pricingOf(r: BookingRow, now: Date): { estimated: boolean; parts: FarePart[] } {
  const currency = r.rental_currency ?? r.currency;
  const vatRate = r.rental_vat_rate ?? r.vat_rate;
  const startPrice = r.start_price ?? r.plan_start_price ?? 0;
  const perMinute = r.price_per_minute ?? r.plan_price_per_minute ?? 0;
  const leg = legStateOf(r);
  if (leg === 'FINISHED') {
    // the engine's final price is the truth; the parts always add up to its total
    const total = r.total_amount ?? 0;
    const fixed = Math.min(startPrice, total);
    return { estimated: false, parts: usedParts(fixed, total - fixed, r.duration_min ?? 0, currency, vatRate) };
  }
  if ((leg === 'IN_USE' || leg === 'START_FINISHING') && r.started_at) {
    const minutes = Math.max(1, Math.ceil((now.getTime() - r.started_at.getTime()) / 60000));
    return { estimated: false, parts: usedParts(startPrice, perMinute * minutes, minutes, currency, vatRate) };
  }
  return { estimated: true, parts: tariffParts(startPrice, perMinute, currency, vatRate) };
}

export function legOf(r: BookingRow, now: Date) {
  const state = legStateOf(r);
  return {
    id: r.leg_id,
    state,
    from: { coordinates: { lng: r.from_lng, lat: r.from_lat } },
    ...(state === 'FINISHED' && r.end_lng !== null && r.end_lat !== null ? { to: { coordinates: { lng: r.end_lng, lat: r.end_lat } } } : {}),
    departureTime: rfc3339Utc(r.departure_time),
    ...(r.started_at ? { actualDepartureTime: rfc3339Utc(r.started_at) } : {}),
    ...(state === 'FINISHED' && r.ended_at ? { actualArrivalTime: rfc3339Utc(r.ended_at) } : {}),
    ...(state === 'FINISHED' && r.distance_m !== null ? { distance: r.distance_m } : {}),
    assetType: assetTypeOf(r),
    asset: { id: r.vehicle_id, stateOfCharge: r.battery_percent, maxRange: r.max_range_meters },
    pricing: pricingOf(r, now),
  };
}

export function bookingOf(r: BookingRow, now: Date) {
  return {
    id: r.id,
    state: bookingStateOf(r),
    from: { coordinates: { lng: r.from_lng, lat: r.from_lat } },
    customer: { externalId: r.customer_external_id },
    departureTime: rfc3339Utc(r.departure_time),
    legs: [legOf(r, now)],
  };
}

export type TompLeg = ReturnType<typeof legOf>;
export type TompBooking = ReturnType<typeof bookingOf>;
