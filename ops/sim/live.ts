/**
 * Live fleet simulator for demos and staging: every tick it starts rides through the rental engine
 * (the same path as a partner's request), drives the running rides with telemetry, ends them (and
 * rides on to another place when parking is refused), and plays the operator: charging, bringing
 * vehicles back from maintenance or rebalancing, and taking some vehicles away for rebalancing.
 *
 * It behaves like a real fleet and keeps to its own tenant: rides start only with its own partners
 * and the users it registered for them (tenant.ts), never with a partner's user, and only while the
 * zone has fewer rides running than its daily curve asks for (ridingShare: a few percent of the
 * fleet at night, PEAK_RIDING_SHARE at the evening peak), so partners always find vehicles.
 *
 * `rate` speeds up time: ticks, ride durations and telemetry intervals are divided by it (timestamps
 * still come from ctx.clock). The loop never throws: errors are logged, the next tick runs.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { recordEvent } from '../../lib/domain/fleet/events.js';
import { recordTelemetry } from './telemetry.js';
import type { MqttFleet } from './mqtt-fleet.js';
import type { MdsState } from '../../lib/domain/fleet/state-machine.js';
import { endRental, startRental } from '../../lib/domain/rentals/engine.js';
import { isRentalError } from '../../lib/domain/rentals/errors.js';
import { isSleeping } from '../../lib/domain/zones.js';
import { geodesicMeters, type Position } from './geo.js';
import { loadZoneModels, parkingPlace, type ZoneModel } from './model.js';
import { Prng } from './prng.js';
import { along, planRide, type RidePlan } from './rides.js';
import { localHour, ridingShare } from './simulation.js';
import { simTenant, simUser, type SimTenantPartner } from './tenant.js';

export interface LiveOptions {
  /** speed-up factor (default 1) */
  rate?: number;
  seed?: number;
  /** real milliseconds between ticks at rate 1 (default 5000) */
  tickMs?: number;
  /** no timer: the caller drives `tick()` (tests) */
  manual?: boolean;
  /**
   * The vehicles speak MQTT (ops/sim/mqtt-fleet.ts): their positions and batteries go through the
   * broker and the ingest (bin/ingest.ts), as a real fleet's do. Without it (tests, staging) the
   * simulator writes them into Postgres itself.
   */
  fleet?: MqttFleet;
}

export interface LiveSimulator {
  stop(): Promise<void>;
  /** one step of the simulation; what the timer runs */
  tick(): Promise<void>;
}

interface Ride {
  rentalId: string;
  tripId: string;
  vehicleId: string;
  zone: ZoneModel;
  plan: RidePlan;
  startedAt: number;
  startBattery: number;
  lastTelemetryAt: number;
  parkingAttempts: number;
}

/** Riders arriving in one tick per zone, at most (a zone under its target fills up over a few ticks). */
const MAX_STARTS_PER_TICK = 8;

/**
 * Rides a zone should have running at `now`: its fleet times the riding share of the zone's local
 * hour, and at least one while there is a fleet, so that the demo never stands still.
 */
export function ridingTarget(fleet: number, timezone: string, now: Date): number {
  return fleet === 0 ? 0 : Math.max(1, Math.round(fleet * ridingShare(localHour(timezone, now.getTime()))));
}

export function startLiveSimulator(ctx: AppContext, opts: LiveOptions = {}): LiveSimulator {
  const rate = opts.rate && opts.rate > 0 ? opts.rate : 1;
  const tickMs = (opts.tickMs ?? 5000) / rate;
  const rng = new Prng(opts.seed ?? Date.now());
  const log = ctx.log.child({ component: 'live-sim' });
  const rides = new Map<string, Ride>();
  let zones: ZoneModel[] | undefined;
  let partners: SimTenantPartner[] = [];
  let types = new Map<string, number>();
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  // vehicles that got an event in this tick: their next event waits for a later tick, so that two
  // events of one vehicle never share a timestamp (the feeds order a vehicle's events by time)
  let touched = new Set<string>();
  /** vehicles that ended a ride with a low battery: battery_low on the next tick */
  const lowBattery = new Map<string, ZoneModel>();

  async function init(): Promise<void> {
    const models = await loadZoneModels(ctx.db, null);
    types = new Map((await ctx.db.many(sql('SimVehicleTypes'))).map((t) => [t.id, t.max_range_meters]));
    partners = await simTenant(ctx.db, rng, ctx.clock.now(), log);
    // rides of a previous process are not driven any more: the operator ends them
    for (const r of await ctx.db.many(sql('SimLiveOrphanRentals'))) {
      await endRental(ctx, { rentalId: r.id, endState: 'ENDED_INTERNALLY' }).catch((err) => log.debug({ err, rentalId: r.id }, 'orphan end failed'));
    }
    // last: a failed init is tried again on the next tick
    zones = models;
  }

  async function tick(): Promise<void> {
    try {
      if (!zones) await init();
      touched = new Set();
      for (const [vehicleId, zone] of [...lowBattery]) {
        lowBattery.delete(vehicleId);
        const v = await ctx.db.maybeOne(sql('SimLiveAvailableVehicle'), [vehicleId]);
        if (v) await opEvent(vehicleId, zone, ['battery_low'], 'non_operational', 'unavailable', v.battery_percent, [v.lng, v.lat]);
      }
      await driveRides();
      for (const zone of zones!) {
        await startRides(zone);
        await operate(zone);
      }
    } catch (err) {
      log.error({ err }, 'live simulator tick failed');
      if (zones?.length === 0) zones = undefined; // retry init next tick (e.g. not seeded yet)
    }
  }

  async function driveRides(): Promise<void> {
    const now = ctx.clock.now().getTime();
    for (const ride of [...rides.values()]) {
      try {
        const elapsedS = ((now - ride.startedAt) / 1000) * rate;
        const durationS = ride.plan.movingS + ride.plan.tailS;
        if (elapsedS >= durationS || now - ride.lastTelemetryAt >= 30000 / rate) await sendTelemetry(ride, Math.min(elapsedS, durationS), now);
        if (elapsedS >= durationS) await finish(ride);
      } catch (err) {
        log.warn({ err, rentalId: ride.rentalId }, 'ride step failed');
      }
    }
  }

  async function sendTelemetry(ride: Ride, elapsedS: number, now: number): Promise<void> {
    const moved = Math.min(1, elapsedS / (ride.plan.movingS || 1)) * ride.plan.distanceM;
    const [lng, lat] = along(ride.plan.path, moved);
    const battery = Math.max(0, Math.round(ride.startBattery - moved * ride.plan.drainPerM));
    ride.lastTelemetryAt = now;
    if (opts.fleet) return opts.fleet.report(ride.vehicleId, { ts: now, lat, lng, battery_percent: battery });
    await recordTelemetry(ctx.db, {
      deviceId: ride.vehicleId,
      zoneId: ride.zone.id,
      ts: new Date(now),
      location: { lat, lng },
      batteryPercent: battery,
      tripId: ride.tripId,
    });
  }

  async function finish(ride: Ride): Promise<void> {
    const end = ride.plan.path[ride.plan.path.length - 1];
    try {
      await endRental(ctx, {
        rentalId: ride.rentalId,
        userEndLocation: { latitude: end[1], longitude: end[0] },
        ...(ride.parkingAttempts >= 3 ? { endState: 'ENDED_INTERNALLY' as const } : {}),
      });
      rides.delete(ride.rentalId);
      await afterRide(ride);
    } catch (err) {
      if (isRentalError(err) && err.code === 'FailedToEndRentalNoParking') {
        // the rider looks for an allowed place and rides on
        ride.parkingAttempts++;
        const next = planRide(rng, ride.zone, end, Math.max(20, ride.startBattery), types.get('scooter') ?? 40000) ?? undefined;
        const target = parkingPlace(rng, ride.zone);
        const path: Position[] = next?.path ?? [end, target];
        const distanceM = geodesicMeters(path[0][0], path[0][1], path[path.length - 1][0], path[path.length - 1][1]);
        ride.plan = { ...ride.plan, path, distanceM, movingS: Math.max(30, Math.round(distanceM / 4.5)), tailS: 10, drainPerM: 0 };
        ride.startedAt = ctx.clock.now().getTime();
        return;
      }
      rides.delete(ride.rentalId); // ended elsewhere (auto end, partner, operator) or gone
      if (!isRentalError(err) || !['RentalAlreadyEnded', 'RentalIDDoesNotExist'].includes(err.code)) throw err;
    }
  }

  async function afterRide(ride: Ride): Promise<void> {
    touched.add(ride.vehicleId);
    const v = await ctx.db.maybeOne(sql('SimLiveVehicleBattery'), [ride.vehicleId]);
    if (v && v.battery_percent < ride.zone.minBatteryPercent) lowBattery.set(ride.vehicleId, ride.zone);
  }

  async function startRides(zone: ZoneModel): Promise<void> {
    const now = ctx.clock.now();
    const z = await ctx.db.one(sql('SimLiveZoneClock'), [zone.id]);
    if (isSleeping({ timezone: z.timezone, sleepWindows: z.sleep_windows, status: z.status }, now) || partners.length === 0) return;
    const { fleet, riding } = await ctx.db.one(sql('SimLiveZoneLoad'), [zone.id]);
    const missing = Math.min(MAX_STARTS_PER_TICK, ridingTarget(fleet, z.timezone, now) - riding);
    // riders arrive spread out: each missing ride starts in this tick with even odds
    let wanted = 0;
    for (let i = 0; i < missing; i++) if (rng.chance(0.5)) wanted++;
    if (wanted === 0) return;
    const candidates = await ctx.db.many(sql('SimLiveCandidates'), [zone.id, String(rng.nextU32()), wanted]);
    for (const v of candidates) {
      if (touched.has(v.id) || lowBattery.has(v.id)) continue;
      const partner = pickPartner();
      const plan = planRide(rng, zone, [v.lng, v.lat], v.battery_percent, types.get(v.vehicle_type_id) ?? 40000);
      if (!plan) continue;
      try {
        const userId = await simUser(ctx.db, rng, partner, now);
        if (!userId) continue;
        const rental = await startRental(ctx, {
          partnerId: partner.id,
          userId,
          vehicleId: v.id,
          source: 'simulator',
          userLicenseValidated: true,
          userStartLocation: { latitude: v.lat, longitude: v.lng },
        });
        const ride: Ride = {
          rentalId: rental.id,
          tripId: rental.tripId,
          vehicleId: v.id,
          zone,
          plan: { ...plan, tailS: Math.min(plan.tailS, 60) },
          startedAt: now.getTime(),
          startBattery: v.battery_percent,
          lastTelemetryAt: 0,
          parkingAttempts: 0,
        };
        rides.set(rental.id, ride);
        touched.add(v.id);
      } catch (err) {
        log.debug({ err, vehicleId: v.id }, 'live ride not started');
      }
    }
  }

  function pickPartner() {
    let r = rng.next() * partners.reduce((s, p) => s + p.weight, 0);
    for (const p of partners) if ((r -= p.weight) < 0) return p;
    return partners[partners.length - 1];
  }

  /** The operator: vehicles out of service for a while come back; now and then one is rebalanced. */
  async function operate(zone: ZoneModel): Promise<void> {
    const now = ctx.clock.now();
    const since = new Date(now.getTime() - (20 * 60000) / rate);
    const z = await ctx.db.one(sql('SimLiveZoneClock'), [zone.id]);
    const sleeping = isSleeping({ timezone: z.timezone, sleepWindows: z.sleep_windows, status: z.status }, now);
    for (const v of await ctx.db.many(sql('SimLiveOutOfService'), [zone.id, since, 3])) {
      if (touched.has(v.id)) continue;
      const last: string[] = v.last_types ?? [];
      if (v.mds_state === 'removed') {
        await opEvent(v.id, zone, ['provider_drop_off'], 'available', 'ready', Math.max(v.battery_percent, 95), parkingPlace(rng, zone));
      } else if (v.mds_state === 'non_contactable') {
        await opEvent(v.id, zone, ['comms_restored'], 'available', 'ready', v.battery_percent, [v.lng, v.lat]);
      } else if (v.mds_state === 'missing') {
        await opEvent(v.id, zone, ['located'], 'available', 'ready', v.battery_percent, [v.lng, v.lat]);
      } else if (last.includes('off_hours')) {
        if (!sleeping) await opEvent(v.id, zone, ['on_hours'], 'available', 'ready', v.battery_percent, [v.lng, v.lat]);
      } else if (last.includes('maintenance')) {
        await opEvent(v.id, zone, ['maintenance'], 'available', 'ready', v.battery_percent, [v.lng, v.lat]);
      } else {
        await opEvent(v.id, zone, ['battery_charged'], 'available', 'ready', 100, [v.lng, v.lat]);
      }
    }
    if (rng.chance(0.05)) {
      const [v] = await ctx.db.many(sql('SimLiveCandidates'), [zone.id, String(rng.nextU32()), 1]);
      if (v && !touched.has(v.id) && !lowBattery.has(v.id))
        await opEvent(v.id, zone, ['rebalance_pick_up'], 'removed', 'unavailable', v.battery_percent, [v.lng, v.lat]);
    }
  }

  async function opEvent(
    vehicleId: string,
    zone: ZoneModel,
    eventTypes: string[],
    state: MdsState,
    status: string,
    battery: number,
    at: Position,
  ): Promise<void> {
    const now = ctx.clock.now();
    try {
      await ctx.db.tx(async (tx) => {
        await recordEvent(tx, {
          deviceId: vehicleId,
          zoneId: zone.id,
          eventTypes,
          vehicleState: state,
          ts: now,
          location: { lat: at[1], lng: at[0] },
          batteryPercent: battery,
        });
        // the vehicle reports its new battery itself when it speaks MQTT (below)
        if (!opts.fleet)
          await recordTelemetry(tx, { deviceId: vehicleId, zoneId: zone.id, ts: now, location: { lat: at[1], lng: at[0] }, batteryPercent: battery });
        await tx.query(sql('SimLiveSetVehicle'), [vehicleId, status, battery, now]);
      });
      touched.add(vehicleId);
      // after the event: the report is newer than the vehicle's state the event left
      if (opts.fleet) await opts.fleet.report(vehicleId, { ts: Date.now(), lat: at[1], lng: at[0], battery_percent: Math.round(battery) });
    } catch (err) {
      // a rental or another operator got there first: the state machine said no
      log.debug({ err, vehicleId, eventTypes }, 'operator event skipped');
    }
  }

  function loop(): void {
    if (stopped) return;
    current = tick().finally(() => {
      if (!stopped) timer = setTimeout(loop, tickMs);
    });
  }
  if (!opts.manual) timer = setTimeout(loop, 0);

  return {
    tick: () => (current = current.then(tick)),
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
  };
}
