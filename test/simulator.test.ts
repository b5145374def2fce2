import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { Db } from '../lib/core/db.js';
import { ManualClock } from '../lib/core/clock.js';
import { seedDemo } from '../ops/seed/index.js';
import { simulateHistory, SimulationRepeatedError, type SimSummary } from '../ops/sim/index.js';
import { isValidTransition, isMdsState, TRIP_EVENT_TYPES, type MdsState } from '../lib/domain/fleet/state-machine.js';
import { Prng } from '../ops/sim/prng.js';
import type { AppContext } from '../lib/domain/context.js';
import { useTestContext } from './support/context.js';
import { expectLegalEventHistories } from './support/fleet-fixtures.js';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { sql } from '../lib/core/sql/typed.js';
import { startLiveSimulator } from '../ops/sim/live.js';
import { SIM_PARTNER_NAMES } from '../ops/sim/tenant.js';
import { PEAK_RIDING_SHARE } from '../ops/sim/simulation.js';
import { importZones } from '../ops/admin/zones.js';
import { createKey } from '../ops/admin/credentials.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/core/paths.js';
import { readZoneDocuments, type ZoneDocument } from '../ops/admin/zone-file.js';

const NOW = '2026-03-10T12:00:00Z';
const END = new Date(NOW);
const OPTS = { days: 2, vehicles: 30, seed: 7, end: END };

/** sha256 over the rows of a query, in its order. */
async function digest(db: Db, sql: string): Promise<{ hash: string; rows: number }> {
  const rows = await db.many(sql);
  const h = createHash('sha256');
  for (const r of rows) h.update(JSON.stringify(r) + '\n');
  return { hash: h.digest('hex'), rows: rows.length };
}

const DIGESTS = {
  rentals: `SELECT id, partner_id, user_id, vehicle_id, trip_id, state, started_at, ended_at, total_amount, ST_AsText(vehicle_end_location) e, group_id, ride_type FROM rentals ORDER BY id`,
  trips: `SELECT trip_id, device_id, trip_type, start_time, end_time, distance_m, duration_s, ride_type, user_ride_count, ST_AsText(end_location) e FROM trips ORDER BY trip_id`,
  events: `SELECT event_id, device_id, event_types, vehicle_state, ts, ST_AsText(location) l, battery_percent, trip_ids FROM events ORDER BY event_id`,
  telemetry: `SELECT telemetry_id, device_id, ts, ST_AsText(location) l, battery_percent, trip_id FROM telemetry ORDER BY telemetry_id`,
  vehicles: `SELECT id, code, mds_state, status, locked, battery_percent, ST_AsText(location) l FROM vehicles ORDER BY id`,
};

/**
 * Every ended trip is at least as long as the straight line from its start to its end, and its
 * average speed (the insurance feed's average_ride_speed) is at most its vehicle type's top speed
 * (`timeFactor`: a live simulator run faster than the clock divides every duration by it).
 */
async function expectPlausibleTrips(db: Db, source: string, timeFactor = 1): Promise<number> {
  const trips = await db.many<{ trip_id: string; distance_m: number; duration_s: number; max_speed_kph: number; straight: number }>(
    `SELECT t.trip_id, t.distance_m, t.duration_s, vt.max_speed_kph,
                                      ST_Distance(t.start_location::geography, t.end_location::geography) AS straight
                                 FROM trips t JOIN rentals r ON r.trip_id = t.trip_id JOIN vehicle_types vt ON vt.id = t.vehicle_type_id
                                WHERE r.source = $1`,
    [source],
  );
  for (const x of trips) {
    expect(x.distance_m, `${source} trip ${x.trip_id}: straight line ${x.straight} m`).to.be.at.least(x.straight);
    const kph = (x.distance_m / Math.max(1, x.duration_s)) * 3.6;
    expect(kph / timeFactor, `${source} trip ${x.trip_id}`).to.be.at.most(x.max_speed_kph);
  }
  return trips.length;
}

describe('fleet history simulator', function () {
  this.timeout(120000);
  const t = useTestContext({ now: NOW });
  let summary: SimSummary;

  before(async () => {
    await seedDemo(t.ctx, { vehiclesPerZone: 20 });
    summary = await simulateHistory(t.ctx, OPTS);
  });

  const rows = (sql: string, params: unknown[] = []) => t.ctx.db.many<Record<string, any>>(sql, params);
  const count = async (sql: string, params: unknown[] = []) => (await t.ctx.db.one(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).n as number;

  it('writes rides, events and telemetry for the requested fleet', () => {
    expect(summary.vehicles).to.equal(60);
    expect(summary.vehiclesAdded).to.equal(20);
    expect(summary.rentals).to.be.greaterThan(100);
    expect(summary.trips).to.equal(summary.rentals);
    expect(summary.telemetry).to.be.greaterThan(summary.trips * 3);
    expect(summary.events).to.be.greaterThan(summary.trips * 2);
  });

  it('is deterministic: the same seed on the same state gives identical rows, ids included', async () => {
    const other: TestDatabase = await cloneDatabase();
    const db = new Db(other.url, t.ctx.log);
    try {
      const ctx2: AppContext = { ...t.ctx, db, clock: new ManualClock(NOW) };
      await seedDemo(ctx2, { vehiclesPerZone: 20 });
      const s2 = await simulateHistory(ctx2, OPTS);
      expect(s2).to.deep.equal(summary);
      for (const [name, sql] of Object.entries(DIGESTS)) {
        expect(await digest(db, sql), name).to.deep.equal(await digest(t.ctx.db, sql));
      }
    } finally {
      await db.close();
      await other.drop();
    }
  });

  it('gives every trip exactly one trip_start and one trip_end event carrying its trip id, at its start and end', async () => {
    expect(
      await count(`
      SELECT tr.trip_id FROM trips tr
       WHERE (SELECT count(*) FROM events e WHERE e.device_id = tr.device_id AND e.trip_ids = ARRAY[tr.trip_id] AND e.event_types = '{trip_start}' AND e.ts = tr.start_time) <> 1
          OR (SELECT count(*) FROM events e WHERE e.device_id = tr.device_id AND e.trip_ids = ARRAY[tr.trip_id] AND e.event_types = '{trip_end}' AND e.ts = tr.end_time) <> 1`),
    ).to.equal(0);
    expect(
      await count(`SELECT 1 FROM events e WHERE e.trip_ids IS NOT NULL AND NOT EXISTS (SELECT 1 FROM trips tr WHERE tr.trip_id = ANY(e.trip_ids))`),
    ).to.equal(0);
    expect(
      await count(
        `SELECT 1 FROM rentals r JOIN trips tr ON tr.rental_id = r.id WHERE tr.trip_id <> r.trip_id OR tr.start_time <> r.started_at OR tr.end_time <> r.ended_at OR tr.device_id <> r.vehicle_id`,
      ),
    ).to.equal(0);
  });

  it('moves every vehicle through the MDS state machine, and leaves it in the state of its last event', async () => {
    const events = await rows(`SELECT device_id, event_types, vehicle_state, ts, trip_ids FROM events ORDER BY device_id, ts, event_id`);
    let device = '';
    let state: MdsState = 'removed';
    let lastTs = 0;
    const types = new Set<string>();
    for (const e of events) {
      if (e.device_id !== device) {
        device = e.device_id;
        state = 'removed';
        lastTs = 0;
      }
      expect(e.ts.getTime(), `${device} events strictly ordered`).to.be.greaterThan(lastTs);
      expect(isMdsState(e.vehicle_state)).to.equal(true);
      expect(
        isValidTransition(state, e.event_types, e.vehicle_state),
        `${device} ${state} --${e.event_types}--> ${e.vehicle_state} at ${e.ts.toISOString()}`,
      ).to.equal(true);
      if (e.event_types.some((x: string) => TRIP_EVENT_TYPES.has(x))) expect(e.trip_ids).to.have.length(1);
      for (const x of e.event_types) types.add(x);
      state = e.vehicle_state;
      lastTs = e.ts.getTime();
    }
    for (const x of [
      'provider_drop_off',
      'trip_start',
      'trip_end',
      'battery_low',
      'battery_charged',
      'rebalance_pick_up',
      'off_hours',
      'on_hours',
      'maintenance',
    ]) {
      expect(types.has(x), x).to.equal(true);
    }
    // final vehicle rows agree with their last event
    expect(
      await count(`
      SELECT 1 FROM vehicles v
        JOIN LATERAL (SELECT * FROM events e WHERE e.device_id = v.id ORDER BY ts DESC LIMIT 1) e ON true
       WHERE e.vehicle_state <> v.mds_state OR NOT ST_Equals(e.location, v.location) OR e.battery_percent <> v.battery_percent
          OR v.locked <> (v.mds_state <> 'on_trip')
          OR v.status <> CASE v.mds_state WHEN 'available' THEN 'ready' WHEN 'on_trip' THEN 'riding' WHEN 'reserved' THEN 'booked' ELSE 'unavailable' END`),
    ).to.equal(0);
  });

  it('puts vehicles to sleep in the sleep window of the parking-spot zone and wakes them up', async () => {
    // no rental starts inside 01:00–05:00 Copenhagen time
    expect(
      await count(
        `SELECT 1 FROM rentals WHERE zone_id = 'copenhagen' AND (started_at AT TIME ZONE 'Europe/Copenhagen')::time >= '01:00' AND (started_at AT TIME ZONE 'Europe/Copenhagen')::time < '05:00'`,
      ),
    ).to.equal(0);
    expect(await count(`SELECT 1 FROM events WHERE zone_id = 'copenhagen' AND event_types = '{off_hours}'`)).to.be.greaterThan(10);
    expect(await count(`SELECT 1 FROM events WHERE zone_id = 'berlin' AND event_types && '{off_hours,on_hours}'`)).to.equal(0);
  });

  it('never overlaps rentals of one vehicle or of one user', async () => {
    expect(
      await count(`SELECT 1 FROM rentals a JOIN rentals b ON a.vehicle_id = b.vehicle_id AND a.id < b.id
                         AND tstzrange(a.started_at, a.ended_at) && tstzrange(b.started_at, b.ended_at)`),
    ).to.equal(0);
    expect(
      await count(`SELECT 1 FROM rentals a JOIN rentals b ON a.user_id = b.user_id AND a.id < b.id
                         AND tstzrange(a.started_at, a.ended_at) && tstzrange(b.started_at, b.ended_at)`),
    ).to.equal(0);
    expect(await count(`SELECT 1 FROM rentals WHERE state = 'RUNNING'`)).to.equal(0);
  });

  it('keeps all telemetry inside the operations area, along the rides, with draining battery', async () => {
    expect(
      await count(
        `SELECT 1 FROM telemetry t WHERE NOT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = t.zone_id AND a.area_type = 'operations' AND ST_Covers(a.geom, t.location))`,
      ),
    ).to.equal(0);
    expect(
      await count(
        `SELECT 1 FROM telemetry t JOIN trips tr ON tr.trip_id = t.trip_id WHERE t.ts < tr.start_time OR t.ts > tr.end_time OR t.device_id <> tr.device_id`,
      ),
    ).to.equal(0);
    // at most ~30 s between points of a ride
    expect(
      await count(`SELECT 1 FROM (SELECT ts - lag(ts) OVER (PARTITION BY trip_id ORDER BY ts) AS gap FROM telemetry) g WHERE gap > interval '31 seconds'`),
    ).to.equal(0);
    expect(
      await count(`SELECT 1 FROM (SELECT battery_percent - lag(battery_percent) OVER (PARTITION BY trip_id ORDER BY ts) AS d FROM telemetry) g WHERE d > 0`),
    ).to.equal(0);
    // parking-spot zone rides end inside a parking spot
    expect(
      await count(
        `SELECT 1 FROM trips tr WHERE tr.zone_id = 'copenhagen' AND NOT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = tr.zone_id AND a.area_type = 'parking-spot' AND ST_Covers(a.geom, tr.end_location))`,
      ),
    ).to.equal(0);
  });

  it('prices rides with the committed prices and the one cost rule', async () => {
    expect(
      await count(`SELECT 1 FROM rentals r WHERE r.duration_min <> ceil(extract(epoch FROM r.ended_at - r.started_at) / 60)
                          OR r.total_amount <> CASE WHEN r.state = 'ENDED_WITH_NO_CHARGE' THEN 0 ELSE r.start_price + r.price_per_minute * r.duration_min END
                          OR r.vat_amount <> r.total_amount - round(r.total_amount / (1 + r.vat_rate))
                          OR r.subtotal <> r.total_amount - r.vat_amount`),
    ).to.equal(0);
    expect(
      await count(`SELECT 1 FROM rentals r JOIN pricing p ON p.zone_id = r.zone_id JOIN vehicles v ON v.id = r.vehicle_id AND v.vehicle_type_id = p.vehicle_type_id
                         JOIN zones z ON z.id = r.zone_id
                        WHERE r.start_price <> p.start_price OR r.price_per_minute <> p.price_per_minute OR r.currency <> z.currency OR r.vat_rate <> z.vat_rate`),
    ).to.equal(0);
    const states = await rows(`SELECT state, count(*)::int AS n FROM rentals GROUP BY state ORDER BY state`);
    expect(states.map((s) => s.state)).to.include('ENDED');
  });

  it('takes the trip type from the partner, makes group rides and TOMP bookings for MaaS rides', async () => {
    const types = await rows(
      `SELECT tr.trip_type, p.trip_type AS partner_type FROM trips tr JOIN rentals r ON r.id = tr.rental_id JOIN partners p ON p.id = r.partner_id`,
    );
    expect(types.every((x) => x.trip_type === x.partner_type)).to.equal(true);
    expect(new Set(types.map((x) => x.trip_type))).to.deep.equal(new Set(['rider', 'maas', 'operator']));
    const groups = await rows(
      `SELECT group_id, array_agg(ride_type ORDER BY ride_type) AS types, count(DISTINCT user_id)::int AS users FROM rentals WHERE group_id IS NOT NULL GROUP BY group_id`,
    );
    expect(groups.length).to.be.greaterThan(0);
    for (const g of groups) {
      expect(g.types[0]).to.equal('group-guest');
      expect(g.types.filter((x: string) => x === 'group-host')).to.have.length(1);
      expect(g.users).to.equal(g.types.length);
    }
    expect(await count(`SELECT 1 FROM trips WHERE is_group_ride <> (ride_type <> 'solo')`)).to.equal(0);
    expect(
      await count(`SELECT 1 FROM rentals r JOIN partners p ON p.id = r.partner_id WHERE p.kind = 'maas'
                          AND NOT EXISTS (SELECT 1 FROM tomp_bookings b JOIN tomp_legs l ON l.booking_id = b.id WHERE b.rental_id = r.id AND b.state = 'FINISHED' AND l.state = 'FINISHED')`),
    ).to.equal(0);
    // user_ride_count counts the user's rides
    expect(
      await count(
        `SELECT 1 FROM (SELECT tr.user_ride_count, row_number() OVER (PARTITION BY r.user_id ORDER BY r.started_at) AS n FROM trips tr JOIN rentals r ON r.id = tr.rental_id) x WHERE user_ride_count <> n`,
      ),
    ).to.equal(0);
  });

  it('writes in bounded batches with the same rows as one batch', async () => {
    const other: TestDatabase = await cloneDatabase();
    const db = new Db(other.url, t.ctx.log);
    try {
      const ctx2: AppContext = { ...t.ctx, db, clock: new ManualClock(NOW) };
      await seedDemo(ctx2, { vehiclesPerZone: 20 });
      const s2 = await simulateHistory(ctx2, { ...OPTS, flushChars: 20_000 });
      expect(s2).to.deep.equal(summary);
      for (const [name, sql] of Object.entries(DIGESTS)) {
        expect(await digest(db, sql), name).to.deep.equal(await digest(t.ctx.db, sql));
      }
    } finally {
      await db.close();
      await other.drop();
    }
  });

  it('refuses to simulate a window again with one line saying what to do, writing nothing', async () => {
    const before = await count('SELECT 1 FROM rentals');
    const err = await simulateHistory(t.ctx, OPTS).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).to.be.instanceOf(SimulationRepeatedError);
    expect(err!.message).to.not.contain('\n');
    expect(err!.message).to.match(/already simulated on this database: nothing was written; simulate a later window \(--end\)/);
    expect(await count('SELECT 1 FROM rentals')).to.equal(before);
  });

  it('continues from the current state when simulating the next day on top', async () => {
    const next = await simulateHistory(t.ctx, { days: 1, seed: 8, end: new Date(END.getTime() + 86400000) });
    expect(next.vehicles).to.equal(60);
    expect(next.trips).to.be.greaterThan(20);
    const events = await rows(`SELECT device_id, event_types, vehicle_state FROM events ORDER BY device_id, ts, event_id`);
    let device = '';
    let state: MdsState = 'removed';
    for (const e of events) {
      if (e.device_id !== device) [device, state] = [e.device_id, 'removed'];
      expect(isValidTransition(state, e.event_types, e.vehicle_state)).to.equal(true);
      state = e.vehicle_state;
    }
    expect(
      await count(`SELECT 1 FROM rentals a JOIN rentals b ON a.user_id = b.user_id AND a.id < b.id
                         AND tstzrange(a.started_at, a.ended_at) && tstzrange(b.started_at, b.ended_at)`),
    ).to.equal(0);
  });

  it('every trip of the simulated days is at least as long as the straight line, at a plausible speed', async () => {
    expect(await expectPlausibleTrips(t.ctx.db, (await t.ctx.db.one<{ source: string }>(`SELECT source FROM rentals LIMIT 1`)).source)).to.be.greaterThan(50);
  });

  it('draws valid v4 UUIDs from its PRNG', () => {
    const rng = new Prng(1);
    for (let i = 0; i < 1000; i++) expect(rng.uuid()).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Prng(5).uuid()).to.equal(new Prng(5).uuid());
    expect(new Prng(5).uuid()).to.not.equal(new Prng(6).uuid());
  });
});

describe('fleet history simulator on a database that is not the demo', function () {
  this.timeout(120000);
  const t = useTestContext({ now: NOW });

  it("rides with its own tenant, never a real partner's users; a zone without prices is reported, not silently empty", async () => {
    const docs = readZoneDocuments(readFileSync(join(ROOT, 'docs', 'examples', 'zones.ndjson'), 'utf8'), 'zones.ndjson') as ZoneDocument[];
    // the sample zones start in November; this clock is in March
    for (const d of docs) delete (d.doc as any).features[0].properties.operating_since;
    const bare = structuredClone(docs[0]);
    (bare.doc as any).features[0].properties.id = 'bareville';
    delete (bare.doc as any).features[0].properties.prices;
    delete (bare.doc as any).features[0].properties.vehicle_types;
    const imported = await importZones(t.ctx.db, t.ctx.clock, [...docs, { source: 'bare', doc: bare.doc }]);
    expect(imported.warnings).to.deep.equal([
      'zone bareville has no prices: it lists no vehicles and the simulator puts none into service there until they are set (a zone file\'s "prices", or ops zone prices bareville <type>=<start>,<per minute>)',
    ]);
    const { id: partner } = await t.ctx.db.one(`SELECT id FROM partners WHERE name = $1`, [(await createKey(t.ctx.db, 'Acme Rides', 'partner')).partner]);
    await t.ctx.db.query(`INSERT INTO users (partner_id, email, external_id) SELECT $1, 'u' || i || '@acme.example', 'u' || i FROM generate_series(1, 50) i`, [
      partner,
    ]);

    const s = await simulateHistory(t.ctx, { days: 1, vehicles: 10, seed: 9, end: END });
    expect(s.riders).to.equal('simulator');
    expect(s.zones).to.deep.equal(['bareville', 'dresden', 'halle']);
    expect(s.unpricedZones).to.deep.equal(['bareville']);
    expect(s.vehiclesAdded).to.equal(20);
    expect(s.rentals).to.be.greaterThan(10);
    const riders = await t.ctx.db.many(
      `SELECT DISTINCT p.name FROM rentals r JOIN partners p ON p.id = r.partner_id JOIN users u ON u.id = r.user_id AND u.partner_id = p.id ORDER BY 1`,
    );
    expect(riders.map((r) => r.name)).to.have.members(SIM_PARTNER_NAMES);
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE partner_id = $1`, [partner])).n).to.equal(0);
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM vehicles WHERE zone_id = 'bareville'`)).n).to.equal(0);
    // no credential came with it: the simulator's partners hold no key, and no client was added
    expect(await t.ctx.db.many(`SELECT p.name FROM api_keys k JOIN partners p ON p.id = k.partner_id`)).to.deep.equal([{ name: 'Acme Rides' }]);
    expect(await t.ctx.db.many(`SELECT client_id FROM feed_clients`)).to.deep.equal([]);
  });
});

describe('live simulator', function () {
  this.timeout(120000);
  const t = useTestContext({ now: '2026-03-10T12:00:00Z' });

  it('rides through the rental engine: starts, telemetry, ends, operator events, all legal', async () => {
    await seedDemo(t.ctx, { vehiclesPerZone: 15 });
    const { startLiveSimulator } = await import('../ops/sim/live.js');
    const live = startLiveSimulator(t.ctx, { rate: 10, seed: 3, manual: true });
    for (let i = 0; i < 120; i++) {
      await live.tick();
      t.ctx.clock.advance(3000);
    }
    await live.stop();
    const rentals = await t.ctx.db.many(`SELECT state, source, trip_id FROM rentals`);
    expect(rentals.length).to.be.greaterThan(5);
    expect(rentals.every((r) => r.source === 'simulator')).to.equal(true);
    expect(rentals.filter((r) => r.state !== 'RUNNING').length).to.be.greaterThan(2);
    const { n } = await t.ctx.db.one(`SELECT count(DISTINCT trip_id)::int AS n FROM telemetry WHERE trip_id IS NOT NULL`);
    expect(n).to.be.greaterThan(2);
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM trips`)).n).to.equal(rentals.filter((r) => r.state !== 'RUNNING').length);
    await expectLegalEventHistories(t.ctx.db);
    // the ride's distance runs from the start through the telemetry to the end (migration 000131)
    expect(await expectPlausibleTrips(t.ctx.db, 'simulator', 10)).to.be.greaterThan(2);
    // telemetry of live rides stays inside the operations area
    expect(
      (
        await t.ctx.db.one(
          `SELECT count(*)::int AS n FROM telemetry x WHERE NOT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = x.zone_id AND a.area_type = 'operations' AND ST_Covers(a.geom, x.location))`,
        )
      ).n,
    ).to.equal(0);
  });

  it('stop() resolves even when the timer loop is running', async () => {
    const { startLiveSimulator } = await import('../ops/sim/live.js');
    const live = startLiveSimulator(t.ctx, { rate: 50, seed: 4 });
    await new Promise((r) => setTimeout(r, 300));
    await live.stop();
  });
});

describe('live simulator: its own tenant', function () {
  this.timeout(180000);
  // 17:00 in Berlin and Copenhagen: the evening peak, the most rides
  const t = useTestContext({ now: '2026-03-10T16:00:00Z' });

  it('rents only with its own partners and the users it registered, never a partner’s user', async () => {
    await seedDemo(t.ctx, { vehiclesPerZone: 20 });
    const server = buildApp(t.ctx).callback();
    const api = () => ({ post: (path: string, body: object) => request(server).post(path).set('X-Auth-Token', 'demo-partner-key').send(body) });
    // a newcomer registers a user through the partner API (the demo partner also has its seeded users)
    const reg = await api().post('/v1/user/register', { email: 'newcomer@example.com', externalId: 'newcomer-1' });
    expect(reg.status, JSON.stringify(reg.body)).to.equal(200);
    const newcomer: string = reg.body.data.id;
    expect(newcomer).to.be.a('string');
    const partnerUsers = (await t.ctx.db.one(`SELECT count(*)::int AS n FROM users u JOIN partners p ON p.id = u.partner_id WHERE p.name = 'Demo Partner App'`))
      .n;
    expect(partnerUsers).to.be.greaterThan(1);

    const live = startLiveSimulator(t.ctx, { rate: 10, seed: 11, manual: true });
    let newcomerStarted = false;
    for (let i = 0; i < 150; i++) {
      await live.tick();
      t.ctx.clock.advance(3000);
      if (i === 75) {
        // halfway, with the simulated fleet riding: the newcomer's own start succeeds
        const v = await t.ctx.db.one(`SELECT v.id, ST_X(v.location) AS lng, ST_Y(v.location) AS lat FROM vehicles v
                                        WHERE v.zone_id = 'berlin' AND v.status = 'ready' AND v.mds_state = 'available' AND v.battery_percent >= 40
                                          AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING')
                                        ORDER BY v.code LIMIT 1`);
        const s = await api().post('/v1/rental/start', {
          userId: newcomer,
          vehicleId: v.id,
          userStartLocation: { latitude: v.lat, longitude: v.lng },
          userLicenseValidated: true,
        });
        expect(s.status, JSON.stringify(s.body)).to.equal(200);
        expect(s.body.data[0].attributes.state).to.equal('RUNNING');
        newcomerStarted = true;
      }
    }
    await live.stop();
    expect(newcomerStarted).to.equal(true);

    const sim = await t.ctx.db.many<{
      id: string;
      user_id: string;
      partner_id: string;
      partner: string;
      user_partner: string;
    }>(`SELECT r.id, r.user_id, r.partner_id, p.name AS partner, u.partner_id AS user_partner
                                       FROM rentals r JOIN partners p ON p.id = r.partner_id JOIN users u ON u.id = r.user_id
                                      WHERE r.source = 'simulator'`);
    expect(sim.length).to.be.greaterThan(20);
    // every simulated rental: a simulator partner, a user of that partner
    for (const r of sim) {
      expect(SIM_PARTNER_NAMES, r.id).to.include(r.partner);
      expect(r.user_partner, r.id).to.equal(r.partner_id);
    }
    // with every one of its partners (one per trip type)
    expect(new Set(sim.map((r) => r.partner))).to.deep.equal(new Set(SIM_PARTNER_NAMES));
    // no user of another partner ever rode with the simulator; the newcomer has exactly their own rental
    expect(
      (
        await t.ctx.db.one(
          `SELECT count(*)::int AS n FROM rentals r JOIN users u ON u.id = r.user_id JOIN partners p ON p.id = u.partner_id
                                  WHERE p.name <> ALL($1::text[]) AND r.source <> 'partner'`,
          [SIM_PARTNER_NAMES],
        )
      ).n,
    ).to.equal(0);
    expect((await t.ctx.db.many(`SELECT source FROM rentals WHERE user_id = $1`, [newcomer])).map((r) => r.source)).to.deep.equal(['partner']);
    // the simulator's partners are its own: no key opens them, so nobody else registers users there
    const tenant = await t.ctx.db.many<{ name: string; keys: number; users: number }>(
      `SELECT p.name, (SELECT count(*)::int FROM api_keys k WHERE k.partner_id = p.id) AS keys,
                                               (SELECT count(*)::int FROM users u WHERE u.partner_id = p.id) AS users
                                          FROM partners p WHERE p.name = ANY($1::text[])`,
      [SIM_PARTNER_NAMES],
    );
    expect(tenant).to.have.length(SIM_PARTNER_NAMES.length);
    for (const p of tenant) {
      expect(p.keys, p.name).to.equal(0);
      expect(p.users, p.name).to.be.greaterThan(0);
    }
    // the history simulation (bulk, past days) leaves the simulator's partners alone
    const history = await t.ctx.db.many(sql('SimPartners'), [SIM_PARTNER_NAMES]);
    expect(history.map((p) => p.name)).to.include('Demo Partner App');
    expect(history.map((p) => p.name)).to.not.include.members(SIM_PARTNER_NAMES);
  });

  it('does not ride with a partner that took a simulator partner’s name and holds a key', async () => {
    // someone else's partner of that name (with a key): the simulator leaves it and its users alone
    await t.ctx.db.query(`UPDATE partners SET name = 'Fleet Simulator (old)' WHERE name = 'Fleet Simulator'`);
    const { id } = await t.ctx.db.one<{ id: string }>(
      `INSERT INTO partners (name, kind, trip_type) VALUES ('Fleet Simulator', 'rental', 'rider') RETURNING id`,
    );
    const { createApiKey } = await import('../lib/domain/credentials/api-keys.js');
    await createApiKey(t.ctx.db, id, 'partner', { key: 'pk-test-squatter', label: 'test' });
    await t.ctx.db.query(`INSERT INTO users (partner_id, email, external_id) VALUES ($1, 'a@example.com', 'a')`, [id]);
    const before = (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM rentals WHERE source = 'simulator'`)).n;
    const live = startLiveSimulator(t.ctx, { rate: 10, seed: 12, manual: true });
    for (let i = 0; i < 60; i++) {
      await live.tick();
      t.ctx.clock.advance(3000);
    }
    await live.stop();
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE source = 'simulator'`)).n).to.be.greaterThan(before);
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE partner_id = $1`, [id])).n).to.equal(0);
  });
});

describe('live simulator: riding share', function () {
  this.timeout(300000);
  // 03:00 in Berlin; Copenhagen sleeps 01:00–05:00
  const NIGHT = '2026-03-10T02:00:00Z';
  // 17:00 in both zones: the evening peak
  const PEAK = '2026-03-10T16:00:00Z';
  const t = useTestContext({ now: NIGHT });

  /** Per zone: fleet, vehicles on a ride, vehicles a partner could rent. */
  const sample = async () => {
    const rows = await t.ctx.db.many(`SELECT zone_id, count(*)::int AS fleet, count(*) FILTER (WHERE mds_state = 'on_trip')::int AS riding,
                                             count(*) FILTER (WHERE status = 'ready' AND mds_state = 'available')::int AS ready
                                        FROM vehicles GROUP BY zone_id ORDER BY zone_id`);
    return Object.fromEntries(rows.map((r) => [r.zone_id as string, r as { fleet: number; riding: number; ready: number }]));
  };

  async function drive(ticks: number): Promise<Array<Record<string, { fleet: number; riding: number; ready: number }>>> {
    const live = startLiveSimulator(t.ctx, { rate: 10, seed: 21, manual: true });
    const out = [];
    for (let i = 0; i < ticks; i++) {
      await live.tick();
      out.push(await sample());
      t.ctx.clock.advance(3000);
    }
    await live.stop();
    return out;
  }

  before(async () => {
    await seedDemo(t.ctx, { vehiclesPerZone: 120 });
  });

  it('keeps a few percent of the fleet riding at night', async () => {
    const samples = await drive(80);
    const share = (z: string) => samples.map((s) => s[z].riding / s[z].fleet);
    expect(samples[0].berlin.fleet).to.equal(120);
    // Berlin rides at night, but only a few vehicles at once; sleeping Copenhagen does not ride
    expect(Math.max(...share('berlin'))).to.be.at.most(0.05);
    expect(Math.max(...share('berlin'))).to.be.greaterThan(0);
    expect(Math.max(...share('copenhagen'))).to.equal(0);
    const started = (await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE source = 'simulator' AND zone_id = 'berlin'`)).n;
    expect(started).to.be.greaterThan(0);
  });

  it('rides more at the evening peak, at most 20 % of the fleet, and leaves vehicles to rent', async () => {
    t.ctx.clock.set(PEAK);
    const samples = await drive(150);
    for (const z of ['berlin', 'copenhagen']) {
      const shares = samples.map((s) => s[z].riding / s[z].fleet);
      expect(Math.max(...shares), z).to.be.at.most(0.2);
      expect(Math.max(...shares), z).to.be.at.most(PEAK_RIDING_SHARE + 0.01);
      // past the ramp-up the zone rides near its peak share, far above the night's
      const settled = shares.slice(50);
      const mean = settled.reduce((a, b) => a + b, 0) / settled.length;
      expect(mean, z).to.be.greaterThan(0.08);
      // a newcomer always finds vehicles: most of the fleet stays ready to rent
      expect(Math.min(...samples.map((s) => s[z].ready / s[z].fleet)), z).to.be.greaterThan(0.6);
    }
  });
});
