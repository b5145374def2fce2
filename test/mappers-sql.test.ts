/**
 * Records built in Postgres from their declarations (lib/feeds/mds/shape.ts) against the JS mappers
 * of the same declarations: the realtime vehicle lists must be, byte for byte, what
 * JSON.stringify(mapper(row)) writes for the same rows — awkward text, missing values, synthetic
 * telemetry and numbers that Postgres and JavaScript print differently included.
 */
import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { bulkVehicles, feedEvent, feedTelemetry, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { MDS_TELEMETRY, MDS_TRIP, toMdsVehicle, toMdsVehicleStatus } from '../lib/feeds/mds/records.js';
import { type TelemetryRow, type VehicleRow, type VehicleStatusRow } from '../lib/feeds/mds/rows.js';
import { streamVehicleRecords, streamVehicleStatus, streamVehicleStatusRecords, streamVehicles } from '../lib/feeds/mds/sources.js';
import { mapperOf, recordSql, shape } from '../lib/feeds/mds/shape.js';
import { compile } from '../lib/core/validate.js';
import { MdsVehicleSchema, MdsVehicleStatusSchema } from '../schemas/mds/v2.js';

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const NOW = new Date('2026-11-21T12:00:00Z');
const ODD = 'Ac"me \\ / \n\t\u0001\u001f é ß 😀 </script>';

describe('records built in Postgres', () => {
  const t = useTestContext({ now: NOW });
  let zone: string;
  const v: Record<string, { id: string; code: string }> = {};

  before(async () => {
    const db = t.ctx.db;
    zone = await feedZone(db);
    await db.query(
      `INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
       VALUES ('sql-odd', 'bicycle', 'human', 'Odd', $1, $2, 1000, 15)`,
      [ODD, 'M"1\u2028'],
    );
    v.plain = await feedVehicle(db, zone);
    v.odd = await feedVehicle(db, zone, { type: 'sql-odd', lat: 1e-5, lng: -0.0000123 });
    v.small = await feedVehicle(db, zone, { lat: 0.0000009, lng: 1e-300 });
    v.silent = await feedVehicle(db, zone); // no event: no status
    v.noTelemetry = await feedVehicle(db, zone, { lat: 52.50050000000001, lng: 13.4 });
    v.twoTrips = await feedVehicle(db, zone);
    v.holey = await feedVehicle(db, zone);
    await feedEvent(db, {
      deviceId: v.plain.id,
      zoneId: zone,
      ts: new Date('2026-11-21T11:00:00Z'),
      eventTypes: ['trip_end'],
      state: 'available',
      tripIds: ['5fe6481a-66b2-4959-9076-25b31aa82ed8'],
    });
    await feedTelemetry(db, { deviceId: v.plain.id, zoneId: zone, ts: new Date('2026-11-21T11:01:00Z'), tripId: null });
    await feedEvent(db, {
      deviceId: v.odd.id,
      zoneId: zone,
      ts: new Date('2026-11-21T11:00:00Z'),
      eventTypes: ['battery_low', ODD],
      state: 'non_operational',
      battery: null,
      tripIds: [],
    });
    await feedTelemetry(db, { deviceId: v.odd.id, zoneId: zone, ts: new Date('2026-11-21T11:02:00Z'), tripId: '1411de51-7fe7-4cc9-b22a-4bc2fb2a7d07' });
    await feedEvent(db, {
      deviceId: v.small.id,
      zoneId: zone,
      ts: new Date('2026-11-21T10:59:59.999Z'),
      eventTypes: ['provider_drop_off'],
      state: 'available',
    });
    await db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent)
       VALUES ($1, $2, '{comms_lost}', 'non_contactable', $3, ST_SetSRID(ST_MakePoint('-0'::float8, 1e-7), 4326), 3)`,
      [v.noTelemetry.id, zone, new Date('2026-11-21T11:30:00Z')],
    );
    // trip ids (uuid[], printed without to_json): two of them, upper-case input; one with a null element
    await db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids)
       VALUES ($1, $3, '{trip_end}', 'available', $4, ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326), 40, '{5FE6481A-66B2-4959-9076-25B31AA82ED8,1411de51-7fe7-4cc9-b22a-4bc2fb2a7d07}'),
              ($2, $3, '{trip_end}', 'available', $4, ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326), 40, ARRAY['1411de51-7fe7-4cc9-b22a-4bc2fb2a7d07'::uuid, NULL])`,
      [v.twoTrips.id, v.holey.id, zone, new Date('2026-11-21T11:10:00Z')],
    );
    await db.query(
      `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent) VALUES ($1, $2, $3, ST_SetSRID(ST_MakePoint(0.00001, 1.5e-5), 4326), NULL)`,
      [v.small.id, zone, new Date('2026-11-21T11:03:00Z')],
    );
  });

  it('vehicle status: the JSON text is JSON.stringify of the mapper, byte for byte, in the same order', async () => {
    const { db, config } = t.ctx;
    const rows = await all(streamVehicleStatus(db, zone, NOW));
    expect(rows.map((r) => r.device_id).sort()).to.deep.equal([v.plain.id, v.odd.id, v.small.id, v.noTelemetry.id, v.twoTrips.id, v.holey.id].sort());
    const runs = await all(streamVehicleStatusRecords(db, config, zone, NOW));
    expect(runs.join(',')).to.equal(rows.map((r) => JSON.stringify(toMdsVehicleStatus(r, config))).join(','));
    // what the mapper leaves out and keeps (the SQL does the same, by the equality above)
    const odd = toMdsVehicleStatus(
      rows.find((r) => r.device_id === v.odd.id)!,
      config,
    );
    expect(odd.last_event).to.not.have.property('battery_percent');
    expect(odd.last_event.event_types).to.deep.equal(['battery_low', ODD]);
    expect(odd.last_telemetry.trip_ids).to.deep.equal(['1411de51-7fe7-4cc9-b22a-4bc2fb2a7d07']);
    // trip ids: none (null in the row) is [], two are both, a null element stays null
    const tripIds = (id: string) =>
      toMdsVehicleStatus(
        rows.find((r) => r.device_id === id)!,
        config,
      ).last_event.trip_ids;
    expect(tripIds(v.small.id)).to.deep.equal([]);
    expect(tripIds(v.odd.id)).to.deep.equal([]);
    expect(tripIds(v.twoTrips.id)).to.deep.equal(['5fe6481a-66b2-4959-9076-25b31aa82ed8', '1411de51-7fe7-4cc9-b22a-4bc2fb2a7d07']);
    expect(tripIds(v.holey.id)).to.deep.equal(['1411de51-7fe7-4cc9-b22a-4bc2fb2a7d07', null]);
    const one = await all(streamVehicleStatusRecords(db, config, zone, NOW, v.odd.id));
    expect(one).to.deep.equal([JSON.stringify(odd)]);
    expect(await all(streamVehicleStatusRecords(db, config, zone, NOW, v.silent.id))).to.deep.equal([]);
  });

  it('vehicles: the JSON text is JSON.stringify of the mapper, byte for byte, in the same order', async () => {
    const { db, config } = t.ctx;
    const rows = await all(streamVehicles(db, zone));
    expect(rows).to.have.length(7);
    const runs = await all(streamVehicleRecords(db, config, zone));
    expect(runs.join(',')).to.equal(rows.map((r) => JSON.stringify(toMdsVehicle(r, config))).join(','));
    const records = JSON.parse(`[${runs.join(',')}]`);
    expect(records.find((x: any) => x.device_id === v.odd.id).vehicle_attributes.make).to.equal(ODD);
    const valid = compile(MdsVehicleSchema);
    for (const r of records) expect(valid(r), JSON.stringify(valid.errors)).to.equal(true);
  });

  it('a large zone comes in several runs of whole records', async () => {
    const { db, config } = t.ctx;
    const big = await feedZone(db);
    await bulkVehicles(db, big, 300, 'S');
    await db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent)
       SELECT id, zone_id, '{service_start}', 'available', $2, location, battery_percent FROM vehicles WHERE zone_id = $1`,
      [big, new Date('2026-11-21T11:00:00Z')],
    );
    const runs = await all(streamVehicleStatusRecords(db, config, big, NOW));
    expect(runs.length).to.be.greaterThan(1);
    for (const run of runs) expect(() => JSON.parse(`[${run}]`)).to.not.throw();
    const rows = await all(streamVehicleStatus(db, big, NOW));
    expect(runs.join(',')).to.equal(rows.map((r) => JSON.stringify(toMdsVehicleStatus(r, config))).join(','));
    // the records built in Postgres are what their schema says (the odd rows above are not: their event type is made up)
    const valid = compile(MdsVehicleStatusSchema);
    for (const r of JSON.parse(`[${runs.join(',')}]`)) expect(valid(r), JSON.stringify(valid.errors)).to.equal(true);
  });

  it('numbers print as JavaScript prints them', async () => {
    const xs = [
      0,
      -0,
      1,
      -1,
      52.52,
      13.405,
      52.50050000000001,
      0.1 + 0.2,
      180,
      -90,
      1e-4,
      9.999e-5,
      0.0001234,
      1e-5,
      -1e-5,
      1.5e-5,
      1e-6,
      -1e-6,
      9.99e-7,
      1e-7,
      -1.234e-8,
      5e-324,
      1e-100,
      999999999999999.9,
      1e15,
      1.5e15,
      1e20,
      123456789012345680000,
      1e21,
      1.5e300,
      1.7976931348623157e308,
      NaN,
      Infinity,
      -Infinity,
    ];
    // and a spread of magnitudes with every digit count
    let seed = 7;
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let e = -12; e <= 23; e++) for (let i = 0; i < 8; i++) xs.push((rnd() < 0.5 ? -1 : 1) * rnd() * 10 ** e);
    const s = shape<{ x: number; n: number }>()(({ int, float }) => ({ n: int('n'), x: float('x') }));
    const rows = await t.ctx.db.many<{ record: string }>(
      `SELECT ${recordSql(s, 'r', 'NULL')} AS record FROM unnest($1::float8[]) WITH ORDINALITY AS r (x, n) ORDER BY r.n`,
      [xs.map((x) => (Number.isNaN(x) ? 'NaN' : x === Infinity ? 'Infinity' : x === -Infinity ? '-Infinity' : Object.is(x, -0) ? '-0' : String(x)))],
    );
    const js = mapperOf<{ x: number; n: number }, object>(s);
    expect(rows.map((r) => r.record)).to.deep.equal(xs.map((x, i) => JSON.stringify(js({ x, n: i + 1 }, { providerId: '', providerName: '' }))));
  });

  it('a shape starts with a member every record has', () => {
    expect(() => shape<{ a: number }>()(({ int, optional }) => ({ a: optional(int('a')) }))).to.throw(/first member/);
    expect(() => shape<{ a: number }>()(({ constant, optional }) => ({ b: constant(1), a: optional(constant(2)) }))).to.throw(/column member/);
  });

  it('a shape takes only rows that have what it reads (the compiler refuses each line marked @ts-expect-error)', () => {
    type NullableTime = Omit<TelemetryRow, 'telemetry_ms'> & { telemetry_ms: number | null };
    // @ts-expect-error a required timestamp from a column that may be null (a missing `-- not null:`)
    mapperOf<NullableTime, object>(MDS_TELEMETRY);
    // @ts-expect-error a trip reads columns a vehicle status row does not have
    mapperOf<VehicleStatusRow, object>(MDS_TRIP);
    // @ts-expect-error an integer member on a text column
    shape<VehicleRow>()(({ int }) => ({ a: int('vehicle_code') }));
    // @ts-expect-error a column the row does not have
    shape<VehicleRow>()(({ uuid }) => ({ a: uuid('vehicle_id') }));
    // and a column that may be null is fine where the member says what null becomes
    const map = mapperOf<NullableTime, object>(
      shape<NullableTime>()(({ uuid, int, optional }) => ({ id: uuid('telemetry_id'), t: optional(int('telemetry_ms')) })),
    );
    expect(map({ telemetry_id: 'x', telemetry_ms: null } as NullableTime, { providerId: '', providerName: '' })).to.deep.equal({ id: 'x' });
  });
});
