/**
 * The discrete-event simulation of one fleet behind ops/sim/history.ts: each vehicle's actions
 * (rides, charging, maintenance, sleep windows, comms) in time order from its current state, every
 * event checked against the MDS state machine, the rows buffered for COPY (CopyBuffer). The
 * orchestration (transaction, locks, partitions, batches) is history.ts's.
 */
import { isValidTransition, type MdsState } from '../../lib/domain/fleet/state-machine.js';
import { arrayLiteral, CopyBuffer, point } from './copy.js';
import { geodesicMeters, offset, type Position } from './geo.js';
import { parkingPlace, SleepCalendar, type ZoneModel } from './model.js';
import { Prng } from './prng.js';
import { costOf, planRide, telemetryOf, type RidePlan } from './rides.js';
import { Heap } from './heap.js';

export type Kind = 'decide' | 'tripEnd' | 'charge' | 'maintDone' | 'dropOff' | 'commsRestored' | 'located' | 'offHours' | 'onHours';

export interface Vehicle {
  idx: number;
  id: string;
  zone: ZoneModel;
  sleep: SleepCalendar;
  typeId: string;
  rangeM: number;
  state: MdsState;
  battery: number;
  pos: Position;
  lastEventAt: number;
  lastSeenAt: number;
  lastMovedAt: number;
  version: number;
  idle: boolean;
  hadTrip: boolean;
  /** got at least one event in this run (only those rows are updated at the end) */
  changed: boolean;
  /** event types of the vehicle's last event before the run */
  lastTypes: string[];
}

export interface Action {
  t: number;
  v: number;
  ver: number;
  kind: Kind;
}

export interface Partner {
  id: string;
  name: string;
  tripType: 'rider' | 'maas' | 'operator';
  kind: string;
  users: Array<{ id: string; ext: string; busyUntil: number; rides: number }>;
  weight: number;
}

export const TRIP_TYPE_WEIGHT = { rider: 0.6, operator: 0.25, maas: 0.15 } as const;
/** Rides per available vehicle per hour, by local hour of day (about 5 a day). */
const DEMAND = [0.05, 0.03, 0.02, 0.02, 0.02, 0.04, 0.1, 0.24, 0.38, 0.27, 0.2, 0.22, 0.28, 0.28, 0.25, 0.28, 0.35, 0.42, 0.4, 0.32, 0.24, 0.17, 0.12, 0.08];
const MIN = 60000;
export const HOUR = 3600000;

/**
 * Share of a zone's fleet on a ride at once at the evening peak of DEMAND. Real shared fleets have
 * a few percent riding at night and 10–20 % at their peak; the live simulator keeps to this curve.
 */
export const PEAK_RIDING_SHARE = 0.15;
const DEMAND_PEAK = Math.max(...DEMAND);

/** Share of the fleet riding at once at a local hour: DEMAND's daily curve, PEAK_RIDING_SHARE at its top. */
export function ridingShare(localHour: number): number {
  return (PEAK_RIDING_SHARE * DEMAND[localHour]) / DEMAND_PEAK;
}

const hourFormats = new Map<string, Intl.DateTimeFormat>();

/** Hour of day (0–23) at t in the time zone tz. */
export function localHour(tz: string, t: number): number {
  let f = hourFormats.get(tz);
  if (!f) hourFormats.set(tz, (f = new Intl.DateTimeFormat('en-GB', { timeZone: tz, hour: '2-digit', hourCycle: 'h23' })));
  return Number(f.format(new Date(t)));
}

export const STATUS: Record<MdsState, string> = {
  available: 'ready',
  on_trip: 'riding',
  reserved: 'booked',
  non_operational: 'unavailable',
  removed: 'unavailable',
  non_contactable: 'unavailable',
  missing: 'unavailable',
  elsewhere: 'riding',
};

/** Characters of COPY text gathered across the buffers before they are written (32 MB). */
export const FLUSH_CHARS = 32 << 20;

/**
 * A simulation over a window that already has simulated rides (or whose ids are already in the
 * database). Operator-facing: bin/ops.ts prints the message alone.
 */

export function poolFor(p: Partner): { prefix: string; domain: string } {
  const slug =
    p.name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'partner';
  return { prefix: `sim-${slug}`, domain: `${slug}.example` };
}

export class Simulation {
  readonly rentals = new CopyBuffer('rentals', [
    'id',
    'partner_id',
    'user_id',
    'vehicle_id',
    'zone_id',
    'trip_id',
    'source',
    'state',
    'beginners_mode',
    'licence_validated',
    'group_id',
    'ride_type',
    'currency',
    'vat_rate',
    'start_price',
    'price_per_minute',
    'started_at',
    'ended_at',
    'user_start_location',
    'user_end_location',
    'vehicle_start_location',
    'vehicle_end_location',
    'start_battery_percent',
    'end_battery_percent',
    'duration_min',
    'distance_m',
    'subtotal',
    'total_amount',
    'vat_amount',
    'photo_decision',
    'photo_decided_at',
    'created_at',
    'updated_at',
  ]);
  readonly trips = new CopyBuffer('trips', [
    'trip_id',
    'rental_id',
    'device_id',
    'zone_id',
    'vehicle_type_id',
    'trip_type',
    'start_time',
    'end_time',
    'start_location',
    'end_location',
    'distance_m',
    'duration_s',
    'is_group_ride',
    'ride_type',
    'user_ride_count',
    'recorded_at',
  ]);
  readonly events = new CopyBuffer('events', [
    'event_id',
    'device_id',
    'zone_id',
    'event_types',
    'vehicle_state',
    'ts',
    'location',
    'battery_percent',
    'trip_ids',
    'recorded_at',
  ]);
  readonly telemetry = new CopyBuffer('telemetry', ['telemetry_id', 'device_id', 'zone_id', 'ts', 'location', 'battery_percent', 'trip_id', 'recorded_at']);
  readonly bookings = new CopyBuffer('tomp_bookings', [
    'id',
    'partner_id',
    'user_id',
    'vehicle_id',
    'rental_id',
    'state',
    'from_location',
    'customer_external_id',
    'language',
    'expires_at',
    'created_at',
    'updated_at',
  ]);
  readonly legs = new CopyBuffer('tomp_legs', ['id', 'booking_id', 'state', 'departure_time', 'created_at', 'updated_at']);
  readonly newUsers = new Map<string, Array<{ id: string; ext: string }>>();

  private readonly heap = new Heap<Action>((a, b) => a.t - b.t || a.v - b.v || a.ver - b.ver);
  private readonly byZone = new Map<string, Vehicle[]>();
  private readonly hourCache = new Map<string, number>();
  /** per vehicle: the ride in progress */
  private readonly riding = new Map<number, { plan: RidePlan; end: number; tripId: string; startBattery: number }>();

  constructor(
    private readonly rng: Prng,
    private readonly vehicles: Vehicle[],
    private readonly partners: Partner[],
    private readonly startMs: number,
    private readonly endMs: number,
  ) {
    for (const v of vehicles) {
      const list = this.byZone.get(v.zone.id) ?? [];
      list.push(v);
      this.byZone.set(v.zone.id, list);
    }
  }

  /** In copy order: a row's parents (rentals before trips and bookings, bookings before legs) first. */
  get buffers(): CopyBuffer[] {
    return [this.rentals, this.trips, this.events, this.telemetry, this.bookings, this.legs];
  }

  /** Every vehicle continues from its current state. */
  begin(): void {
    for (const v of this.vehicles) this.start(v);
  }

  /** Plays the actions due before `untilMs` (the same order as one run to the end). */
  runUntil(untilMs: number): void {
    for (let next = this.heap.peek(); next && next.t < untilMs; next = this.heap.peek()) {
      const a = this.heap.pop()!;
      const v = this.vehicles[a.v];
      if (a.ver !== v.version || a.t >= this.endMs) continue;
      this.act(v, a.kind, a.t);
    }
  }

  private schedule(v: Vehicle, t: number, kind: Kind): void {
    if (t < this.endMs) this.heap.push({ t, v: v.idx, ver: v.version, kind });
  }

  /** Continue from the vehicle's current state. */
  private start(v: Vehicle): void {
    const t = Math.max(this.startMs, v.lastEventAt + 1000);
    const lastTypes = v.lastTypes;
    switch (v.state) {
      case 'available':
        if (v.battery < v.zone.minBatteryPercent + 2) {
          if (this.emit(v, t, ['battery_low'], 'non_operational')) this.schedule(v, t + this.rng.range(30, 120) * MIN, 'charge');
        } else this.afterAvailable(v, t);
        return;
      case 'non_operational': {
        const window = v.sleep.containing(t);
        if (lastTypes.includes('off_hours') && window) this.schedule(v, window[1], 'onHours');
        else if (lastTypes.includes('off_hours')) this.schedule(v, t, 'onHours');
        else if (lastTypes.includes('maintenance')) this.schedule(v, t + this.rng.range(20, 120) * MIN, 'maintDone');
        else this.schedule(v, t + this.rng.range(20, 120) * MIN, 'charge');
        return;
      }
      case 'removed':
        this.schedule(v, t + this.rng.range(0, 60) * MIN, 'dropOff');
        return;
      case 'non_contactable':
        this.schedule(v, t + this.rng.range(5, 60) * MIN, 'commsRestored');
        return;
      case 'missing':
        this.schedule(v, t + this.rng.range(30, 240) * MIN, 'located');
        return;
      case 'reserved':
        if (this.emit(v, t, ['reservation_cancel'], 'available')) this.afterAvailable(v, t);
        return;
      default:
        // on_trip / elsewhere without a running rental: nothing we can continue safely
        return;
    }
  }

  private act(v: Vehicle, kind: Kind, t: number): void {
    switch (kind) {
      case 'decide':
        return this.decide(v, t);
      case 'offHours':
        v.idle = false;
        if (this.emit(v, t, ['off_hours'], 'non_operational')) this.schedule(v, v.sleep.containing(t)?.[1] ?? t + HOUR, 'onHours');
        return;
      case 'onHours':
        if (this.emit(v, t, ['on_hours'], 'available')) this.afterAvailable(v, t);
        return;
      case 'tripEnd':
        return this.endRide(v, t);
      case 'charge':
        v.battery = this.rng.int(95, 100);
        if (this.emit(v, t, ['battery_charged'], 'available')) this.afterAvailable(v, t);
        return;
      case 'maintDone':
        if (this.emit(v, t, ['maintenance'], 'available')) this.afterAvailable(v, t);
        return;
      case 'commsRestored':
        if (this.emit(v, t, ['comms_restored'], 'available')) this.afterAvailable(v, t);
        return;
      case 'located':
        if (this.emit(v, t, ['located'], 'available')) this.afterAvailable(v, t);
        return;
      case 'dropOff':
        v.pos = parkingPlace(this.rng, v.zone);
        v.battery = Math.max(v.battery, this.rng.int(90, 100));
        v.lastMovedAt = t;
        if (this.emit(v, t, ['provider_drop_off'], 'available')) this.afterAvailable(v, t);
        return;
    }
  }

  /** Writes one event after checking it against the state machine; false when past the end. */
  private emit(v: Vehicle, t: number, types: string[], to: MdsState, tripIds?: string[]): boolean {
    if (t <= v.lastEventAt) t = v.lastEventAt + 1000;
    if (t >= this.endMs) return false;
    if (!isValidTransition(v.state, types, to)) throw new Error(`simulator bug: ${v.state} --${types.join(',')}--> ${to}`);
    const battery = Math.max(0, Math.min(100, Math.round(v.battery)));
    const ts = new Date(t);
    this.events.push([
      this.rng.uuid(),
      v.id,
      v.zone.id,
      arrayLiteral(types),
      to,
      ts,
      point(v.pos[0], v.pos[1]),
      battery,
      tripIds ? arrayLiteral(tripIds) : null,
      ts,
    ]);
    v.state = to;
    v.changed = true;
    v.lastEventAt = t;
    v.lastSeenAt = Math.max(v.lastSeenAt, t);
    return true;
  }

  /** The vehicle just became available at t: sleep if the zone sleeps, else wait for demand. */
  private afterAvailable(v: Vehicle, t: number): void {
    if (v.sleep.containing(t)) {
      this.schedule(v, t + 1000, 'offHours');
      return;
    }
    v.idle = true;
    const next = this.nextDemand(v, t);
    const sleep = v.sleep.nextStart(t);
    if (sleep && next >= sleep[0]) this.schedule(v, sleep[0], 'offHours');
    else this.schedule(v, next, 'decide');
  }

  /** Next demand after t: an inhomogeneous Poisson process walked hour by hour. */
  private nextDemand(v: Vehicle, t: number): number {
    let left = this.rng.exp(1);
    let at = t;
    for (let i = 0; i < 24 * 14; i++) {
      const boundary = (Math.floor(at / HOUR) + 1) * HOUR;
      const rate = DEMAND[this.localHour(v.zone.timezone, at)];
      const cap = (rate * (boundary - at)) / HOUR;
      if (left <= cap) return at + (left / rate) * HOUR;
      left -= cap;
      at = boundary;
    }
    return at;
  }

  private localHour(tz: string, t: number): number {
    const key = `${tz}|${Math.floor(t / HOUR)}`;
    let h = this.hourCache.get(key);
    if (h === undefined) {
      h = localHour(tz, t);
      this.hourCache.set(key, h);
    }
    return h;
  }

  private decide(v: Vehicle, t: number): void {
    const r = this.rng.next();
    if (r < 0.004) {
      v.idle = false;
      if (this.emit(v, t, ['comms_lost'], 'non_contactable')) this.schedule(v, t + this.rng.range(5, 90) * MIN, 'commsRestored');
    } else if (r < 0.024) {
      v.idle = false;
      if (this.emit(v, t, ['rebalance_pick_up'], 'removed')) this.schedule(v, t + this.rng.range(30, 150) * MIN, 'dropOff');
    } else if (r < 0.032) {
      v.idle = false;
      if (this.emit(v, t, ['maintenance'], 'non_operational')) this.schedule(v, t + this.rng.range(60, 360) * MIN, 'maintDone');
    } else if (!this.startRides(v, t)) {
      this.afterAvailable(v, t);
    }
  }

  private pickPartner(): Partner | undefined {
    if (this.partners.length === 0) return undefined;
    let r = this.rng.next() * this.partners.reduce((s, p) => s + p.weight, 0);
    for (const p of this.partners) if ((r -= p.weight) < 0) return p;
    return this.partners[this.partners.length - 1];
  }

  private pickUser(p: Partner, t: number, exclude: Set<string>): Partner['users'][number] {
    const free = (u: Partner['users'][number]) => u.busyUntil <= t && !exclude.has(u.id);
    const n = p.users.length;
    for (let k = 0; k < 8 && n > 0; k++) {
      const u = p.users[this.rng.int(0, n - 1)];
      if (free(u)) return u;
    }
    const from = n > 0 ? this.rng.int(0, n - 1) : 0;
    for (let k = 0; k < n; k++) {
      const u = p.users[(from + k) % n];
      if (free(u)) return u;
    }
    // everyone is riding: a new user signs up
    const list = this.newUsers.get(p.id) ?? [];
    const user = { id: this.rng.uuid(), ext: `${poolFor(p).prefix}-new-${String(list.length + 1).padStart(5, '0')}`, busyUntil: 0, rides: 0 };
    list.push({ id: user.id, ext: user.ext });
    this.newUsers.set(p.id, list);
    p.users.push(user);
    return user;
  }

  /** Starts a ride (sometimes a group ride with idle vehicles nearby); false when none started. */
  private startRides(v: Vehicle, t: number): boolean {
    const partner = this.pickPartner();
    if (!partner) return false;
    const plan = planRide(this.rng, v.zone, v.pos, v.battery, v.rangeM);
    if (!plan || t + (plan.movingS + plan.tailS) * 1000 >= this.endMs) return false;
    const group = partner.tripType !== 'maas' && this.rng.chance(0.04) ? this.guestsFor(v, t) : [];
    const groupId = group.length > 0 ? this.rng.uuid() : null;
    const used = new Set<string>();
    this.ride(v, t, plan, partner, used, groupId ? { id: groupId, type: 'group-host' } : null);
    const dest = plan.path[plan.path.length - 1];
    for (const g of group) {
      const gt = t + this.rng.int(10, 45) * 1000;
      const gp = planRide(this.rng, g.zone, g.pos, g.battery, g.rangeM, { near: dest });
      if (!gp || gt + (gp.movingS + gp.tailS) * 1000 >= this.endMs) {
        this.afterAvailable(g, t);
        continue;
      }
      this.ride(g, gt, gp, partner, used, { id: groupId!, type: 'group-guest' });
    }
    return true;
  }

  private guestsFor(host: Vehicle, t: number): Vehicle[] {
    const want = this.rng.int(1, 2);
    const out: Vehicle[] = [];
    for (const g of this.byZone.get(host.zone.id) ?? []) {
      if (out.length >= want) break;
      if (g === host || !g.idle || g.state !== 'available' || g.lastEventAt >= t || g.battery < g.zone.minBatteryPercent + 10) continue;
      if (geodesicMeters(host.pos[0], host.pos[1], g.pos[0], g.pos[1]) > 300) continue;
      g.version++; // cancels whatever the guest vehicle was waiting for
      g.idle = false;
      out.push(g);
    }
    return out;
  }

  private ride(
    v: Vehicle,
    t: number,
    plan: RidePlan,
    partner: Partner,
    used: Set<string>,
    group: { id: string; type: 'group-host' | 'group-guest' } | null,
  ): void {
    const rng = this.rng;
    if (t <= v.lastEventAt) t = v.lastEventAt + 1000;
    const user = this.pickUser(partner, t, used);
    used.add(user.id);
    const z = v.zone;
    const prices = z.pricing.get(v.typeId)!;
    const durationS = plan.movingS + plan.tailS;
    const end = t + durationS * 1000;
    const rentalId = rng.uuid();
    const tripId = rng.uuid();
    const from = v.pos;
    const dest = plan.path[plan.path.length - 1];
    const startBattery = Math.round(v.battery);
    const endBattery = Math.max(0, Math.round(startBattery - plan.distanceM * plan.drainPerM));
    const cost = costOf(plan, prices, z.vatRate, t);
    const userStart = offset(from[0], from[1], rng.range(1, 15), rng.range(0, 2 * Math.PI));
    user.busyUntil = end;
    user.rides++;
    v.idle = false;
    v.version++;
    v.battery = startBattery;
    this.emit(v, t, ['trip_start'], 'on_trip', [tripId]);
    for (const p of telemetryOf(z, plan, t, startBattery)) {
      const ts = new Date(p.t);
      this.telemetry.push([rng.uuid(), v.id, z.id, ts, point(p.lng, p.lat), p.battery, tripId, ts]);
    }
    const photo =
      plan.endState === 'ENDED'
        ? rng.pick(['good-parking', 'good-parking', 'good-parking', 'good-parking', 'good-parking', 'good-parking', 'bad-parking', 'bad-photo', 'no-decision'])
        : 'unknown';
    const photoAt = new Date(end + (photo === 'bad-parking' ? 30 * MIN : rng.int(30, 600) * 1000));
    const startedAt = new Date(t);
    const endedAt = new Date(end);
    this.rentals.push([
      rentalId,
      partner.id,
      user.id,
      v.id,
      z.id,
      tripId,
      partner.tripType === 'maas' ? 'tomp' : 'simulator',
      plan.endState,
      user.rides <= 3,
      true,
      group?.id ?? null,
      group?.type ?? 'solo',
      z.currency,
      z.vatRate,
      prices.startPrice,
      prices.pricePerMinute,
      startedAt,
      endedAt,
      point(userStart[0], userStart[1]),
      point(dest[0], dest[1]),
      point(from[0], from[1]),
      point(dest[0], dest[1]),
      startBattery,
      endBattery,
      cost.durationMin,
      Math.ceil(plan.distanceM),
      cost.subtotal,
      cost.total,
      cost.vat,
      photo,
      photoAt,
      startedAt,
      photoAt,
    ]);
    this.trips.push([
      tripId,
      rentalId,
      v.id,
      z.id,
      v.typeId,
      partner.tripType,
      startedAt,
      endedAt,
      point(from[0], from[1]),
      point(dest[0], dest[1]),
      Math.ceil(plan.distanceM),
      durationS,
      group !== null,
      group?.type ?? 'solo',
      user.rides,
      endedAt,
    ]);
    if (partner.tripType === 'maas') {
      const bookingId = rng.uuid();
      const bookedAt = new Date(t - rng.int(20, 90) * 1000);
      this.bookings.push([
        bookingId,
        partner.id,
        user.id,
        v.id,
        rentalId,
        'FINISHED',
        point(userStart[0], userStart[1]),
        user.ext,
        'en',
        new Date(bookedAt.getTime() + 10 * MIN),
        bookedAt,
        endedAt,
      ]);
      this.legs.push([rng.uuid(), bookingId, 'FINISHED', startedAt, bookedAt, endedAt]);
    }
    this.riding.set(v.idx, { plan, end, tripId, startBattery });
    this.schedule(v, end, 'tripEnd');
  }

  private endRide(v: Vehicle, t: number): void {
    const r = this.riding.get(v.idx)!;
    this.riding.delete(v.idx);
    v.pos = r.plan.path[r.plan.path.length - 1]!;
    v.battery = Math.max(0, Math.round(r.startBattery - r.plan.distanceM * r.plan.drainPerM));
    v.lastMovedAt = t - r.plan.tailS * 1000;
    v.lastSeenAt = t;
    v.hadTrip = true;
    this.emit(v, t, ['trip_end'], 'available', [r.tripId]);
    if (v.battery < v.zone.minBatteryPercent) {
      if (this.emit(v, t + 60000, ['battery_low'], 'non_operational')) this.schedule(v, t + this.rng.range(60, 300) * MIN, 'charge');
    } else {
      this.afterAvailable(v, t);
    }
  }
}
