import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { floorHour, formatHour } from '../lib/feeds/hours.js';
import { backfill } from '../publisher/ops.js';
import { DemoSeedRefused, seedDemo, seedDemoWhereDemo } from '../ops/seed/index.js';
import { createFeedClient, createKey } from '../ops/admin/credentials.js';
import { ApiKeyVerifier } from '../lib/domain/credentials/api-keys.js';
import { authenticateFeedClient } from '../lib/feeds/clients.js';
import { vehicleCode } from '../ops/sim/fleet.js';
import { useTestContext } from './support/context.js';

describe('demo seed', () => {
  const t = useTestContext({ now: '2026-03-10T12:00:00Z' });
  let first: Awaited<ReturnType<typeof seedDemo>>;

  before(async function () {
    this.timeout(60000);
    first = await seedDemo(t.ctx, { vehiclesPerZone: 40 });
  });

  const count = async (sql: string, params: unknown[] = []) => (await t.ctx.db.one(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).n as number;

  it('creates two zones in different cities, one free-floating and one with parking spots', async () => {
    expect(first.created).to.equal(true);
    const zones = await t.ctx.db.many(
      `SELECT id, city, country, timezone, currency, vat_rate, parking_mode, licence_verification_required, sleep_windows FROM zones ORDER BY id`,
    );
    expect(zones.map((z) => [z.id, z.city, z.country, z.currency, z.vat_rate, z.parking_mode])).to.deep.equal([
      ['berlin', 'Berlin', 'DE', 'EUR', 0.19, 'free-floating'],
      ['copenhagen', 'Copenhagen', 'DK', 'DKK', 0.25, 'parking-spot'],
    ]);
    expect(zones[1].licence_verification_required).to.equal(true);
    expect(zones[1].sleep_windows).to.deep.equal([{ start: '01:00', end: '05:00' }]);
  });

  it('has valid area geometry: every area inside its zone, convex operations areas, the area types each zone needs', async () => {
    expect(await count(`SELECT 1 FROM areas a JOIN zones z ON z.id = a.zone_id WHERE NOT ST_Covers(z.boundary, a.geom) OR NOT ST_IsValid(a.geom)`)).to.equal(0);
    expect(await count(`SELECT 1 FROM areas WHERE area_type = 'operations' AND NOT ST_Equals(geom, ST_Multi(ST_ConvexHull(geom)))`)).to.equal(0);
    const types = await t.ctx.db.many(`SELECT zone_id, array_agg(DISTINCT area_type ORDER BY area_type) AS types FROM areas GROUP BY zone_id ORDER BY zone_id`);
    expect(types[0].types).to.deep.equal(['free-floating', 'incentive', 'no-parking', 'no-riding', 'operations', 'slow-zone']);
    expect(types[1].types).to.deep.equal(['incentive', 'no-riding', 'operations', 'parking-spot', 'slow-zone']);
    expect(await count(`SELECT 1 FROM areas WHERE area_type = 'slow-zone' AND max_speed_kph IS NULL`)).to.equal(0);
    expect(await count(`SELECT 1 FROM areas WHERE area_type = 'parking-spot' AND capacity > 0`)).to.be.greaterThan(5);
    // real city centres
    const c = await t.ctx.db.many(
      `SELECT zone_id, ST_X(ST_Centroid(geom)) AS lng, ST_Y(ST_Centroid(geom)) AS lat FROM areas WHERE area_type = 'operations' ORDER BY zone_id`,
    );
    expect(c[0].lat).to.be.closeTo(52.52, 0.05);
    expect(c[0].lng).to.be.closeTo(13.405, 0.05);
    expect(c[1].lat).to.be.closeTo(55.676, 0.05);
    expect(c[1].lng).to.be.closeTo(12.568, 0.05);
  });

  it('prices every vehicle type in every zone', async () => {
    const rows = await t.ctx.db.many<{ zone_id: string; vehicle_type_id: string; form_factor: string; propulsion_type: string }>(
      `SELECT p.zone_id, p.vehicle_type_id, vt.form_factor, vt.propulsion_type FROM pricing p JOIN vehicle_types vt ON vt.id = p.vehicle_type_id ORDER BY 1, 2`,
    );
    expect(rows.map((r) => `${r.zone_id}/${r.vehicle_type_id}/${r.form_factor}/${r.propulsion_type}`)).to.deep.equal([
      'berlin/bicycle/bicycle/electric_assist',
      'berlin/scooter/scooter/electric',
      'copenhagen/bicycle/bicycle/electric_assist',
      'copenhagen/scooter/scooter/electric',
    ]);
  });

  it('places the fleet: unique codes, plates, inside operations, not in no-riding, in spots where parking-spot', async () => {
    expect(first.vehicles).to.equal(80);
    const vehicles = await t.ctx.db.many(`SELECT code, license_plate, mds_state, status, locked FROM vehicles`);
    expect(vehicles).to.have.length(80);
    expect(new Set(vehicles.map((v) => v.code)).size).to.equal(80);
    for (const v of vehicles) {
      expect(v.code).to.match(/^[A-Z0-9]{4}$/);
      expect(v.license_plate).to.be.a('string').and.not.equal('');
      expect([v.mds_state, v.status, v.locked]).to.deep.equal(['available', 'ready', true]);
    }
    expect(
      await count(
        `SELECT 1 FROM vehicles v WHERE NOT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = v.zone_id AND a.area_type = 'operations' AND ST_Covers(a.geom, v.location))`,
      ),
    ).to.equal(0);
    expect(
      await count(
        `SELECT 1 FROM vehicles v JOIN areas a ON a.zone_id = v.zone_id AND a.area_type IN ('no-riding', 'no-parking') AND ST_Covers(a.geom, v.location)`,
      ),
    ).to.equal(0);
    expect(
      await count(
        `SELECT 1 FROM vehicles v WHERE v.zone_id = 'copenhagen' AND NOT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = v.zone_id AND a.area_type = 'parking-spot' AND ST_Covers(a.geom, v.location))`,
      ),
    ).to.equal(0);
    // every vehicle was put into service by a provider_drop_off event that explains its state
    expect(
      await count(`SELECT 1 FROM events WHERE event_types = ARRAY['provider_drop_off'] AND vehicle_state = 'available' AND ts = $1`, [first.deployedAt]),
    ).to.equal(80);
  });

  it('creates the demo partners with user pools and working credentials', async () => {
    const partners = await t.ctx.db.many<{ name: string; kind: string; trip_type: string; users: number }>(
      `SELECT name, kind, trip_type, (SELECT count(*)::int FROM users u WHERE u.partner_id = p.id) AS users FROM partners p ORDER BY name`,
    );
    expect(partners.map((p) => [p.name, p.kind, p.trip_type])).to.deep.equal([
      ['Demo Insurance', 'insurer', 'rider'],
      ['Demo MaaS', 'maas', 'maas'],
      ['Demo Mobility App', 'rental', 'operator'],
      ['Demo Operations', 'operator', 'operator'],
      ['Demo Partner App', 'rental', 'rider'],
    ]);
    expect(partners.filter((p) => p.kind !== 'insurer' && p.kind !== 'operator').every((p) => p.users > 0)).to.equal(true);
    const verifier = new ApiKeyVerifier(t.ctx.db, t.ctx.clock);
    expect((await verifier.verify('demo-partner-key', 'partner'))?.tripType).to.equal('rider');
    expect((await verifier.verify('demo-maas-key', 'tomp'))?.partnerName).to.equal('Demo MaaS');
    expect((await verifier.verify('demo-insurer-key', 'insurance'))?.partnerName).to.equal('Demo Insurance');
    expect(await verifier.verify('demo-partner-key', 'tomp')).to.equal(undefined);
    // the ops key (scope ops) opens no partner API, and no partner key is an ops key
    expect((await verifier.verify('demo-ops-key', 'ops'))?.partnerName).to.equal('Demo Operations');
    expect(await verifier.verify('demo-ops-key', 'partner')).to.equal(undefined);
    expect(await verifier.verify('demo-partner-key', 'ops')).to.equal(undefined);
    // a verified key records its use (the Credentials view of the console reads it)
    expect(
      (await t.ctx.db.one(`SELECT last_used_at FROM api_keys k JOIN partners p ON p.id = k.partner_id WHERE p.name = 'Demo Operations'`)).last_used_at,
    ).to.be.instanceOf(Date);
    const city = await authenticateFeedClient(t.ctx.db, 'demo-city', 'demo-city-secret', t.ctx.clock.now());
    expect(city).to.include({ role: 'city', zones: null });
    expect((await t.ctx.db.one(`SELECT last_used_at FROM feed_clients WHERE client_id = 'demo-city'`)).last_used_at).to.be.instanceOf(Date);
    expect(await authenticateFeedClient(t.ctx.db, 'demo-gbfs', 'demo-gbfs-secret', t.ctx.clock.now())).to.include({ role: 'gbfs' });
    expect(await authenticateFeedClient(t.ctx.db, 'demo-insurer', 'demo-insurer-secret', t.ctx.clock.now())).to.include({ role: 'insurer' });
    expect(await authenticateFeedClient(t.ctx.db, 'demo-city', 'wrong', t.ctx.clock.now())).to.equal(undefined);
  });

  it('the demo insurer reads the insurance feed through the deprecated OAuth path, as with its key', async () => {
    const app = request(buildApp(t.ctx).callback());
    const token = await app.post('/v1/partner-apis/token').auth('demo-insurer', 'demo-insurer-secret').type('form').send({ grant_type: 'client_credentials' });
    expect(token.status, token.text).to.equal(200);
    const bearer = `Bearer ${token.body.access_token}`;
    const hour = new Date(floorHour(t.ctx.clock.now()).getTime() - 2 * 3_600_000);
    await backfill(t.ctx, { zones: ['berlin'], from: hour, to: hour, feeds: ['insurance-2.0-trips'], force: false });
    const path = `/v1/partner-apis/insurance/berlin/trips?end_time=${formatHour(hour)}`;
    const viaToken = await app.get(path).set('Authorization', bearer);
    expect(viaToken.status, viaToken.text).to.equal(200);
    expect(viaToken.body).to.have.property('trips');
    const viaKey = await app.get(path).set('X-Access-Token', 'demo-insurer-key');
    expect(viaKey.body).to.deep.equal(viaToken.body);
    // the insurer's token opens the insurance feed only
    expect((await app.get(`/v1/partner-apis/mds/berlin/trips?end_time=${formatHour(hour)}`).set('Authorization', bearer)).status).to.equal(403);
  });

  it('is idempotent, also when run concurrently', async () => {
    const before = await t.ctx.db.one(
      `SELECT (SELECT count(*) FROM vehicles) v, (SELECT count(*) FROM areas) a, (SELECT count(*) FROM users) u, (SELECT count(*) FROM api_keys) k, (SELECT count(*) FROM events) e`,
    );
    const again = await Promise.all([seedDemo(t.ctx), seedDemo(t.ctx)]);
    expect(again.map((s) => s.created)).to.deep.equal([false, false]);
    const after = await t.ctx.db.one(
      `SELECT (SELECT count(*) FROM vehicles) v, (SELECT count(*) FROM areas) a, (SELECT count(*) FROM users) u, (SELECT count(*) FROM api_keys) k, (SELECT count(*) FROM events) e`,
    );
    expect(after).to.deep.equal(before);
  });

  it('a demo seeded before a demo feed client existed gets it on the next start', async () => {
    await t.ctx.db.query(`DELETE FROM feed_clients WHERE client_id = 'demo-insurer'`);
    expect((await seedDemo(t.ctx)).created).to.equal(false);
    expect(await authenticateFeedClient(t.ctx.db, 'demo-insurer', 'demo-insurer-secret', t.ctx.clock.now())).to.include({ role: 'insurer' });
  });

  it('marks the database as the demo: partners added to it later do not keep the seed out', async () => {
    expect((await t.ctx.db.many(`SELECT mark FROM database_marks`)).map((r) => r.mark)).to.deep.equal(['demo']);
    await createKey(t.ctx.db, 'Acme Rides', 'partner');
    expect((await seedDemo(t.ctx)).created).to.equal(false);
    expect((await seedDemoWhereDemo(t.ctx))?.created).to.equal(false);
  });

  it('vehicle codes are a bijection (no two indexes share a code)', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50000; i++) seen.add(vehicleCode(i));
    expect(seen.size).to.equal(50000);
  });
});

describe('demo seed: only into an empty database or the demo', () => {
  const t = useTestContext({ now: '2026-03-10T12:00:00Z' });
  const counts = () =>
    t.ctx.db.one(`SELECT (SELECT count(*)::int FROM zones) AS zones, (SELECT count(*)::int FROM partners) AS partners,
                                            (SELECT count(*)::int FROM api_keys) AS keys, (SELECT count(*)::int FROM feed_clients) AS clients,
                                            (SELECT count(*)::int FROM database_marks) AS marks`);

  it('refuses a database holding real partners and clients, naming them, and writes nothing', async () => {
    await createKey(t.ctx.db, 'Acme Rides', 'partner');
    await createFeedClient(t.ctx.db, 'city-of-x', 'city', null);
    const before = await counts();
    const err = await seedDemo(t.ctx).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).to.be.instanceOf(DemoSeedRefused);
    expect(err!.message).to.not.contain('\n');
    expect(err!.message).to.match(
      /^not seeding the demo: this database holds 1 partner \(Acme Rides\) and 1 feed client \(city-of-x\) not written by the demo seed\. The demo seed writes keys and client secrets that the README prints/,
    );
    // what ops simulate calls: nothing written, no error
    expect(await seedDemoWhereDemo(t.ctx)).to.equal(undefined);
    expect(await counts()).to.deep.equal(before);
    expect(await t.ctx.db.maybeOne(`SELECT 1 FROM feed_clients WHERE client_id LIKE 'demo-%'`)).to.equal(undefined);
  });

  it('a demo seeded before the mark existed (nothing but demo rows) is recognised and marked', async () => {
    await t.ctx.db.query(`DELETE FROM api_keys; DELETE FROM feed_clients; DELETE FROM partners`);
    expect((await seedDemo(t.ctx, { vehiclesPerZone: 2 })).created).to.equal(true);
    await t.ctx.db.query(`DELETE FROM database_marks; DELETE FROM feed_clients WHERE client_id = 'demo-gbfs'`);
    const again = await seedDemo(t.ctx);
    expect(again.created).to.equal(false);
    expect((await counts()).marks).to.equal(1);
    expect(await authenticateFeedClient(t.ctx.db, 'demo-gbfs', 'demo-gbfs-secret', t.ctx.clock.now())).to.include({ role: 'gbfs' });
  });
});
