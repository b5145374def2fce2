/**
 * The operator the breadth bench (bench/breadth.bench.ts) builds, through the ops tools' own code:
 *   - Z zones in one zone file (NDJSON, one FeatureCollection a line) read and imported as
 *     `ops zone import` does (readZoneDocuments, importZones): boundary, operations area, prices,
 *     two vehicle types, `operating_since` a day and an hour back; every other zone parks in
 *     SPOTS parking spots (stations), the others are free-floating with a no-parking area;
 *   - the feed clients in one clients file, imported as `ops clients import` does: per zone a city
 *     client (and, with more clients per zone, data clients each seeing that zone and the next ones:
 *     a 2.2 scope each), plus one GBFS aggregator and one insurer of every zone;
 *   - a partner key (`ops keys create`) for the partner vehicle list;
 *   - the fleet and its history with `ops simulate`'s function (simulateHistory), which puts vehicles
 *     into service where a zone has fewer than asked for: a day (`historyHours`) with
 *     `historyVehicles` per zone, then the last closed hour with all `vehicles` (the others start at
 *     its beginning). The ops tools have no other way to place vehicles; none is placed by hand.
 * And the live movement (`Driver`): rides through the rental engine with the live simulator's tenant
 * and writes (ops/sim/live.ts): start, a telemetry point where the ride ends, end.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readClientEntries, importFeedClients, type ImportedClient } from '../ops/admin/client-import.js';
import { createKey } from '../ops/admin/credentials.js';
import { readZoneDocuments } from '../ops/admin/zone-file.js';
import { importZones } from '../ops/admin/zones.js';
import type { AppContext } from '../lib/domain/context.js';
import { addHours, formatHour } from '../lib/feeds/hours.js';
import { recordTelemetry } from '../ops/sim/telemetry.js';
import { endRental, startRental } from '../lib/domain/rentals/engine.js';
import { isRentalError } from '../lib/domain/rentals/errors.js';
import { simulateHistory } from '../ops/sim/history.js';
import { loadZoneModels, parkingPlace, type ZoneModel } from '../ops/sim/model.js';
import { Prng } from '../ops/sim/prng.js';
import { simTenant } from '../ops/sim/tenant.js';
import { sql } from '../lib/core/sql/typed.js';
import { squarePolygon } from '../test/support/geometry.js';

/** parking spots of a parking-spot zone */
const SPOTS = 50;
const SCOOTER = 'breadth-scooter';
const BIKE = 'breadth-bike';

export const zoneId = (n: number) => `bz${String(n).padStart(3, '0')}`;

/** Zone n: a 0.1° square of a grid over Europe (20 a row), its areas, prices and first hour. */
function zoneDocument(n: number, since: string) {
  const x = 2 + (n % 20) * 0.5;
  const y = 44 + Math.floor(n / 20) * 0.4;
  const spots = n % 2 === 1;
  const areas = spots
    ? // SPOTS stations of 60 m on a 10 × 5 grid in the middle of the operations area
      Array.from({ length: SPOTS }, (_, k) => ({
        type: 'Feature',
        geometry: squarePolygon(x + 0.02 + (k % 10) * 0.006, y + 0.03 + Math.floor(k / 10) * 0.008, 0.0008, 0.0005),
        properties: { area_type: 'parking-spot', name: `Station ${n}.${k}`, capacity: 40 },
      }))
    : [{ type: 'Feature', geometry: squarePolygon(x + 0.05, y + 0.05, 0.005), properties: { area_type: 'no-parking', name: `Square ${n}` } }];
  return {
    type: 'FeatureCollection',
    features: [
      {
        type: 'Feature',
        geometry: squarePolygon(x, y, 0.1),
        properties: {
          kind: 'zone',
          id: zoneId(n),
          name: `Breadth ${n}`,
          city: `City ${n}`,
          country: 'DE',
          timezone: 'Europe/Berlin',
          currency: 'EUR',
          vat_rate: 0.19,
          parking_mode: spots ? 'parking-spot' : 'free-floating',
          operating_since: since,
          prices: { [SCOOTER]: { start_price: 100, price_per_minute: 20 + (n % 5) }, [BIKE]: { start_price: 50, price_per_minute: 15 } },
          // declared once; every zone's prices name them
          ...(n === 0
            ? {
                vehicle_types: [
                  {
                    id: SCOOTER,
                    form_factor: 'scooter',
                    propulsion_type: 'electric',
                    name: 'E-Scooter',
                    make: 'Voltra',
                    model: 'S3',
                    max_range_meters: 50000,
                    max_speed_kph: 20,
                  },
                  {
                    id: BIKE,
                    form_factor: 'bicycle',
                    propulsion_type: 'electric_assist',
                    name: 'E-Bike',
                    make: 'Voltra',
                    model: 'B2',
                    max_range_meters: 80000,
                    max_speed_kph: 25,
                  },
                ],
              }
            : {}),
        },
      },
      { type: 'Feature', geometry: squarePolygon(x + 0.005, y + 0.005, 0.09), properties: { area_type: 'operations', name: `Centre ${n}` } },
      { type: 'Feature', geometry: squarePolygon(x + 0.06, y + 0.02, 0.01), properties: { area_type: 'slow-zone', name: `Old town ${n}`, max_speed_kph: 10 } },
      ...areas,
    ],
  };
}

export interface Operator {
  zones: string[];
  /** the city client of each zone, with its secret (shown once by the import) */
  cityClients: Map<string, ImportedClient>;
  clients: number;
  partnerKey: string;
  /** wall seconds of each step */
  zoneImportS: number;
  clientsImportS: number;
  historyS: number;
  historyRows: number;
  vehicles: number;
  /** the first and last hour the catch-up publishes: the history's hours and the last closed hour */
  firstHour: Date;
  lastHour: Date;
}

const seconds = (t0: number) => (performance.now() - t0) / 1000;

/**
 * Builds the operator on an empty database. `end`: the current hour (the history ends there);
 * the zones operate from `end` − (`historyHours` + 1) h: the history's hours with
 * `historyVehicles` per zone, then the last closed hour with all `vehicles`.
 */
export async function buildOperator(
  ctx: AppContext,
  dir: string,
  o: { zones: number; vehicles: number; historyVehicles: number; historyHours: number; clientsPerZone: number; end: Date; seed: number },
): Promise<Operator> {
  const firstHour = addHours(o.end, -(o.historyHours + 1));
  const lastHour = addHours(o.end, -1);
  const zones = Array.from({ length: o.zones }, (_, n) => zoneId(n));

  const zonesFile = join(dir, 'zones.ndjson');
  writeFileSync(zonesFile, zones.map((_, n) => JSON.stringify(zoneDocument(n, formatHour(firstHour)))).join('\n'));
  let t0 = performance.now();
  const docs = readZoneDocuments(readFileText(zonesFile), zonesFile);
  if ('problem' in docs) throw new Error(docs.problem);
  const imported = await importZones(ctx.db, ctx.clock, docs);
  if (imported.warnings.length) throw new Error(`zone import: ${imported.warnings.join('; ')}`);
  const zoneImportS = seconds(t0);

  const entries: Array<{ client_id: string; role: string; zones: string[] | null; label: string }> = [];
  zones.forEach((z, i) => {
    entries.push({ client_id: `city-${z}`, role: 'city', zones: [z], label: 'breadth bench' });
    for (let k = 1; k < o.clientsPerZone; k++) {
      entries.push({ client_id: `data-${z}-${k}`, role: 'data', zones: zones.slice(i, i + k + 1), label: 'breadth bench' });
    }
  });
  entries.push({ client_id: 'aggregator', role: 'gbfs', zones: null, label: 'breadth bench' });
  entries.push({ client_id: 'insurer', role: 'insurer', zones: null, label: 'breadth bench' });
  const clientsFile = join(dir, 'clients.json');
  writeFileSync(clientsFile, JSON.stringify(entries));
  t0 = performance.now();
  const made = await importFeedClients(ctx.db, readClientEntries(readFileText(clientsFile), clientsFile));
  const clientsImportS = seconds(t0);
  const cityClients = new Map(made.filter((c) => c.role === 'city').map((c) => [c.zones![0], c]));

  const partnerKey = (await createKey(ctx.db, 'Breadth Bench Partner', 'partner', 'breadth bench')).key;

  t0 = performance.now();
  const day = await simulateHistory(ctx, { days: o.historyHours / 24, vehicles: o.historyVehicles, seed: o.seed, end: lastHour });
  const hour = await simulateHistory(ctx, { days: 1 / 24, vehicles: o.vehicles, seed: o.seed + 1, end: o.end });
  const historyS = seconds(t0);
  if (day.unpricedZones.length || hour.unpricedVehicles) throw new Error('history: unpriced zones or vehicles');
  await ctx.db.query('ANALYZE');
  const { n } = await ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM vehicles`);
  return {
    zones,
    cityClients,
    clients: made.length,
    partnerKey,
    zoneImportS,
    clientsImportS,
    historyS,
    historyRows: day.rowsWritten + hour.rowsWritten,
    vehicles: n,
    firstHour,
    lastHour,
  };
}

const readFileText = (file: string) => readFileSync(file, 'utf8');

interface Candidate {
  id: string;
  zone: ZoneModel;
  battery: number;
  lng: number;
  lat: number;
}

interface Ride {
  rentalId: string;
  tripId: string;
  userId: string;
  vehicle: Candidate;
  endsAt: number;
}

export interface DriverCounts {
  started: number;
  ended: number;
  /** starts the engine refused (vehicle taken, battery, user busy): skipped, as the live simulator does */
  refused: number;
}

/**
 * The live rate of movement: every `tickS` seconds `share` of the fleet starts a ride, spread evenly
 * over the tick in one-second slices and over the zones; each ride lasts one tick and ends at a
 * parking place of its zone (ops/sim/model.ts parkingPlace), with a telemetry point there first.
 * The writes are the live simulator's (rental engine, recordTelemetry) with the simulator's own
 * partners and users, in this process.
 */
export class Driver {
  readonly counts: DriverCounts = { started: 0, ended: 0, refused: 0 };
  private readonly rng: Prng;
  private pools = new Map<string, Candidate[]>();
  private models: ZoneModel[] = [];
  private users: Array<{ id: string; partnerId: string }> = [];
  private busyUsers = new Set<string>();
  private rides: Ride[] = [];
  private running: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly share: number,
    private readonly tickS: number,
    seed: number,
  ) {
    this.rng = new Prng(seed);
  }

  /** The zones, candidate vehicles (the live simulator's SimLiveCandidates) and free users of the simulator's partners. */
  async load(fleet: number): Promise<void> {
    this.models = await loadZoneModels(this.ctx.db, null);
    const perZone = Math.max(20, Math.ceil(((fleet * this.share) / this.models.length) * 6));
    for (const z of this.models) {
      const rows = await this.ctx.db.many(sql('SimLiveCandidates'), [z.id, String(this.rng.nextU32()), perZone]);
      this.pools.set(
        z.id,
        rows.map((r) => ({ id: r.id, zone: z, battery: r.battery_percent, lng: r.lng, lat: r.lat })),
      );
    }
    const partners = await simTenant(this.ctx.db, this.rng, this.ctx.clock.now(), this.ctx.log);
    for (const p of partners) {
      const rows = await this.ctx.db.many(sql('SimLiveUsers'), [p.id, String(this.rng.nextU32()), 5000]);
      this.users.push(...rows.map((r) => ({ id: r.id, partnerId: p.id })));
    }
    if (!this.users.length) throw new Error('driver: the simulator tenant has no users (simulate history first)');
  }

  start(): void {
    this.stopping = false;
    this.running = this.loop();
  }

  /** Stops starting rides and ends the running ones. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    for (const r of this.rides.splice(0)) await this.end(r);
  }

  private async loop(): Promise<void> {
    const perSecond = (this.share * (await this.fleetSize())) / this.tickS;
    let due = 0;
    let next = performance.now();
    while (!this.stopping) {
      due += perSecond;
      const now = Date.now();
      for (const r of this.rides.filter((x) => x.endsAt <= now)) {
        this.rides.splice(this.rides.indexOf(r), 1);
        await this.end(r);
      }
      for (; due >= 1; due--) await this.begin();
      next += 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
  }

  private fleetSizeCache: number | undefined;
  private async fleetSize(): Promise<number> {
    this.fleetSizeCache ??= (await this.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM vehicles`)).n;
    return this.fleetSizeCache;
  }

  private async begin(): Promise<void> {
    const zone = this.models[this.rng.int(0, this.models.length - 1)];
    const pool = this.pools.get(zone.id)!;
    const user = this.users.find((u) => !this.busyUsers.has(u.id));
    if (!pool.length || !user) return void this.counts.refused++;
    const vehicle = pool.splice(this.rng.int(0, pool.length - 1), 1)[0];
    try {
      const rental = await startRental(this.ctx, {
        partnerId: user.partnerId,
        userId: user.id,
        vehicleId: vehicle.id,
        source: 'simulator',
        userLicenseValidated: true,
        userStartLocation: { latitude: vehicle.lat, longitude: vehicle.lng },
      });
      this.busyUsers.add(user.id);
      this.rides.push({ rentalId: rental.id, tripId: rental.tripId, userId: user.id, vehicle, endsAt: Date.now() + this.tickS * 1000 });
      this.counts.started++;
    } catch (err) {
      if (!isRentalError(err)) throw err;
      // the user rides elsewhere, or the vehicle is not available: both left out from now on
      if (err.code === 'RentalAlreadyExists') {
        this.busyUsers.add(user.id);
        pool.push(vehicle);
      }
      this.counts.refused++;
    }
  }

  private async end(r: Ride): Promise<void> {
    const [lng, lat] = parkingPlace(this.rng, r.vehicle.zone);
    const battery = Math.max(20, r.vehicle.battery - 1);
    await recordTelemetry(this.ctx.db, {
      deviceId: r.vehicle.id,
      zoneId: r.vehicle.zone.id,
      ts: this.ctx.clock.now(),
      location: { lat, lng },
      batteryPercent: battery,
      tripId: r.tripId,
    });
    try {
      await endRental(this.ctx, { rentalId: r.rentalId, userEndLocation: { latitude: lat, longitude: lng } });
    } catch (err) {
      if (!isRentalError(err)) throw err;
      // parking refused where the model thought it allowed: the operator ends it (no parking check)
      await endRental(this.ctx, { rentalId: r.rentalId, endState: 'ENDED_INTERNALLY' }).catch(() => undefined);
    }
    this.counts.ended++;
    this.busyUsers.delete(r.userId);
    this.pools.get(r.vehicle.zone.id)!.push({ ...r.vehicle, lng, lat, battery });
  }
}
