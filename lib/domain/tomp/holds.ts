/**
 * Postponed commit (partners.tomp_postponed_commit): a one-stop booking is PENDING and holds its
 * vehicle (vehicles.status 'booked', MDS reservation_start → reserved) until it expires. COMMIT
 * starts the rental through the engine (which lets a TOMP start take a 'booked' vehicle, MDS
 * reserved → trip_start → on_trip); CANCEL and expiry release the vehicle (reservation_cancel →
 * available). Every change happens under the booking's row lock, so a COMMIT racing a CANCEL or
 * the expiry sweep is decided by Postgres: whoever locks first wins, the other sees the new state.
 */
import type { AppContext } from '../context.js';
import { type Tx } from '../../core/db.js';
import { sql, type RowOf } from '../../core/sql/typed.js';
import { recordEvent } from '../fleet/events.js';
import { startRental, StartAborted } from '../rentals/engine.js';
import { isSleeping } from '../zones.js';
import { TompError, mapEngineError } from './errors.js';

interface HoldInput {
  partnerId: string;
  userId: string;
  vehicleId: string;
  from: { lng: number; lat: number };
  externalId: string;
  language: string;
  now: Date;
  expiresAt: Date;
  /** customer.licenses verified for this vehicle's class; `missing` is the 406 detail otherwise (api/tomp/licences.ts) */
  licence: { verified: boolean; missing: string };
}

const notPossible = (detail: string, type: string) => new TompError(406, detail, { type });

/** Creates the PENDING booking and holds the vehicle; returns the booking id. */
export async function holdVehicle(ctx: AppContext, i: HoldInput): Promise<string> {
  return ctx.db.tx(async (tx) => {
    const c = await tx.maybeOne(sql('TompHoldCheck'), [i.vehicleId, i.from.lng, i.from.lat]);
    if (!c) throw notPossible('unknown asset', 'VehicleNotFound');
    if (isSleeping({ timezone: c.timezone, sleepWindows: c.sleep_windows, status: c.zone_status }, i.now)) {
      throw notPossible('the zone is sleeping: no trips can start now', 'ZoneIsSleeping');
    }
    if (!c.start_allowed) throw notPossible('the zone does not permit rentals where the vehicle stands', 'ZoneIsSleeping');
    if (c.status !== 'ready' || c.mds_state !== 'available' || c.battery_percent < c.min_battery_percent) {
      throw notPossible('the vehicle is not available (taken, reserved or out of service)', 'VehicleNotAvailable');
    }
    if (c.licence_verification_required && !i.licence.verified) throw notPossible(i.licence.missing, 'UserLicenceVerificationRequired');
    // no distance without a `from` position: nothing to refuse
    if (c.distance_m !== null && c.distance_m > c.unlock_distance_m)
      throw notPossible('the departure location is too far from the vehicle', 'UserTooFarFromVehicle');
    // the race is decided here: only one transaction can turn a ready vehicle into a booked one
    const v = await tx.maybeOne(sql('TompHoldVehicle'), [i.vehicleId]);
    if (!v) throw notPossible('the vehicle is not available (taken, reserved or out of service)', 'VehicleNotAvailable');
    await recordEvent(tx, {
      deviceId: i.vehicleId,
      zoneId: v.zone_id,
      eventTypes: ['reservation_start'],
      vehicleState: 'reserved',
      ts: i.now,
      location: { lat: v.lat, lng: v.lng },
      batteryPercent: v.battery_percent,
    });
    const b = await tx.one(sql('TompInsertBooking'), [
      i.partnerId,
      i.userId,
      i.vehicleId,
      null,
      'PENDING',
      i.from.lng,
      i.from.lat,
      i.externalId,
      i.language,
      i.expiresAt,
      i.now,
      i.licence.verified,
    ]);
    await tx.one(sql('TompInsertLeg'), [b.id, i.now, i.now]);
    return b.id;
  });
}

/** A booking under its row lock: what TompLockBooking, TompLockBookingNowait and TompLockBookingForExpiry all read. */
type LockedBooking = RowOf<'TompLockBookingForExpiry'>;

/** Ends a hold under the booking's lock: booking → `state`, leg CANCELLED, vehicle ready/available again. */
async function release(tx: Tx, b: LockedBooking, state: 'CANCELLED' | 'EXPIRED', now: Date): Promise<void> {
  await tx.one(sql('TompSetBookingState'), [b.id, state, now, ['PENDING']]);
  await tx.one(sql('TompSetLegState'), [b.id, 'CANCELLED', now]);
  const v = await tx.maybeOne(sql('TompReleaseVehicle'), [b.vehicle_id]);
  // only a vehicle still reserved goes back to available (one taken meanwhile by a trip is left alone)
  if (v && v.mds_state === 'reserved') {
    await recordEvent(tx, {
      deviceId: b.vehicle_id,
      zoneId: v.zone_id,
      eventTypes: ['reservation_cancel'],
      vehicleState: 'available',
      ts: now,
      location: { lat: v.lat, lng: v.lng },
      batteryPercent: v.battery_percent,
    });
  }
}

const isDue = (b: LockedBooking, now: Date) => b.state === 'PENDING' && b.expires_at.getTime() <= now.getTime();

/** Releases one booking if it is (still) a PENDING booking past its expiry. */
export async function expireIfDue(ctx: AppContext, bookingId: string): Promise<boolean> {
  return ctx.db.tx(async (tx) => {
    const b = await tx.maybeOne(sql('TompLockBookingForExpiry'), [bookingId]);
    const now = ctx.clock.now();
    if (!b || !isDue(b, now)) return false;
    await release(tx, b, 'EXPIRED', now);
    return true;
  });
}

/**
 * Sweep: releases every PENDING booking past its expiry. Idempotent and safe with several workers
 * (each booking is re-checked under its row lock, locked rows are skipped). Returns how many it released.
 */
export async function expirePendingBookings(ctx: AppContext, batch = 200): Promise<number> {
  const due = await ctx.db.many(sql('TompExpiredPending'), [ctx.clock.now(), batch]);
  let released = 0;
  for (const { id } of due) {
    try {
      if (await expireIfDue(ctx, id)) released++;
    } catch (err) {
      ctx.log.warn({ err, bookingId: id }, 'tomp booking expiry failed; retried by the next sweep');
    }
  }
  return released;
}

type Outcome = { ok: true } | { ok: false; error: TompError };

/**
 * COMMIT or CANCEL of a PENDING booking. CANCEL and the expiry are decided under the booking's row
 * lock. COMMIT starts the rental through the engine, and the booking is confirmed inside the
 * engine's confirming transaction (its `within` hook, which takes the booking lock again), so the
 * rental and the confirmation commit together or not at all; a CANCEL or the expiry sweep that got
 * the booking first makes the hook call the start off (before the unlock, the engine's `check`
 * hook; while the vehicle answered, `within`, and the vehicle is locked again). A booking that cannot be started any more (zone
 * asleep, vehicle gone…) is released and answered 406; a vehicle that does not answer keeps the
 * hold (503, retry).
 */
export async function operateBooking(ctx: AppContext, partnerId: string, bookingId: string, operation: 'COMMIT' | 'CANCEL'): Promise<void> {
  const decided = await ctx.db.tx<Outcome | { commit: RowOf<'TompLockBooking'> }>(async (tx) => {
    const b = await tx.maybeOne(sql('TompLockBooking'), [bookingId, partnerId]);
    if (!b) throw new TompError(404, 'booking not found');
    const now = ctx.clock.now();
    if (isDue(b, now)) {
      await release(tx, b, 'EXPIRED', now);
      return { ok: false, error: expired() };
    }
    if (b.state !== 'PENDING') throw notPending(operation);
    if (operation === 'CANCEL') {
      await release(tx, b, 'CANCELLED', now);
      return { ok: true };
    }
    return { commit: b };
  });
  if (!('commit' in decided)) {
    if (!decided.ok) throw decided.error;
    return;
  }
  const b = decided.commit;
  // NOWAIT: a CANCEL or sweep holding the booking makes the engine retry its transaction
  // (lock_not_available is retryable) instead of waiting with the vehicle locked
  const pendingBooking = async (tx: Tx) => {
    const locked = await tx.maybeOne(sql('TompLockBookingNowait'), [b.id, partnerId]);
    if (!locked || locked.state !== 'PENDING') throw new StartAborted(notPending(operation));
    if (isDue(locked, ctx.clock.now())) throw new StartAborted(expired());
  };
  try {
    await startRental(ctx, {
      partnerId,
      userId: b.user_id,
      vehicleId: b.vehicle_id,
      userStartLocation: { latitude: b.from_lat, longitude: b.from_lng },
      userLicenseValidated: b.licence_verified,
      source: 'tomp',
      // before the unlock: a booking cancelled or expired already is not unlocked for
      check: pendingBooking,
      // with the rental: a CANCEL or the expiry that came while the vehicle answered calls it off
      within: async (tx, rental) => {
        await pendingBooking(tx);
        await tx.one(sql('TompConfirmBooking'), [b.id, rental.id, ctx.clock.now(), rental.startedAt]);
      },
    });
  } catch (err) {
    if (err instanceof StartAborted) throw err.reason;
    const mapped = mapEngineError(err, 'start');
    if (mapped instanceof TompError && mapped.status === 406) {
      await ctx.db.tx(async (tx) => {
        const still = await tx.maybeOne(sql('TompLockBooking'), [b.id, partnerId]);
        if (still?.state === 'PENDING') await release(tx, still, 'CANCELLED', ctx.clock.now());
      });
    }
    throw mapped;
  }
}

const expired = () => new TompError(409, 'the booking has expired', { type: 'BookingExpired' });
const notPending = (operation: string) =>
  new TompError(409, `operation ${operation} is not allowed on a booking that is not PENDING`, { type: 'IllegalBookingOperation' });
