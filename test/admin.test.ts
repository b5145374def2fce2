import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { squarePolygon } from './support/geometry.js';
import { importZone, importZones, ZoneImportError } from '../ops/admin/zones.js';
import { setPrices } from '../ops/admin/prices.js';
import { importFeedClients } from '../ops/admin/client-import.js';
import { createFeedClient, createKey, revokeKey, rotateKey, rotateFeedClient, revokeFeedClient, AdminError } from '../ops/admin/credentials.js';
import { ApiKeyVerifier } from '../lib/domain/credentials/api-keys.js';
import { verifySecret } from '../lib/domain/credentials/secrets.js';

function zoneFile(over: Record<string, unknown> = {}, areas: any[] = []) {
  return {
    type: 'FeatureCollection',
    features: [
      {
        type: 'Feature',
        geometry: squarePolygon(13.3, 52.4, 0.2),
        properties: {
          kind: 'zone',
          id: 'testville',
          name: 'Testville',
          city: 'Testville',
          country: 'DE',
          timezone: 'Europe/Berlin',
          currency: 'EUR',
          vat_rate: 0.19,
          parking_mode: 'free-floating',
          ...over,
        },
      },
      ...areas,
    ],
  };
}

describe('ops: zone import', () => {
  const t = useTestContext();

  it('creates a zone with its areas and updates it on re-import', async () => {
    const areas = [
      { type: 'Feature', geometry: squarePolygon(13.35, 52.45, 0.01), properties: { area_type: 'no-parking', name: 'Park' } },
      {
        type: 'Feature',
        geometry: squarePolygon(13.36, 52.46, 0.01),
        properties: { area_type: 'slow-zone', name: 'Market', max_speed_kph: 10, vehicle_types: ['scooter'] },
      },
    ];
    const r1 = await importZone(t.ctx.db, t.ctx.clock, zoneFile({}, areas));
    expect(r1).to.deep.equal({ zoneId: 'testville', created: true, areas: 2 });
    const r2 = await importZone(t.ctx.db, t.ctx.clock, zoneFile({ name: 'Testville 2' }, areas.slice(0, 1)));
    expect(r2).to.deep.equal({ zoneId: 'testville', created: false, areas: 1 });
    const z = await t.ctx.db.one("SELECT name, (SELECT count(*) FROM areas WHERE zone_id = 'testville') AS n FROM zones WHERE id = 'testville'");
    expect(z).to.deep.equal({ name: 'Testville 2', n: 1 });
  });

  it('names every bad feature and changes nothing', async () => {
    const bad = zoneFile({ id: 'bad zone!' }, [
      { type: 'Feature', geometry: squarePolygon(13.35, 52.45, 0.01), properties: { area_type: 'parking-spot', name: 'Spot A' } },
      {
        type: 'Feature',
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [0, 0],
              [1, 1],
              [1, 0],
              [0, 1],
              [0, 0],
            ],
          ],
        },
        properties: { area_type: 'no-riding', name: 'Bowtie' },
      },
      { type: 'Feature', geometry: squarePolygon(13.37, 52.47, 0.01), properties: { area_type: 'teleport', name: 'Nowhere' } },
    ]);
    try {
      await importZone(t.ctx.db, t.ctx.clock, bad);
      expect.fail('should refuse');
    } catch (err) {
      expect(err).to.be.instanceOf(ZoneImportError);
      const text = (err as Error).message;
      expect(text).to.match(/feature #0 "Testville"/);
      expect(text).to.match(/"Spot A".*capacity/);
      expect(text).to.match(/"Spot A": parking-spot area in a free-floating zone/);
      expect(text).to.match(/"Bowtie": invalid geometry/);
      expect(text).to.match(/"Nowhere"/);
    }
    expect((await t.ctx.db.one("SELECT count(*) AS n FROM zones WHERE id = 'bad zone!'")).n).to.equal(0);
  });
});

const SCOOTER = {
  id: 'scooter',
  form_factor: 'scooter',
  propulsion_type: 'electric',
  name: 'E-Scooter',
  make: 'Voltra',
  model: 'S2 Pro',
  max_range_meters: 45000,
  max_speed_kph: 20,
};
const ops = { zone: (id: string, over: Record<string, unknown> = {}) => ({ source: `${id}.json`, doc: zoneFile({ id, ...over }) }) };
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => expect.fail('should refuse'),
    (e: Error) => e.message,
  );

describe('ops: zone import with prices, vehicle types and operating_since', () => {
  const t = useTestContext({ now: '2026-11-20T10:30:00Z' });

  it('writes a zone with its vehicle types and prices; a zone without prices imports with a warning', async () => {
    const r = await importZones(t.ctx.db, t.ctx.clock, [
      ops.zone('priced', { prices: { scooter: { start_price: 100, price_per_minute: 25 } }, vehicle_types: [SCOOTER] }),
      ops.zone('unpriced'),
    ]);
    expect(r.zones.map((z) => [z.zoneId, z.created, z.prices])).to.deep.equal([
      ['priced', true, ['scooter']],
      ['unpriced', true, null],
    ]);
    expect(r.vehicleTypes).to.deep.equal({ created: ['scooter'], updated: [], unchanged: [] });
    expect(r.warnings).to.have.length(1);
    expect(r.warnings[0]).to.match(/^zone unpriced has no prices: it lists no vehicles/);
    // the type's omitted fields take the table's defaults
    expect(await t.ctx.db.one(`SELECT color, rated_power_w, wheel_count, rider_capacity FROM vehicle_types WHERE id = 'scooter'`)).to.deep.equal({
      color: 'black',
      rated_power_w: 250,
      wheel_count: 2,
      rider_capacity: 1,
    });
    expect(await t.ctx.db.many(`SELECT zone_id, vehicle_type_id, start_price, price_per_minute FROM pricing ORDER BY 1`)).to.deep.equal([
      { zone_id: 'priced', vehicle_type_id: 'scooter', start_price: 100, price_per_minute: 25 },
    ]);
    // the same declaration again changes nothing; another value updates the type for every zone
    const again = await importZones(t.ctx.db, t.ctx.clock, [
      ops.zone('priced', { prices: { scooter: { start_price: 100, price_per_minute: 25 } }, vehicle_types: [SCOOTER] }),
    ]);
    expect(again.vehicleTypes).to.deep.equal({ created: [], updated: [], unchanged: ['scooter'] });
    const teal = await importZones(t.ctx.db, t.ctx.clock, [ops.zone('priced', { vehicle_types: [{ ...SCOOTER, color: 'teal' }] })]);
    expect(teal.vehicleTypes.updated).to.deep.equal(['scooter']);
    // a file without prices leaves the zone's prices as they are
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM pricing WHERE zone_id = 'priced'`)).n).to.equal(1);
  });

  it('names each price or vehicle type problem and writes nothing', async () => {
    const text = await refusal(
      importZones(t.ctx.db, t.ctx.clock, [
        ops.zone('p1', { prices: { cargo: { start_price: 100, price_per_minute: 25 } } }),
        ops.zone('p2', { prices: { scooter: { start_price: -1, price_per_minute: 25 }, 'Bad Type': { start_price: 1, price_per_minute: 1 } } }),
        ops.zone('p3', { vehicle_types: [{ ...SCOOTER, id: 'moped', form_factor: 'moped' }] }),
        ops.zone('p4', { vehicle_types: [{ ...SCOOTER, max_speed_kph: 25 }] }),
        ops.zone('p5', { vehicle_types: [SCOOTER] }),
        ops.zone('p1'),
      ]),
    );
    expect(text).to.match(
      /p1\.json \(p1\): prices name vehicle type cargo that no vehicle_types entry declares and the database does not hold \(known: .*scooter/,
    );
    expect(text).to.match(/p2\.json \(p2\): feature #0 "Testville": .*\/prices\/scooter\/start_price must be >= 0/);
    expect(text).to.match(/p2\.json \(p2\): .*\/prices must NOT have additional properties \(Bad Type\)/);
    expect(text).to.match(/p5\.json \(p5\): vehicle type scooter is declared twice with different values/);
    expect(text).to.match(/p3\.json \(p3\): .*\/vehicle_types\/0\/form_factor must be equal to one of the allowed values: "scooter", "bicycle"/);
    expect(text).to.match(/p1\.json \(p1\): zone p1 appears more than once in the input/);
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM zones WHERE id LIKE 'p_'`)).n).to.equal(0);
  });

  it('refuses prices that would leave vehicles of the zone without a price; ops zone prices sets and removes', async () => {
    await importZones(t.ctx.db, t.ctx.clock, [ops.zone('fleetville', { prices: { scooter: { start_price: 100, price_per_minute: 25 } } })]);
    await t.ctx.db.query(`INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
                          VALUES ('bicycle', 'bicycle', 'electric_assist', 'E-Bike', 'Voltra', 'B1', 70000, 25)`);
    await t.ctx.db.query(`INSERT INTO vehicles (code, zone_id, vehicle_type_id, status, mds_state, battery_percent, location, license_plate, license_plate_id)
                          VALUES ('SCO1', 'fleetville', 'scooter', 'ready', 'available', 90, ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326), '123ABC', 'p-1')`);
    const text = await refusal(
      importZones(t.ctx.db, t.ctx.clock, [ops.zone('fleetville', { prices: { bicycle: { start_price: 100, price_per_minute: 19 } } })]),
    );
    expect(text).to.contain(
      'zone fleetville: the change would leave vehicles without a price (1 of type scooter), and those are neither listed nor rentable: scooter needs a price while they are in the zone',
    );
    expect(await t.ctx.db.many(`SELECT vehicle_type_id FROM pricing WHERE zone_id = 'fleetville'`)).to.deep.equal([{ vehicle_type_id: 'scooter' }]);
    expect(await refusal(setPrices(t.ctx.db, t.ctx.clock, 'fleetville', [], ['scooter']))).to.match(
      /^zone fleetville: the change would leave vehicles without a price/,
    );
    const set = await setPrices(
      t.ctx.db,
      t.ctx.clock,
      'fleetville',
      [
        { vehicle_type_id: 'bicycle', start_price: 100, price_per_minute: 19 },
        { vehicle_type_id: 'scooter', start_price: 120, price_per_minute: 20 },
      ],
      [],
    );
    expect(set.prices.map((p) => [p.vehicle_type_id, p.start_price, p.price_per_minute])).to.deep.equal([
      ['bicycle', 100, 19],
      ['scooter', 120, 20],
    ]);
    expect((await setPrices(t.ctx.db, t.ctx.clock, 'fleetville', [], ['bicycle'])).prices.map((p) => p.vehicle_type_id)).to.deep.equal(['scooter']);
    // a vehicle whose type lost its price before (by hand): the import says so
    await t.ctx.db.query(`DELETE FROM pricing WHERE zone_id = 'fleetville'`);
    expect((await importZones(t.ctx.db, t.ctx.clock, [ops.zone('fleetville')])).warnings).to.deep.equal([
      'zone fleetville has vehicles without a price (1 of type scooter): they are neither listed nor rentable until priced (ops zone prices fleetville scooter=<start>,<per minute>)',
    ]);
    expect(await refusal(setPrices(t.ctx.db, t.ctx.clock, 'atlantis', [{ vehicle_type_id: 'scooter', start_price: 1, price_per_minute: 1 }], []))).to.match(
      /^unknown zone atlantis; known zones: /,
    );
  });

  it('operating_since: a new zone starts then; an existing one moves earlier (its catch-up marks too), never later or into the future', async () => {
    const r = await importZones(t.ctx.db, t.ctx.clock, [ops.zone('historic', { operating_since: '2026-11-01T00' })]);
    expect(r.zones[0]?.operatingSince).to.deep.equal(new Date('2026-11-01T00:00:00Z'));
    expect((await t.ctx.db.one(`SELECT created_at FROM zones WHERE id = 'historic'`)).created_at).to.deep.equal(new Date('2026-11-01T00:00:00Z'));
    // the publisher confirmed everything up to the 15th; the zone turns out to have run since October
    await t.ctx.db.query(`INSERT INTO feed_catchup (zone_id, feed, version, complete_before) VALUES ('historic', 'mds_trips', '2.0', '2026-11-15T00:00')`);
    const moved = await importZones(t.ctx.db, t.ctx.clock, [ops.zone('historic', { operating_since: '2026-10-01T00' })]);
    expect(moved.zones[0]).to.include({ created: false });
    expect(moved.zones[0]?.operatingSince).to.deep.equal(new Date('2026-10-01T00:00:00Z'));
    expect((await t.ctx.db.one(`SELECT created_at FROM zones WHERE id = 'historic'`)).created_at).to.deep.equal(new Date('2026-10-01T00:00:00Z'));
    expect((await t.ctx.db.one(`SELECT to_char(complete_before, 'YYYY-MM-DD"T"HH24') AS h FROM feed_catchup WHERE zone_id = 'historic'`)).h).to.equal(
      '2026-10-01T00',
    );
    // the same or no operating_since: no move
    expect((await importZones(t.ctx.db, t.ctx.clock, [ops.zone('historic')])).zones[0]?.operatingSince).to.equal(null);
    expect(await refusal(importZones(t.ctx.db, t.ctx.clock, [ops.zone('historic', { operating_since: '2026-10-02T00' })]))).to.contain(
      "operating_since 2026-10-02T00 is after zone historic's first operating hour 2026-10-01T00: a zone's published history is not taken back",
    );
    expect(await refusal(importZones(t.ctx.db, t.ctx.clock, [ops.zone('future', { operating_since: '2026-11-20T11' })]))).to.contain(
      'operating_since 2026-11-20T11 is after the current hour 2026-11-20T10',
    );
    expect(await refusal(importZones(t.ctx.db, t.ctx.clock, [ops.zone('future', { operating_since: '2026-02-30T00' })]))).to.contain(
      'operating_since 2026-02-30T00 is not a real UTC hour',
    );
    expect((await t.ctx.db.one(`SELECT created_at FROM zones WHERE id = 'historic'`)).created_at).to.deep.equal(new Date('2026-10-01T00:00:00Z'));
  });
});

describe('ops: feed clients in one call', () => {
  const t = useTestContext();

  it('creates every client in one transaction with its secret shown once; one problem refuses them all', async () => {
    await importZone(t.ctx.db, t.ctx.clock, zoneFile());
    const entries = Array.from({ length: 30 }, (_, i) => ({
      source: `#${i}`,
      entry: { client_id: `city-${i}`, role: i % 2 ? 'city' : 'gbfs', ...(i % 3 ? { zones: ['testville'] } : {}), label: `client ${i}` },
    }));
    const made = await importFeedClients(t.ctx.db, entries);
    expect(made).to.have.length(30);
    const rows = await t.ctx.db.many<{ client_id: string; role: string; zones: string[] | null; label: string; secret_hash: string }>(
      `SELECT client_id, role, zones, label, secret_hash FROM feed_clients ORDER BY client_id`,
    );
    expect(rows).to.have.length(30);
    const row = rows.find((r) => r.client_id === 'city-1')!;
    expect([row.role, row.zones, row.label]).to.deep.equal(['city', ['testville'], 'client 1']);
    expect(rows.find((r) => r.client_id === 'city-3')!.zones).to.deep.equal(null);
    expect(await verifySecret(made.find((c) => c.client_id === 'city-1')!.secret, row.secret_hash)).to.equal(true);
    expect(new Set(made.map((c) => c.secret)).size).to.equal(30);

    const bad = await refusal(
      importFeedClients(t.ctx.db, [
        { source: 'a', entry: { client_id: 'new-one', role: 'city' } },
        { source: 'b', entry: { client_id: 'new-one', role: 'city' } },
        { source: 'c', entry: { client_id: 'x', role: 'mayor' } },
        { source: 'd', entry: { client_id: 'y', role: 'city', zones: ['atlantis'] } },
      ]),
    );
    expect(bad).to.match(/^clients file has 3 problem\(s\):/);
    expect(bad).to.contain('b: client new-one appears more than once in the input');
    expect(bad).to.contain('c: /role must be equal to one of the allowed values: "city", "insurer", "gbfs", "data"');
    expect(bad).to.contain('d: unknown zone atlantis');
    expect(bad).to.contain('known zones: testville');
    const existing = await refusal(
      importFeedClients(t.ctx.db, [
        { source: 'a', entry: { client_id: 'new-one', role: 'city' } },
        { source: 'b', entry: { client_id: 'city-7', role: 'city' } },
      ]),
    );
    expect(existing).to.equal('nothing created: client city-7 exists already (rotate a secret with ops clients rotate)');
    expect(await t.ctx.db.maybeOne(`SELECT 1 FROM feed_clients WHERE client_id = 'new-one'`)).to.equal(undefined);
  });
});

describe('ops: credentials', () => {
  const t = useTestContext();

  it('creates, rotates and revokes API keys; secrets are stored only as hashes', async () => {
    const k = await createKey(t.ctx.db, 'Acme Rides', 'partner', 'test');
    const verifier = new ApiKeyVerifier(t.ctx.db, t.ctx.clock, { cacheTtlMs: 0, negativeTtlMs: 0 });
    expect((await verifier.verify(k.key, 'partner'))?.partnerName).to.equal('Acme Rides');
    const stored = await t.ctx.db.many('SELECT key_hash FROM api_keys');
    expect(JSON.stringify(stored)).not.to.contain(k.key);
    const r = await rotateKey(t.ctx.db, t.ctx.clock, k.id);
    expect(await verifier.verify(k.key, 'partner')).to.equal(undefined);
    expect((await verifier.verify(r.key, 'partner'))?.partnerName).to.equal('Acme Rides');
    await revokeKey(t.ctx.db, t.ctx.clock, r.id);
    expect(await verifier.verify(r.key, 'partner')).to.equal(undefined);
    try {
      await revokeKey(t.ctx.db, t.ctx.clock, r.id);
      expect.fail('revoking twice should say so');
    } catch (err) {
      expect(err).to.be.instanceOf(AdminError);
    }
  });

  it('creates, rotates and revokes feed clients', async () => {
    await importZone(t.ctx.db, t.ctx.clock, zoneFile());
    const c = await createFeedClient(t.ctx.db, 'city-of-test', 'city', ['testville']);
    const row = await t.ctx.db.one<{ secret_hash: string; revoked_at: Date | null }>(
      "SELECT secret_hash, revoked_at FROM feed_clients WHERE client_id = 'city-of-test'",
    );
    expect(row.secret_hash).not.to.contain(c.secret);
    expect(await verifySecret(c.secret, row.secret_hash)).to.equal(true);
    const r = await rotateFeedClient(t.ctx.db, 'city-of-test');
    const row2 = await t.ctx.db.one<{ secret_hash: string }>("SELECT secret_hash FROM feed_clients WHERE client_id = 'city-of-test'");
    expect(await verifySecret(c.secret, row2.secret_hash)).to.equal(false);
    expect(await verifySecret(r.secret, row2.secret_hash)).to.equal(true);
    await revokeFeedClient(t.ctx.db, t.ctx.clock, 'city-of-test');
    expect((await t.ctx.db.one("SELECT revoked_at FROM feed_clients WHERE client_id = 'city-of-test'")).revoked_at).to.be.instanceOf(Date);
    try {
      await createFeedClient(t.ctx.db, 'x', 'mayor', null);
      expect.fail('unknown role');
    } catch (err) {
      expect(err).to.be.instanceOf(AdminError);
    }
  });

  it('refuses a feed client limited to an unknown zone, listing the known zones', async () => {
    const known = (await t.ctx.db.many<{ id: string }>('SELECT id FROM zones ORDER BY id')).map((z) => z.id);
    try {
      await createFeedClient(t.ctx.db, 'city-of-atlantis', 'city', ['atlantis']);
      expect.fail('unknown zone');
    } catch (err) {
      expect(err).to.be.instanceOf(AdminError);
      expect((err as Error).message).to.equal(`unknown zone atlantis; known zones: ${known.join(', ') || 'none'}`);
    }
    expect(await t.ctx.db.maybeOne("SELECT 1 FROM feed_clients WHERE client_id = 'city-of-atlantis'")).to.equal(undefined);
  });
});
