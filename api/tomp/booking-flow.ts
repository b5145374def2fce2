/**
 * TOMP bookings on top of the one rental engine. A booking is a rental of the MaaS partner's user:
 *
 * - AUTO_COMMIT (default): POST /bookings/one-stop starts the rental at once (vehicle unlocked);
 *   the booking is CONFIRMED and its leg NOT_STARTED until the vehicle moves (see views.ts).
 * - postponed commit (partners.tomp_postponed_commit): the booking is PENDING and holds the vehicle
 *   until it expires (lib/domain/tomp/holds.ts); COMMIT starts the rental, CANCEL or expiry releases it.
 *
 * Races are decided by Postgres: the engine's unique index "one running rental per vehicle" for
 * AUTO_COMMIT, the conditional vehicle update plus "one pending booking per vehicle" for holds.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql, type RowOf } from '../../lib/core/sql/typed.js';
import { startRental, endRental } from '../../lib/domain/rentals/engine.js';
import { findOrCreateCustomer } from './customers.js';
import { TompError, mapEngineError } from '../../lib/domain/tomp/errors.js';
import { holdVehicle, expireIfDue } from '../../lib/domain/tomp/holds.js';
import { bookingOf, bookingStateOf, legOf, legStateOf, type BookingRow, type TompBooking, type TompLeg } from './views.js';
import { isUuid } from '../../lib/core/uuid.js';
import { assetClassOf, hasValidLicence, missingLicence, type TompLicence } from './licences.js';

export interface Caller {
  partnerId: string;
  zones: string[] | null;
  tompPostponedCommit: boolean;
}

/** How long a PENDING booking holds its vehicle; also the validity (Expires) of a confirmed result. */
const BOOKING_VALIDITY_SECONDS = 300;

const CODE = /^[A-Za-z0-9]{4}$/;

export interface OneStopInput {
  assetId: string;
  from: { lng: number; lat: number };
  externalId: string;
  language: string;
  /** TOMP customer.licenses: the licence verification (api/tomp/licences.ts) */
  licences?: TompLicence[];
  /** TOMP planningRequest.radius: the farthest (metres) the traveller will walk from `from` to the vehicle */
  radius?: number;
}

/** A vehicle a booking asks for, with how far the traveller stands from it. */
type Asset = RowOf<'TompFindVehicle'>;

/**
 * The asset id may be the vehicle id (UUID, as in `asset.id` of our responses), the current GBFS
 * vehicle_id/bike_id (a MaaS provider typically finds vehicles in GBFS) or the printed 4-character
 * code. Anything else, or a vehicle outside the partner's zones, is an unknown asset.
 */
async function resolveAsset(ctx: AppContext, caller: Caller, assetId: string, from: { lng: number; lat: number }): Promise<Asset> {
  const uuid = isUuid(assetId) ? assetId.toLowerCase() : null;
  const code = !uuid && CODE.test(assetId) ? assetId.toUpperCase() : null;
  const v = uuid || code ? await ctx.db.maybeOne(sql('TompFindVehicle'), [uuid, code, from.lng, from.lat]) : undefined;
  if (!v || (caller.zones !== null && !caller.zones.includes(v.zone_id))) throw new TompError(406, 'unknown asset', { type: 'VehicleNotFound' });
  return v;
}

export async function createOneStopBooking(
  ctx: AppContext,
  caller: Caller,
  input: OneStopInput,
): Promise<{ booking: TompBooking; expiresAt: Date; language: string }> {
  const vehicle = await resolveAsset(ctx, caller, input.assetId, input.from);
  // `from` is where the traveller stands: the engine refuses beyond the zone's unlock distance
  // (UserTooFarFromVehicle); a `radius` narrows that to how far the traveller will walk
  if (input.radius !== undefined && vehicle.distance_m !== null && vehicle.distance_m > input.radius) {
    throw new TompError(406, `the vehicle is ${Math.ceil(vehicle.distance_m)} m from \`from\`, beyond the requested radius of ${input.radius} m`, {
      type: 'UserTooFarFromVehicle',
    });
  }
  const customer = await findOrCreateCustomer(ctx.db, caller.partnerId, input.externalId, ctx.clock.now());
  if (customer.blocked) throw new TompError(428, 'the customer is blocked by the operator', { type: 'UserBlocked' });
  const now = ctx.clock.now();
  const assetClass = assetClassOf(vehicle.form_factor);
  const licence = { verified: hasValidLicence(input.licences, assetClass, now), missing: missingLicence(input.licences, assetClass, now) };
  const expiresAt = new Date(now.getTime() + BOOKING_VALIDITY_SECONDS * 1000);
  let bookingId: string;
  if (caller.tompPostponedCommit) {
    bookingId = await holdVehicle(ctx, { ...input, partnerId: caller.partnerId, userId: customer.id, vehicleId: vehicle.id, now, expiresAt, licence });
  } else {
    // the engine lets a TOMP start take a 'booked' vehicle (for COMMIT): never someone else's hold
    if ((await ctx.db.one(sql('TompVehicleHeld'), [vehicle.id, now])).held) {
      throw new TompError(406, 'the vehicle is not available (taken, reserved or out of service)', { type: 'VehicleNotAvailable' });
    }
    let rental: { id: string; startedAt: Date };
    try {
      rental = await startRental(ctx, {
        partnerId: caller.partnerId,
        userId: customer.id,
        vehicleId: vehicle.id,
        userStartLocation: { latitude: input.from.lat, longitude: input.from.lng },
        userLicenseValidated: licence.verified,
        source: 'tomp',
      });
    } catch (err) {
      const e = mapEngineError(err, 'start');
      // say what the customer's licences lack rather than the engine's generic words
      if (e instanceof TompError && e.opts.type === 'UserLicenceVerificationRequired') throw new TompError(406, licence.missing, e.opts);
      throw e;
    }
    try {
      bookingId = await ctx.db.tx(async (tx) => {
        const b = await tx.one(sql('TompInsertBooking'), [
          caller.partnerId,
          customer.id,
          vehicle.id,
          rental.id,
          'CONFIRMED',
          input.from.lng,
          input.from.lat,
          input.externalId,
          input.language,
          expiresAt,
          now,
          licence.verified,
        ]);
        await tx.one(sql('TompInsertLeg'), [b.id, new Date(rental.startedAt), now]);
        return b.id;
      });
    } catch (err) {
      // The vehicle is unlocked but nobody can see the booking: end the rental rather than leave it running.
      ctx.log.error({ err, rentalId: rental.id }, 'tomp booking insert failed after the rental started; ending it');
      await endRental(ctx, { rentalId: rental.id, endState: 'ENDED_INTERNALLY' }).catch((e) =>
        ctx.log.error({ err: e, rentalId: rental.id }, 'compensating end failed'),
      );
      throw err;
    }
  }
  const row = await readBooking(ctx, caller, bookingId);
  if (!row) throw new Error(`booking ${bookingId} vanished`);
  return { booking: bookingOf(row, ctx.clock.now()), expiresAt, language: input.language };
}

/** The booking row of this partner (undefined for unknown ids and other partners' bookings). */
export async function readBooking(ctx: AppContext, caller: Caller, id: string): Promise<BookingRow | undefined> {
  if (!isUuid(id)) return undefined;
  return ctx.db.maybeOne(sql('TompBookingById'), [id.toLowerCase(), caller.partnerId]);
}

/** The booking with its current state; a PENDING booking past its expiry is released first. */
export async function getBooking(ctx: AppContext, caller: Caller, id: string): Promise<BookingRow> {
  let row = await readBooking(ctx, caller, id);
  if (!row) throw new TompError(404, 'booking not found');
  if (row.booking_state === 'PENDING' && row.expires_at.getTime() <= ctx.clock.now().getTime()) {
    await expireIfDue(ctx, row.id);
    row = (await readBooking(ctx, caller, id))!;
  }
  return row;
}

export async function getBookingByLeg(ctx: AppContext, caller: Caller, legId: string): Promise<BookingRow> {
  const b = isUuid(legId) ? await ctx.db.maybeOne(sql('TompBookingIdByLeg'), [legId.toLowerCase(), caller.partnerId]) : undefined;
  if (!b) throw new TompError(404, 'leg not found');
  return getBooking(ctx, caller, b.id);
}

export const viewBooking = (ctx: AppContext, row: BookingRow): TompBooking => bookingOf(row, ctx.clock.now());
export const viewLeg = (ctx: AppContext, row: BookingRow): TompLeg => legOf(row, ctx.clock.now());

/**
 * Leg events. START_FINISHING is legal while the trip runs (leg NOT_STARTED or IN_USE); FINISH while
 * it runs or is finishing. FINISH ends the rental through the engine (same parking rules as the
 * partner API); when the lock fails the rental stays RUNNING and the leg unchanged, so a retry works.
 */
export async function applyLegEvent(
  ctx: AppContext,
  caller: Caller,
  legId: string,
  event: 'START_FINISHING' | 'FINISH',
  userLocation?: { lng: number; lat: number },
): Promise<TompLeg> {
  const row = await getBookingByLeg(ctx, caller, legId);
  const state = legStateOf(row);
  const running = row.rental_id !== null && row.rental_state === 'RUNNING';
  const now = ctx.clock.now();
  if (event === 'START_FINISHING') {
    if (!running || (state !== 'NOT_STARTED' && state !== 'IN_USE')) throw illegal(event, row);
    const changed = await ctx.db.tx(async (tx) => {
      const b = await tx.maybeOne(sql('TompSetBookingState'), [row.id, 'START_FINISHING', now, ['CONFIRMED']]);
      if (b) await tx.one(sql('TompSetLegState'), [row.id, 'START_FINISHING', now]);
      return b !== undefined;
    });
    if (!changed) throw illegal(event, row);
  } else {
    if (!running) throw illegal(event, row);
    try {
      await endRental(ctx, {
        partnerId: caller.partnerId,
        rentalId: row.rental_id!,
        ...(userLocation ? { userEndLocation: { latitude: userLocation.lat, longitude: userLocation.lng } } : {}),
      });
    } catch (err) {
      throw mapEngineError(err, 'end');
    }
    await ctx.db.tx(async (tx) => {
      const b = await tx.maybeOne(sql('TompSetBookingState'), [row.id, 'FINISHED', ctx.clock.now(), ['CONFIRMED', 'START_FINISHING']]);
      if (b) await tx.one(sql('TompSetLegState'), [row.id, 'FINISHED', ctx.clock.now()]);
    });
  }
  const after = await getBooking(ctx, caller, row.id);
  return legOf(after, ctx.clock.now());
}

function illegal(event: string, row: BookingRow): TompError {
  return new TompError(409, `event ${event} is not allowed while the leg is ${legStateOf(row)} (booking ${bookingStateOf(row)})`, { type: 'IllegalLegEvent' });
}
