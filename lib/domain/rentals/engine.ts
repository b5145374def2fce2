/**
 * The rental engine shared by the partner rental API, the TOMP API and the fleet simulator.
 *
 * Every start and end is one transaction holding the vehicle's row lock: the rental row, the vehicle
 * status, the MDS event (recordEvent), the trip row and the gateway command commit together or not
 * at all. The gateway call is the last step inside the transaction, so a refused or unanswered
 * unlock/lock rolls everything back and nothing is left half-started or half-ended. Postgres decides
 * every race: the vehicle row lock serialises starts of one vehicle, the partial unique indexes allow
 * one running rental per user and per vehicle, and the end is a conditional UPDATE … WHERE state =
 * 'RUNNING'.
 */
import type { AppContext } from '../context.js';
import { DbError, type Tx } from '../../core/db.js';
import { sql } from '../../core/sql/typed.js';
import { GatewayError } from '../gateway.js';
import { recordEvent, InvalidTransitionError } from '../fleet/events.js';
import { computeCost } from '../pricing.js';
import { isSleeping, parkingAt } from '../zones.js';
import { receiptKey } from './receipts.js';
import { RentalError, ZONE_NOT_PERMITTING } from './errors.js';
import { toRentalRecord, type Location, type RentalRecord } from './types.js';
import { metrics } from '../../core/metrics.js';

export type { Location, RentalRecord } from './types.js';

export interface StartRentalInput {
  partnerId: string;
  userId: string;
  vehicleId: string;
  userStartLocation?: Location;
  userLicenseValidated?: boolean;
  beginnersMode?: boolean;
  source: 'partner' | 'tomp' | 'simulator';
  groupId?: string;
  rideType?: 'solo' | 'group-host' | 'group-guest';
  /**
   * Runs inside the start's transaction, after the rental and its trip_start are written and before
   * the vehicle is unlocked: what must commit together with the rental (a TOMP booking's
   * confirmation). Throwing StartAborted calls the start off; everything is rolled back.
   */
  within?: (tx: Tx, rental: { id: string; startedAt: Date }) => Promise<void>;
}

/** Thrown by a `within` hook to call a start off: the transaction rolls back, the error reaches the caller as is. */
export class StartAborted extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'StartAborted';
  }
}

export type EndState = 'ENDED' | 'ENDED_WITH_NO_CHARGE' | 'ENDED_INTERNALLY';

export interface EndRentalInput {
  /** when given, only this partner's rental can be ended (others: RentalIDDoesNotExist) */
  partnerId?: string;
  rentalId: string;
  userEndLocation?: Location;
  /** ENDED (default, charged), ENDED_WITH_NO_CHARGE (auto end, all amounts 0), ENDED_INTERNALLY (operator, charged, no parking check) */
  endState?: EndState;
  /** auto end: refuse (RentalNotIdle) when the vehicle moved or the rental started after this instant, checked under the lock */
  idleBefore?: Date;
}

/** Unique indexes whose violation is a business answer, not a fault. */
const CONSTRAINT_CODES: Record<string, 'RentalAlreadyExists' | 'VehicleNotAvailable'> = {
  rentals_one_running_per_user: 'RentalAlreadyExists',
  rentals_one_running_per_vehicle: 'VehicleNotAvailable',
};

/**
 * db.tx wraps errors that carry a `.code` into DbError; our own errors (RentalError, GatewayError,
 * InvalidTransitionError) come back out unwrapped so callers can map them.
 */
async function inTx<T>(ctx: AppContext, fn: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await ctx.db.tx(fn);
  } catch (err) {
    if (err instanceof DbError && err.query === 'tx' && err.cause instanceof Error && !('severity' in err.cause)) throw err.cause;
    throw err;
  }
}

function mapStartError(ctx: AppContext, err: unknown): RentalError | StartAborted {
  if (err instanceof RentalError || err instanceof StartAborted) return err;
  if (err instanceof GatewayError) {
    return new RentalError(err.reason === 'refused' ? 'FailedToUnlockVehicle' : 'FailedToUpdateVehicle', { cause: err });
  }
  if (err instanceof InvalidTransitionError) return new RentalError('VehicleNotAvailable', { cause: err });
  if (err instanceof DbError) {
    const code = err.kind === 'conflict' && err.constraint ? CONSTRAINT_CODES[err.constraint] : undefined;
    if (code) return new RentalError(code, { cause: err });
    if (err.kind === 'unavailable') return new RentalError('ServiceUnavailable', { cause: err });
  }
  ctx.log.error({ err }, 'rental start failed');
  return new RentalError('FailedToStartRental', { cause: err });
}

function mapEndError(ctx: AppContext, err: unknown): RentalError {
  if (err instanceof RentalError) return err;
  if (err instanceof DbError && err.kind === 'unavailable') return new RentalError('ServiceUnavailable', { cause: err });
  if (!(err instanceof GatewayError)) ctx.log.error({ err }, 'rental end failed');
  return new RentalError('FailedToEndRental', { cause: err });
}

/** Starts a rental; throws RentalError with the requirement's code. */
export async function startRental(ctx: AppContext, input: StartRentalInput): Promise<RentalRecord> {
  try {
    const r = await start(ctx, input);
    metrics.rentalsStarted.inc({ source: input.source });
    return r;
  } catch (err) {
    metrics.rentalStartFailures.inc({ code: err instanceof RentalError ? err.code : err instanceof StartAborted ? 'aborted' : 'unknown' });
    throw err;
  }
}

async function start(ctx: AppContext, input: StartRentalInput): Promise<RentalRecord> {
  // true once the unlock command was sent and may have reached the vehicle (it answered, or timed
  // out: a vehicle that did not answer in time may still have opened)
  let unlocked = false;
  try {
    return await inTx(ctx, async (tx) => {
      unlocked = false;
      const now = ctx.clock.now();
      const user = await tx.maybeOne(sql('RentalUserForStart'), [input.userId, input.partnerId]);
      if (!user) throw new RentalError('UserNotFound');
      const at = input.userStartLocation;
      const v = await tx.maybeOne(sql('RentalLockVehicleForStart'), [
        input.vehicleId,
        at?.longitude ?? null,
        at?.latitude ?? null,
        now,
        input.partnerId,
        input.userId,
      ]);
      if (!v || !v.zone_allowed) throw new RentalError('VehicleNotFound');
      if (user.running) throw new RentalError('RentalAlreadyExists');
      if (isSleeping({ timezone: v.timezone, sleepWindows: v.sleep_windows, status: v.zone_status }, now)) throw new RentalError('ZoneIsSleeping');
      // the zone rules (zone_rules_at, as published in GBFS): outside the operations areas or in a
      // no-riding area no ride starts; the error table's row "zone not permitting rentals"
      if (!v.start_allowed) throw new RentalError('ZoneIsSleeping', { detail: ZONE_NOT_PERMITTING });
      // a booked vehicle can be started only by the user whose pending TOMP booking holds it
      const statusOk = v.status === 'ready' || (v.status === 'booked' && v.held_by_user);
      if (!statusOk || v.has_running_rental || v.held_by_other || v.battery_percent < v.min_battery_percent || v.start_price === null) {
        throw new RentalError('VehicleNotAvailable');
      }
      if (v.licence_verification_required && input.userLicenseValidated !== true) throw new RentalError('UserLicenceVerificationRequired');
      if (v.user_distance_m !== null && v.user_distance_m > v.unlock_distance_m) throw new RentalError('UserTooFarFromVehicle');

      const ins = await tx.one(sql('RentalInsert'), [
        input.partnerId,
        input.userId,
        input.vehicleId,
        input.source,
        input.beginnersMode === true,
        input.userLicenseValidated === true,
        input.groupId ?? null,
        input.rideType ?? 'solo',
        v.currency,
        v.vat_rate,
        v.start_price,
        v.price_per_minute,
        now,
        at?.longitude ?? null,
        at?.latitude ?? null,
      ]);
      await recordEvent(tx, {
        deviceId: input.vehicleId,
        zoneId: v.zone_id,
        eventTypes: ['trip_start'],
        vehicleState: 'on_trip',
        ts: now,
        location: { lat: v.lat, lng: v.lng },
        batteryPercent: v.battery_percent,
        tripIds: [ins.trip_id],
        lockedState: v.mds_state,
      });
      if (input.within) await input.within(tx, { id: ins.id, startedAt: now });
      try {
        await ctx.gateway.unlock(input.vehicleId);
      } finally {
        unlocked = true;
      }
      if (input.beginnersMode) await ctx.gateway.setMaxSpeed(input.vehicleId, v.reduced_speed_kph);
      return toRentalRecord(await tx.one(sql('RentalGet'), [ins.id, null]));
    });
  } catch (err) {
    if (unlocked) {
      // the vehicle opened (or may have) but the rental did not commit: close it again (best effort)
      await ctx.gateway.lock(input.vehicleId).catch((e) => ctx.log.error({ err: e, vehicleId: input.vehicleId }, 'relock after failed start failed'));
    }
    throw mapStartError(ctx, err);
  }
}

/**
 * Ends a running rental; throws RentalError with the requirement's code. The receipt's object key is
 * recorded; the PDF itself is rendered and stored on its first download (lib/domain/rentals/receipts.ts), which
 * keeps ~8 ms of PDF CPU per rental off the end path.
 */
export async function endRental(ctx: AppContext, input: EndRentalInput): Promise<RentalRecord> {
  const r = await end(ctx, input);
  metrics.rentalsEnded.inc({ state: r.state });
  return r;
}

async function end(ctx: AppContext, input: EndRentalInput): Promise<RentalRecord> {
  const endState = input.endState ?? 'ENDED';
  let record: RentalRecord;
  try {
    record = await inTx(ctx, async (tx) => {
      const now = ctx.clock.now();
      const r = await tx.maybeOne(sql('RentalLockForEnd'), [input.rentalId, input.partnerId ?? null]);
      if (!r) throw new RentalError('RentalIDDoesNotExist');
      if (r.state !== 'RUNNING') throw new RentalError('RentalAlreadyEnded');
      if (input.idleBefore && (r.last_moved_at > input.idleBefore || r.started_at > input.idleBefore)) throw new RentalError('RentalNotIdle');
      // the operator may end a forgotten rental wherever the vehicle stands
      if (endState !== 'ENDED_INTERNALLY') {
        const verdict = await parkingAt(tx, r.zone_id, { lat: r.lat, lng: r.lng }, r.vehicle_type_id);
        if (!verdict.canEnd) throw new RentalError('FailedToEndRentalNoParking');
      }
      const endedAt = now < r.started_at ? r.started_at : now;
      // minutes are rounded up from the exact duration (a ride of 60.2 s is 2 minutes); the trip
      // record keeps whole seconds, rounded up alike
      const durationMs = endedAt.getTime() - r.started_at.getTime();
      const durationSeconds = Math.ceil(durationMs / 1000);
      const distanceM = r.distance_m;
      const cost = computeCost({
        startPrice: r.start_price ?? 0,
        pricePerMinute: r.price_per_minute ?? 0,
        vatRate: Number(r.vat_rate),
        durationSeconds: durationMs / 1000,
        distanceMeters: distanceM,
        endedAt,
        charge: endState !== 'ENDED_WITH_NO_CHARGE',
      });
      const at = input.userEndLocation;
      const ended = await tx.maybeOne(sql('RentalEnd'), [
        r.id,
        endState,
        endedAt,
        at?.longitude ?? null,
        at?.latitude ?? null,
        cost.durationMin,
        distanceM,
        cost.subtotal,
        cost.total,
        cost.vat,
        receiptKey(r.id),
        r.vehicle_type_id,
        r.trip_type,
        durationSeconds,
      ]);
      if (!ended) throw new RentalError('RentalAlreadyEnded');
      await recordEvent(tx, {
        deviceId: r.vehicle_id,
        zoneId: r.zone_id,
        eventTypes: ['trip_end'],
        vehicleState: 'available',
        ts: endedAt,
        location: { lat: r.lat, lng: r.lng },
        batteryPercent: r.battery_percent,
        tripIds: [r.trip_id],
        lockedState: r.mds_state,
      });
      await ctx.gateway.lock(r.vehicle_id);
      return toRentalRecord(await tx.one(sql('RentalGet'), [r.id, null]));
    });
  } catch (err) {
    throw mapEndError(ctx, err);
  }
  return record;
}
