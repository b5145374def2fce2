/**
 * Records of the partner API as the requirement names them (§2): `{id, type, attributes}` with
 * camelCase attributes; vehicle_type and price sit beside attributes on a vehicle, as specified.
 * Times are RFC 3339 UTC without fractional seconds; money is integer minor units, VAT included.
 */
import { rfc3339Utc } from '../../lib/core/clock.js';
import type { Config } from '../../lib/core/config.js';
import type { Row } from '../../lib/core/db.js';
import type { RowOf } from '../../lib/core/sql/typed.js';
import { signPath } from './signed-urls.js';
import { PHOTO_WINDOW_MS } from './photo.js';
import type { Location, RentalRecord } from '../../lib/domain/rentals/types.js';

const DAY_MS = 86_400_000;
/** Receipt links live 7 to 8 days: the expiry is a day boundary, so a link is stable for a day. */
const RECEIPT_LINK_DAYS = 8;

/** A user row: PartnerUserGet's, or the same columns returned by an insert or update. */
export function presentUser(r: Pick<RowOf<'PartnerUserGet'>, 'id' | 'email' | 'external_id'>) {
  return { id: r.id, type: 'user', attributes: { email: r.email as string, externalId: r.external_id as string } };
}

function location(l: Location | null) {
  return l ? { longitude: l.longitude, latitude: l.latitude } : undefined;
}

function receiptUrl(config: Config, rentalId: string, now: Date): string {
  const expires = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS + RECEIPT_LINK_DAYS * DAY_MS);
  return config.publicBaseUrl + signPath(config.signingSecret, 'receipt', `/v1/rental/${rentalId}/receipt`, expires);
}

function photoUploadUrl(config: Config, r: RentalRecord): string {
  const expires = new Date(r.endedAt!.getTime() + PHOTO_WINDOW_MS);
  return config.publicBaseUrl + signPath(config.signingSecret, 'photo', `/v1/rental/${r.id}/photo`, expires);
}

/**
 * `photoUploadURL` is on every read of an ended rental while its upload window is open (not only on
 * the end response), so a partner whose end response was lost (a retried end answers
 * RentalAlreadyEnded) can still upload the photo; the reads are already limited to the calling
 * partner's rentals.
 */
export function presentRental(config: Config, r: RentalRecord, now: Date) {
  const ended = r.state !== 'RUNNING';
  const photoWindowOpen = ended && r.endedAt !== null && now.getTime() < r.endedAt.getTime() + PHOTO_WINDOW_MS;
  const total = r.totalAmount ?? 0;
  const attributes: Record<string, unknown> = {
    rentalDurationMin: r.durationMin ?? 0,
    rentalDistanceMeters: r.distanceM ?? 0,
    cost: {
      startPrice: r.startPrice,
      pricePerMinute: r.pricePerMinute,
      subtotal: r.subtotal ?? 0,
      total: { amount: total, currency: r.currency, vat: r.vatAmount ?? 0, vatPercentage: r.vatRate },
    },
    state: r.state,
    startedAt: rfc3339Utc(r.startedAt),
    endedAt: r.endedAt ? rfc3339Utc(r.endedAt) : undefined,
    vehicle: { vehicleId: r.vehicleId, vehicleCode: r.vehicleCode },
    userStartLocation: location(r.userStartLocation),
    userEndLocation: location(r.userEndLocation),
    vehicleStartLocation: location(r.vehicleStartLocation),
    vehicleEndLocation: location(r.vehicleEndLocation),
    receipt: ended ? { url: receiptUrl(config, r.id, now) } : undefined,
    photoUploadURL: photoWindowOpen ? photoUploadUrl(config, r) : undefined,
  };
  return { id: r.id, type: 'rental', attributes };
}

function presentPrice(r: Row) {
  return { currency: String(r.currency).trim(), pricePerMinute: r.price_per_minute as number, startPrice: r.start_price as number, vat: Number(r.vat_rate) };
}

export function presentPricing(r: RowOf<'PartnerVehicleById'>) {
  return { id: r.id, type: 'pricing', attributes: presentPrice(r) };
}

/** A vehicle by id or code, or one of a zone's available vehicles (whose vehicle columns are null only on a zone's row without any). */
export function presentVehicle(r: RowOf<'PartnerVehicleById'> | RowOf<'PartnerVehicleByCode'> | RowOf<'PartnerAvailableVehicles'>) {
  return {
    id: r.id as string,
    type: 'vehicle',
    vehicle_type: r.form_factor as string,
    attributes: {
      batteryLevel: r.battery_percent as number,
      location: { latitude: r.lat as number, longitude: r.lng as number },
      code: String(r.code).trim(),
      zoneId: r.zone_id as string,
      locked: r.locked as boolean,
      status: r.status as string,
      // what the battery still gives: the type's full range scaled by the charge
      maxRangeMeters: Math.round(((r.max_range_meters as number) * (r.battery_percent as number)) / 100),
    },
    price: presentPrice(r),
  };
}
