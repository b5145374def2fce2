/** The rental as the engine returns it: a `rental_records` row (migration 000020) in camelCase. */
import type { RowOf } from '../../core/sql/typed.js';

export interface Location {
  latitude: number;
  longitude: number;
}

export type RentalState = 'RUNNING' | 'ENDED' | 'ENDED_WITH_NO_CHARGE' | 'ENDED_INTERNALLY';
export type PhotoDecision = 'good-parking' | 'bad-parking' | 'bad-photo' | 'no-decision' | 'unknown';

export interface RentalRecord {
  id: string;
  partnerId: string;
  userId: string;
  vehicleId: string;
  vehicleCode: string;
  zoneId: string;
  tripId: string;
  source: 'partner' | 'tomp' | 'simulator';
  state: RentalState;
  beginnersMode: boolean;
  licenceValidated: boolean;
  groupId: string | null;
  rideType: 'solo' | 'group-host' | 'group-guest';
  currency: string;
  vatRate: number;
  /** committed at start, VAT included, minor units */
  startPrice: number | null;
  pricePerMinute: number | null;
  startedAt: Date;
  endedAt: Date | null;
  userStartLocation: Location | null;
  userEndLocation: Location | null;
  vehicleStartLocation: Location;
  vehicleEndLocation: Location | null;
  startBatteryPercent: number | null;
  endBatteryPercent: number | null;
  /** set when ended */
  durationMin: number | null;
  distanceM: number | null;
  subtotal: number | null;
  totalAmount: number | null;
  vatAmount: number | null;
  receiptKey: string | null;
  photoKey: string | null;
  photoDecision: PhotoDecision | null;
  photoDecidedAt: Date | null;
}

function loc(lng: unknown, lat: unknown): Location | null {
  return typeof lng === 'number' && typeof lat === 'number' ? { latitude: lat, longitude: lng } : null;
}

/** A rental_records row (RentalGet, and the queries reading the same columns): the view's text columns hold only the values their CHECKs allow. */
export function toRentalRecord(r: RowOf<'RentalGet'>): RentalRecord {
  return {
    id: r.id,
    partnerId: r.partner_id,
    userId: r.user_id,
    vehicleId: r.vehicle_id,
    vehicleCode: String(r.vehicle_code).trim(),
    zoneId: r.zone_id,
    tripId: r.trip_id,
    source: r.source as RentalRecord['source'],
    state: r.state as RentalState,
    beginnersMode: r.beginners_mode,
    licenceValidated: r.licence_validated,
    groupId: r.group_id,
    rideType: r.ride_type as RentalRecord['rideType'],
    currency: String(r.currency).trim(),
    vatRate: Number(r.vat_rate),
    startPrice: r.start_price,
    pricePerMinute: r.price_per_minute,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    userStartLocation: loc(r.user_start_lng, r.user_start_lat),
    userEndLocation: loc(r.user_end_lng, r.user_end_lat),
    vehicleStartLocation: loc(r.vehicle_start_lng, r.vehicle_start_lat)!,
    vehicleEndLocation: loc(r.vehicle_end_lng, r.vehicle_end_lat),
    startBatteryPercent: r.start_battery_percent,
    endBatteryPercent: r.end_battery_percent,
    durationMin: r.duration_min,
    distanceM: r.distance_m,
    subtotal: r.subtotal,
    totalAmount: r.total_amount,
    vatAmount: r.vat_amount,
    receiptKey: r.receipt_key,
    photoKey: r.photo_key,
    photoDecision: r.photo_decision as PhotoDecision | null,
    photoDecidedAt: r.photo_decided_at,
  };
}
