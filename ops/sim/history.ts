/**
 * Bulk history: a discrete-event simulation of the fleet over [end − days, end), written through
 * the same tables the rental engine writes (rentals, trips, events, telemetry, TOMP bookings) with
 * COPY, in one transaction that holds the simulated vehicles' row locks. Rows are copied in batches
 * as the simulation advances (FLUSH_CHARS), so memory holds one batch whatever the days and fleet.
 * The transaction runs with the ops long-work statement timeout (OPS_STATEMENT_TIMEOUT_MS), and the
 * history partitions of the simulated days are created before it starts.
 *
 * Deterministic: one seeded PRNG consumed in a fixed order (vehicles by code, users by id, events
 * by time then vehicle), so the same seed and the same database state give identical rows, ids
 * included. Every vehicle starts from its current state and last event; every event it gets is
 * checked against the MDS state machine; rentals of one vehicle or one user never overlap.
 *
 * Who rides: on the demo database (marked by the demo seed) the demo's rental and MaaS partners with
 * their user pools; on any other database the simulator's own tenant (tenant.ts: partners without
 * keys, users it registers itself), so simulated rides never use a real partner's users. A zone
 * without prices gets no vehicles and a vehicle whose type has no price in its zone does not ride
 * (neither could be rented): both are counted in the summary, so the caller can say so.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { classify, DbError, type Tx } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { insertUsers, insertVehicles } from './fleet.js';
import { loadZoneModels, SleepCalendar, sleepIntervals } from './model.js';
import { Prng } from './prng.js';
import { FLUSH_CHARS, HOUR, STATUS, Simulation, TRIP_TYPE_WEIGHT, poolFor, type Partner, type Vehicle } from './simulation.js';
import { SIM_PARTNERS, SIM_PARTNER_NAMES, simTenant } from './tenant.js';

export interface SimOptions {
  days: number;
  /** vehicles per zone: more are put into service when fewer exist; default every existing vehicle */
  vehicles?: number;
  seed: number;
  end: Date;
  zones?: string[];
  /** COPY text gathered before a batch is written (default FLUSH_CHARS; tests use small batches) */
  flushChars?: number;
}

export interface SimSummary {
  from: Date;
  to: Date;
  zones: string[];
  vehicles: number;
  vehiclesAdded: number;
  usersAdded: number;
  rentals: number;
  trips: number;
  events: number;
  telemetry: number;
  tompBookings: number;
  rowsWritten: number;
  /** whose users rode: the demo's partners (demo database) or the simulator's own tenant */
  riders: 'demo' | 'simulator';
  /** zones without any price: no vehicle was put into service or simulated there */
  unpricedZones: string[];
  /** vehicles left standing because their type has no price in their zone */
  unpricedVehicles: number;
}

export class SimulationRepeatedError extends Error {
  constructor(opts: SimOptions, from: Date) {
    super(
      `history from ${from.toISOString()} to ${opts.end.toISOString()} was already simulated on this database: ` +
        'nothing was written; simulate a later window (--end) or start from an empty database (make clean)',
    );
    this.name = 'SimulationRepeatedError';
  }
}

export async function simulateHistory(ctx: AppContext, opts: SimOptions): Promise<SimSummary> {
  if (!(opts.days > 0)) throw new Error('days must be positive');
  const endMs = opts.end.getTime();
  const startMs = endMs - opts.days * 86400000;
  const root = new Prng(opts.seed);
  // the simulated days get their own partitions up front instead of filling the DEFAULT partitions
  await ctx.db.query(sql('HistoryEnsurePartitions'), [new Date(startMs).toISOString().slice(0, 10), new Date(endMs).toISOString().slice(0, 10)]);
  try {
    return await ctx.db.tx(
      async (tx) => {
        await tx.query(sql('SimStatementTimeout'), [String(ctx.config.opsStatementTimeoutMs)]);
        return run(ctx, tx, root, startMs, endMs, opts);
      },
      { retries: 0 },
    );
  } catch (err) {
    // COPY runs on the raw client: its unique violation arrives unclassified
    if ((err instanceof DbError ? err : classify(err, 'SimCopy')).kind === 'conflict') throw new SimulationRepeatedError(opts, new Date(startMs));
    throw err;
  }
}

async function run(ctx: AppContext, tx: Tx, root: Prng, startMs: number, endMs: number, opts: SimOptions): Promise<SimSummary> {
  const models = await loadZoneModels(tx, opts.zones ?? null);
  const types = new Map((await tx.many(sql('SimVehicleTypes'))).map((t) => [t.id, t]));
  const fleetRng = root.fork(1);
  const userRng = root.fork(2);
  const rng = root.fork(3);
  const unpricedZones = models.filter((z) => z.pricing.size === 0).map((z) => z.id);
  let unpricedVehicles = 0;

  // put vehicles into service where a zone has fewer than asked for
  let vehiclesAdded = 0;
  if (opts.vehicles !== undefined) {
    for (const zone of models) {
      const { n } = await tx.one(sql('SimZoneVehicleCount'), [zone.id]);
      if (n >= opts.vehicles) continue;
      const typeIds = [...zone.pricing.keys()].sort();
      if (typeIds.length === 0) continue;
      const { n: first } = await tx.one(sql('SimVehicleCount'));
      vehiclesAdded += await insertVehicles(
        tx,
        fleetRng,
        [{ zone, types: typeIds.map((id) => ({ id, share: types.get(id)?.form_factor === 'scooter' ? 0.7 : 0.3 })), count: opts.vehicles - n }],
        first,
        new Date(startMs),
      );
    }
  }

  // the simulated vehicles, locked until commit
  const vehicles: Vehicle[] = [];
  for (const zone of models) {
    const sleep = new SleepCalendar(sleepIntervals(zone, new Date(startMs), new Date(endMs)));
    const rows = await tx.many(sql('SimLockVehicles'), [[zone.id], opts.vehicles ?? 2147483647]);
    for (const r of rows) {
      if (r.running || r.pending_booking) continue;
      if (!zone.pricing.has(r.vehicle_type_id)) {
        unpricedVehicles++;
        continue;
      }
      const last = Math.max(r.last_event_at ? r.last_event_at.getTime() : 0, r.last_rental_end ? r.last_rental_end.getTime() : 0);
      vehicles.push({
        idx: vehicles.length,
        id: r.id,
        zone,
        sleep,
        typeId: r.vehicle_type_id,
        rangeM: Math.max(10000, types.get(r.vehicle_type_id)?.max_range_meters ?? 40000),
        state: r.mds_state,
        battery: r.battery_percent,
        pos: [r.lng, r.lat],
        lastEventAt: last,
        lastSeenAt: r.last_seen_at.getTime(),
        lastMovedAt: r.last_moved_at.getTime(),
        version: 0,
        idle: false,
        hadTrip: false,
        changed: false,
        lastTypes: r.last_event_types ?? [],
      });
    }
  }

  // a second run over the same window would double its rides; decided under the vehicles' locks
  const { simulated } = await tx.one(sql('SimWindowSimulated'), [models.map((z) => z.id), new Date(startMs), new Date(endMs)]);
  if (simulated) throw new SimulationRepeatedError(opts, new Date(startMs));

  // partners and their user pools (topped up to the size this fleet needs)
  const { demo } = await tx.one(sql('SimDatabaseIsDemo'));
  const partners: Partner[] = demo
    ? (await tx.many(sql('SimPartners'), [SIM_PARTNER_NAMES])).map((p) => ({
        id: p.id,
        name: p.name,
        kind: p.kind,
        tripType: p.trip_type,
        users: [],
        weight: 0,
      }))
    : (await simTenant(tx, root.fork(4), new Date(startMs), ctx.log)).map((p) => {
        const spec = SIM_PARTNERS.find((s) => s.name === p.name)!;
        return { id: p.id, name: p.name, kind: spec.kind, tripType: spec.tripType, users: [], weight: 0 };
      });
  for (const tt of ['rider', 'operator', 'maas'] as const) {
    const same = partners.filter((p) => p.tripType === tt);
    for (const p of same) p.weight = TRIP_TYPE_WEIGHT[tt] / same.length;
  }
  const riding = partners.filter((p) => p.weight > 0);
  let usersAdded = 0;
  const poolAt = new Date(startMs);
  for (const p of riding) {
    const { n: have } = await tx.one(sql('SimSeedUserCount'), [p.id]);
    const want = Math.max(20, Math.ceil(vehicles.length * p.weight * 1.2));
    if (have < want) {
      await insertUsers(tx, userRng, p.id, poolFor(p), have, want - have, poolAt);
      usersAdded += want - have;
    }
  }
  const userRows = await tx.many(sql('SimUsers'), [riding.map((p) => p.id)]);
  for (const u of userRows) {
    const busy = u.busy_until instanceof Date ? u.busy_until.getTime() : u.busy_until === null ? 0 : Infinity;
    riding.find((p) => p.id === u.partner_id)!.users.push({ id: u.id, ext: u.external_id, busyUntil: busy, rides: u.rides });
  }

  const sim = new Simulation(rng, vehicles, riding, startMs, endMs);
  let rowsWritten = 0;
  const flush = async () => {
    // users created on the fly, before the rentals that reference them; then parents before children
    for (const [partnerId, list] of sim.newUsers) {
      const p = riding.find((x) => x.id === partnerId)!;
      await tx.query(sql('SimInsertUsers'), [
        list.map((u) => u.id),
        partnerId,
        list.map((u) => `${u.ext}@${poolFor(p).domain}`),
        list.map((u) => u.ext),
        poolAt,
      ]);
      usersAdded += list.length;
    }
    sim.newUsers.clear();
    for (const buf of sim.buffers) rowsWritten += await buf.copyTo(tx.client);
  };
  sim.begin();
  // advance one simulated hour at a time; write whenever a batch has gathered
  for (let until = startMs + HOUR; ; until += HOUR) {
    sim.runUntil(Math.min(until, endMs));
    if (until >= endMs) break;
    if (sim.buffers.reduce((n, b) => n + b.pending, 0) >= (opts.flushChars ?? FLUSH_CHARS)) await flush();
  }
  await flush();

  const vs = vehicles.filter((v) => v.changed);
  await tx.query(sql('SimUpdateVehicles'), [
    vs.map((v) => v.id),
    vs.map((v) => v.state),
    vs.map((v) => STATUS[v.state]),
    vs.map((v) => v.state !== 'on_trip'),
    vs.map((v) => Math.max(0, Math.min(100, Math.round(v.battery)))),
    vs.map((v) => v.pos[0]),
    vs.map((v) => v.pos[1]),
    vs.map((v) => new Date(v.lastSeenAt)),
    vs.map((v) => new Date(v.lastMovedAt)),
    vs.map((v) => v.hadTrip),
    vs.map(() => rng.uuid()),
  ]);
  const summary: SimSummary = {
    from: new Date(startMs),
    to: new Date(endMs),
    zones: models.map((z) => z.id),
    vehicles: vehicles.length,
    vehiclesAdded,
    usersAdded,
    rentals: sim.rentals.rows,
    trips: sim.trips.rows,
    events: sim.events.rows,
    telemetry: sim.telemetry.rows,
    tompBookings: sim.bookings.rows,
    rowsWritten,
    riders: demo ? 'demo' : 'simulator',
    unpricedZones,
    unpricedVehicles,
  };
  ctx.log.info(summary, 'fleet history simulated');
  return summary;
}
