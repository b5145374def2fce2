/**
 * The rental engine shared by the partner rental API, the TOMP API and the fleet simulator.
 *
 * A vehicle answers over cellular in 0.5–3 s, so no transaction (no row lock, no pool connection)
 * is open while a command waits for it, and the request gives up its admission slot for the wait
 * (lib/core/outside.ts). A start is two short transactions around the unlock:
 *
 * 1. **Claim.** Under the vehicle's row lock, every check of the requirement's start row (user,
 *    vehicle, zone, distance, licence, bookings), then the rental inserted as STARTING (migration
 *    000260): a claim that the partial unique indexes see, so a second start on the vehicle or by the
 *    user fails at once (VehicleNotAvailable / RentalAlreadyExists), decided by Postgres. The claim
 *    touches nothing else: its vehicle stays ready in every feed, it has no event and no trip, and
 *    rental_records (every partner and TOMP read) leaves it out. The `check` hook runs here.
 * 2. **Unlock**, no transaction open, then the ride's speed limit where it has one: the city's slow
 *    zone it starts in (migration 000300's areas; lowered further in beginners' mode) or the
 *    beginners' limit. The limit is recorded in vehicle_speed_commands at the confirm, so the city's
 *    speed round (publisher/policy/speed.ts) keeps it from there: it retries a city limit the vehicle
 *    did not acknowledge and gives the normal limit back when the vehicle leaves the area or the ride
 *    ends (RentalEnd asks for it after a beginners' ride). A beginners' limit that fails fails the
 *    start; a city limit that fails is the round's to retry (the ride may start: the city's rule is
 *    obeyed within one round, as for a rule that comes into force mid-ride).
 * 3. **Confirm.** The claim and its vehicle locked again and checked again (the vehicle may have
 *    been taken out of service or held by another user's booking meanwhile, the user erased), then
 *    the rental RUNNING and the vehicle riding in one conditional update, the trip_start event, and
 *    the `within` hook (a TOMP booking's confirmation), all in one commit.
 *
 * Whatever fails after the claim, the claim is released (deleted: nothing else was written for it),
 * and when the unlock may have opened the vehicle (it answered ok, or did not answer in time) a
 * compensating lock goes out first, while the claim still holds the vehicle, so that no other start
 * can unlock it in between. A refused unlock releases the claim without a lock: the vehicle stayed
 * shut. A process killed between the phases leaves a claim behind; it expires (claim_expires_at,
 * twice the gateway timeout plus a margin, so a live process always confirms first): the next start
 * on its vehicle or by its user deletes it in SQL, and the publisher's rental sweep
 * (lib/domain/rentals/claims.ts) relocks and deletes the rest. A live process whose claim was taken
 * from it finds nothing to confirm and calls its start off.
 *
 * An end is the same in reverse: a short transaction checks it under the rental's row lock (running,
 * idle for the auto end, the parking rules), the lock command goes out with no transaction open, and
 * a second short transaction ends the rental with a conditional UPDATE … WHERE state = 'RUNNING'
 * (of two concurrent ends one commits; the other, RentalAlreadyEnded). The rental is charged up to the
 * instant the end was asked for. A refused or unanswered lock leaves it RUNNING (FailedToEndRental),
 * and a retry is the same end again.
 */
import type { AppContext } from '../context.js';
import { DbError, isDbOutage, type Tx } from '../../core/db.js';
import { sql } from '../../core/sql/typed.js';
import { GatewayError } from '../gateway.js';
import { recordEvent, InvalidTransitionError } from '../fleet/events.js';
import { computeCost } from '../pricing.js';
import { isSleeping, parkingAt } from '../zones.js';
import { receiptKey } from './receipts.js';
import { RentalError, ZONE_NOT_PERMITTING } from './errors.js';
import { toRentalRecord, type Location, type RentalRecord } from './types.js';
import { metrics } from '../../core/metrics.js';
import { awaitOutside } from '../../core/outside.js';
import { claimExpiry, relock } from './claims.js';

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
   * Runs in the claim's transaction (phase 1), before any command goes to the vehicle: a check that
   * can call the start off early (a TOMP booking that is no longer pending). Throwing StartAborted
   * there calls the start off with nothing sent to the vehicle.
   */
  check?: (tx: Tx) => Promise<void>;
  /**
   * Runs in the confirming transaction (phase 2), after the vehicle unlocked and the rental and its
   * trip_start are written: what must commit together with the rental (a TOMP booking's
   * confirmation). Throwing StartAborted calls the start off: everything is rolled back, the
   * vehicle is locked again and the claim released.
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

/**
 * A database that cannot be reached (a failover, a restart) or a statement cancelled by its timeout
 * (isDbOutage) is not the engine's to name: it goes on as the DbError it is, and each API family
 * answers it by the one rule of api/kit/outage.ts (503 with Retry-After in its own format). Named
 * here, it was a 503 without Retry-After on the partner API, and a timeout a FailedToStartRental 500.
 */
function mapStartError(ctx: AppContext, err: unknown): RentalError | StartAborted | DbError {
  if (err instanceof RentalError || err instanceof StartAborted || isDbOutage(err)) return err;
  if (err instanceof GatewayError) {
    return new RentalError(err.reason === 'refused' ? 'FailedToUnlockVehicle' : 'FailedToUpdateVehicle', { cause: err });
  }
  if (err instanceof InvalidTransitionError) return new RentalError('VehicleNotAvailable', { cause: err });
  if (err instanceof DbError) {
    const code = err.kind === 'conflict' && err.constraint ? CONSTRAINT_CODES[err.constraint] : undefined;
    if (code) return new RentalError(code, { cause: err });
  }
  ctx.log.error({ err }, 'rental start failed');
  return new RentalError('FailedToStartRental', { cause: err });
}

function mapEndError(ctx: AppContext, err: unknown): RentalError | DbError {
  if (err instanceof RentalError || isDbOutage(err)) return err;
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
  let claim: Claimed;
  try {
    claim = await inTx(ctx, (tx) => claimStart(ctx, tx, input));
  } catch (err) {
    throw mapStartError(ctx, err);
  }
  // true once the unlock was sent and may have reached the vehicle (it answered ok, or did not
  // answer in time: a vehicle that did not answer may still have opened)
  let unlocked = false;
  let speed: RideSpeed | undefined;
  try {
    await awaitOutside(async () => {
      // a claim of this user that expired on another vehicle was deleted with the claim: that
      // vehicle may stand open, and is told to lock while ours unlocks
      const others = claim.expired.filter((v) => v !== input.vehicleId).map((v) => relock(ctx, v, 'expired claim of the user'));
      try {
        await ctx.gateway.unlock(input.vehicleId);
        unlocked = true;
      } catch (err) {
        unlocked = !(err instanceof GatewayError && err.reason === 'refused');
        throw err;
      } finally {
        await Promise.all(others);
      }
      speed = await rideSpeed(ctx, input, claim);
    });
    return await inTx(ctx, (tx) => confirmStart(ctx, tx, input, claim.id, speed));
  } catch (err) {
    await callOff(ctx, claim.id, input.vehicleId, unlocked);
    throw mapStartError(ctx, err);
  }
}

/** The speed limit a ride starts with, and whether the vehicle acknowledged it. */
interface RideSpeed {
  kph: number;
  /** the city's slow zone whose limit it is; none for a beginners' limit alone */
  city: { areaId: string; policyId: string; ruleId: string } | null;
  acknowledged: boolean;
  error: string | null;
}

/** Sends the ride's limit (the city's where the vehicle stands, the beginners' one), after the unlock. */
async function rideSpeed(ctx: AppContext, input: StartRentalInput, claim: Claimed): Promise<RideSpeed | undefined> {
  const city = claim.city;
  if (!city && !input.beginnersMode) return undefined;
  // the speed round's rule (sql/queries/policy.sql PolicySpeedPlan): the city's limit, never above
  // the ride's own (beginners' or the zone's normal limit)
  const own = input.beginnersMode ? claim.reducedSpeedKph : claim.maxSpeedKph;
  const kph = city ? Math.min(city.kph, own) : own;
  const target = city ? { areaId: city.areaId, policyId: city.policyId, ruleId: city.ruleId } : null;
  try {
    await ctx.gateway.setMaxSpeed(input.vehicleId, kph);
    if (city) metrics.cityPolicySpeedCommands.inc({ outcome: 'acknowledged' });
    return { kph, city: target, acknowledged: true, error: null };
  } catch (err) {
    if (!city) throw err;
    metrics.cityPolicySpeedCommands.inc({ outcome: 'unacknowledged' });
    // a beginners' ride in a city slow zone: its own limit must hold, as without the city
    if (input.beginnersMode) throw err;
    const reason = err instanceof GatewayError ? err.reason : 'error';
    ctx.log.warn({ err, vehicleId: input.vehicleId, kph }, "the city's speed limit was not acknowledged at the start; the speed round retries it");
    return { kph, city: target, acknowledged: false, error: `${reason}: ${(err as Error).message}`.slice(0, 300) };
  }
}

interface Claimed {
  id: string;
  reducedSpeedKph: number;
  maxSpeedKph: number;
  /** the city's slow zone in force where the vehicle stands */
  city: { areaId: string; policyId: string; ruleId: string; kph: number } | null;
  /** the vehicles whose expired claims this start deleted */
  expired: string[];
}

/** Phase 1: the checks under the vehicle's row lock, and the claim (a STARTING rental). */
async function claimStart(ctx: AppContext, tx: Tx, input: StartRentalInput): Promise<Claimed> {
  const now = ctx.clock.now();
  const expired = await tx.many(sql('RentalExpireClaims'), [input.vehicleId, input.userId, now]);
  if (expired.length) ctx.log.warn({ claims: expired, vehicleId: input.vehicleId, userId: input.userId }, 'expired start claims deleted');
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
  if (input.check) await input.check(tx);
  const ins = await tx.one(sql('RentalClaim'), [
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
    claimExpiry(ctx, now),
  ]);
  const city =
    v.city_area_id !== null && v.city_policy_id !== null && v.city_rule_id !== null && v.city_max_speed_kph !== null
      ? { areaId: v.city_area_id, policyId: v.city_policy_id, ruleId: v.city_rule_id, kph: v.city_max_speed_kph }
      : null;
  return { id: ins.id, reducedSpeedKph: v.reduced_speed_kph, maxSpeedKph: v.max_speed_kph, city, expired: expired.map((e) => e.vehicle_id) };
}

/** Phase 2: the claim checked again under its locks, then the running rental, its trip_start and `within`. */
async function confirmStart(ctx: AppContext, tx: Tx, input: StartRentalInput, claimId: string, speed: RideSpeed | undefined): Promise<RentalRecord> {
  const now = ctx.clock.now();
  const c = await tx.maybeOne(sql('RentalLockClaim'), [claimId, now]);
  // the claim expired and another start or the sweep took it: this start has nothing left to confirm
  if (!c) throw new RentalError('VehicleNotAvailable', { detail: 'the start took longer than its claim on the vehicle' });
  if (!c.user_active) throw new RentalError('UserNotFound');
  if (!c.vehicle_ok) throw new RentalError('VehicleNotAvailable');
  const confirmed = await tx.maybeOne(sql('RentalConfirm'), [claimId, now]);
  if (!confirmed) throw new RentalError('VehicleNotAvailable');
  const rental = await tx.one(sql('RentalGet'), [claimId, null]);
  await recordEvent(tx, {
    deviceId: c.vehicle_id,
    zoneId: c.zone_id,
    eventTypes: ['trip_start'],
    vehicleState: 'on_trip',
    ts: now,
    location: { lat: c.lat, lng: c.lng },
    batteryPercent: c.battery_percent,
    tripIds: [rental.trip_id],
    lockedState: c.mds_state,
  });
  if (speed) {
    await tx.query(sql('RentalSpeedAtStart'), [
      c.vehicle_id,
      c.zone_id,
      speed.city?.areaId ?? null,
      speed.city?.policyId ?? null,
      speed.city?.ruleId ?? null,
      speed.kph,
      now,
      speed.acknowledged,
      speed.error,
    ]);
  }
  if (input.within) await input.within(tx, { id: claimId, startedAt: now });
  return toRentalRecord(rental);
}

/**
 * A start called off after its claim: the compensating lock first when the unlock may have opened
 * the vehicle (while the claim still keeps every other start off it), then the claim released. A
 * claim that expired and went to another start meanwhile gets no lock: that vehicle is the other
 * rider's now. Best effort: a claim that cannot be released (the database is down) expires.
 */
async function callOff(ctx: AppContext, claimId: string, vehicleId: string, unlocked: boolean): Promise<void> {
  try {
    if (unlocked) {
      const { taken } = await ctx.db.one(sql('RentalVehicleTakenByOther'), [claimId, vehicleId]).catch(() => ({ taken: false }));
      if (taken) ctx.log.warn({ vehicleId, claimId }, 'start called off after its claim went to another start: no compensating lock');
      else await awaitOutside(() => relock(ctx, vehicleId, 'start called off after the unlock'));
    }
    await ctx.db.maybeOne(sql('RentalReleaseClaim'), [claimId]);
  } catch (err) {
    ctx.log.error({ err, claimId, vehicleId }, 'start claim not released; it expires');
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
  // the rental is charged up to when its end was asked for, not to when the vehicle answered
  const askedAt = ctx.clock.now();
  try {
    // the check under the rental's row lock; nothing written, so a refused lock leaves all as it was
    const vehicleId = await inTx(ctx, async (tx) => (await lockForEnd(tx, input, { endState, idleBefore: input.idleBefore })).vehicle_id);
    await awaitOutside(() => ctx.gateway.lock(vehicleId));
    return await inTx(ctx, async (tx) => {
      const r = await lockForEnd(tx, input);
      const endedAt = askedAt < r.started_at ? r.started_at : askedAt;
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
      return toRentalRecord(await tx.one(sql('RentalGet'), [r.id, null]));
    });
  } catch (err) {
    throw mapEndError(ctx, err);
  }
}

/**
 * The rental under its row lock (and its vehicle's), running, and with `checks` (before the lock
 * command): idle since `idleBefore` (the auto end), and where ending is permitted (not for
 * ENDED_INTERNALLY: the operator may end a forgotten rental wherever the vehicle stands). The end's
 * write passes no checks: what was decided before the lock stands (the vehicle is locked where it
 * stood), and only RUNNING is asked again.
 */
async function lockForEnd(tx: Tx, input: EndRentalInput, checks?: { endState: EndState; idleBefore: Date | undefined }) {
  const r = await tx.maybeOne(sql('RentalLockForEnd'), [input.rentalId, input.partnerId ?? null]);
  if (!r) throw new RentalError('RentalIDDoesNotExist');
  if (r.state !== 'RUNNING') throw new RentalError('RentalAlreadyEnded');
  if (!checks) return r;
  const { idleBefore, endState } = checks;
  if (idleBefore && (r.last_moved_at > idleBefore || r.started_at > idleBefore)) throw new RentalError('RentalNotIdle');
  if (endState !== 'ENDED_INTERNALLY') {
    const verdict = await parkingAt(tx, r.zone_id, { lat: r.lat, lng: r.lng }, r.vehicle_type_id);
    if (!verdict.canEnd) throw new RentalError('FailedToEndRentalNoParking');
  }
  return r;
}
