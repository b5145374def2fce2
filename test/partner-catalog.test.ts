/** Partner API over HTTP: vehicles, pricing, zone areas (v1/v2), parking occupancy, zone info. */
import { expect } from 'chai';
import request from 'supertest';
import { useTestContext } from './support/context.js';
import { buildApp } from '../api/app.js';
import {
  expectError,
  expectValid,
  insertArea,
  insertPartner,
  insertUser,
  insertVehicle,
  insertZone,
  type PartnerFixture,
  type ZoneFixture,
} from './support/partner-fixtures.js';
import { PricingRecord, VehicleRecord } from '../schemas/partner/responses.js';
import { startRental } from '../lib/domain/rentals/engine.js';

describe('partner API: vehicles, pricing, zones', function () {
  // 10:00 UTC = 12:00 in Berlin
  const t = useTestContext({ now: '2026-06-01T10:00:00Z' });
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let zone: ZoneFixture;

  before(async () => {
    server = buildApp(t.ctx).callback();
    p = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db, { vatRate: 0.2, startPrice: 90, pricePerMinute: 19, minBattery: 20 });
  });
  const get = (path: string, key = p.key) => request(server).get(path).set('X-Auth-Token', key);

  it('empty path ids get the error table codes, not 404 (the router fills the empty segment)', async () => {
    expectError(await get('/v1/vehicles/code/'), 400, 'BadVehicleCode');
    expectError(await get('/v1/vehicles/id/'), 400, 'InvalidVehicleID');
    expectError(await get('/v1/pricing/vehicle/'), 400, 'InvalidVehicleId');
    expectError(await get('/v1/user/id/'), 400, 'InvalidUserId');
    expectError(await get('/v1/rental/user//active'), 400, 'InvalidInput');
    expectError(await request(server).post('/v1/rental//end').set('X-Auth-Token', p.key).send({}), 400, 'InvalidRentalID');
    // authentication still comes first, and a path that matches nothing even when filled stays 404
    expectError(await get('/v1/vehicles/code/', 'wrong-key'), 401, 'Unauthorized');
    expectError(await get('/v1/nothing/here/'), 404, 'NotFound');
  });

  it('pricing of a vehicle', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const res = await get(`/v1/pricing/vehicle/${v.id}`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ data: { id: v.id, type: 'pricing', attributes: { pricePerMinute: 19, startPrice: 90, currency: 'EUR', vat: 0.2 } } });
    expect(res.headers['cache-control']).to.equal('no-store');
    expectValid(PricingRecord, res.body.data);
    expectError(await get('/v1/pricing/vehicle/abc'), 400, 'InvalidVehicleId', 'invalid vehicle id');
    expectError(await get('/v1/pricing/vehicle/6ba7b810-9dad-41d1-80b4-00c04fd430c8'), 404, 'VehicleNotFound');
  });

  it('available vehicles of a zone with price; both path forms; sleeping zones have none', async () => {
    const z = await insertZone(t.ctx.db, { minBattery: 20 });
    const ready = await insertVehicle(t.ctx.db, z, { battery: 55, typeId: 'pt-bike' });
    await insertVehicle(t.ctx.db, z, { battery: 10 });
    await insertVehicle(t.ctx.db, z, { status: 'unavailable' });
    const rented = await insertVehicle(t.ctx.db, z);
    await startRental(t.ctx, { partnerId: p.id, userId: await insertUser(t.ctx.db, p.id), vehicleId: rented.id, source: 'partner' });
    for (const path of [`/v1/vehicles/?zoneID=${z.id}`, `/v1/vehicles?zoneID=${z.id}`]) {
      const res = await get(path);
      expect(res.status, path).to.equal(200);
      expect(res.body.data).to.have.length(1);
      expectValid(VehicleRecord, res.body.data[0]);
      expect(res.body.data[0]).to.deep.equal({
        id: ready.id,
        type: 'vehicle',
        vehicle_type: 'bicycle',
        attributes: {
          batteryLevel: 55,
          location: { latitude: ready.lat, longitude: ready.lng },
          code: ready.code,
          zoneId: z.id,
          locked: true,
          status: 'ready',
          maxRangeMeters: 33000,
        },
        price: { currency: 'EUR', pricePerMinute: 25, startPrice: 100, vat: 0.19 },
      });
    }
    expectError(await get('/v1/vehicles'), 400, 'EmptyZoneID');
    expectError(await get('/v1/vehicles?zoneID='), 400, 'EmptyZoneID');
    expectError(await get('/v1/vehicles?zoneID=nope'), 404, 'ZoneNotFound');
    const sleepy = await insertZone(t.ctx.db, { sleepWindows: [{ start: '11:30', end: '12:30' }] });
    await insertVehicle(t.ctx.db, sleepy);
    expect((await get(`/v1/vehicles?zoneID=${sleepy.id}`)).body).to.deep.equal({ data: [] });
  });

  it('a listed vehicle is the same bytes as the vehicle read by id, in code order', async () => {
    // the list (PartnerAvailableVehicles, cached per zone) and the read by id (PartnerVehicleById)
    // are two statements presented by one presentVehicle: a listed vehicle must not differ from its
    // own read. A zone near (0, 0), where Postgres prints coordinates in exponent form (1e-05) for any
    // rendering built in SQL, and vehicles inserted out of code order.
    const z = await insertZone(t.ctx.db, { lat: 0.00001, lng: -0.000004, vatRate: 0.075 });
    const vs = [];
    for (const code of ['ZZ01', 'AA01', 'MM01']) vs.push(await insertVehicle(t.ctx.db, z, { code, battery: 67 }));
    const list = await get(`/v1/vehicles?zoneID=${z.id}`);
    expect(list.status).to.equal(200);
    const codes = vs.map((v) => v.code).sort();
    expect(list.body.data.map((v: { attributes: { code: string } }) => v.attributes.code)).to.deep.equal(codes);
    for (const listed of list.body.data as Array<{ id: string }>) {
      const one = await get(`/v1/vehicles/id/${listed.id}`);
      expect(JSON.stringify(listed)).to.equal(JSON.stringify(one.body.data[0]));
    }
    // a number in exponent form (ids are quoted strings, and a UUID may well hold "5e-0")
    expect(list.text).to.not.match(/[:,[]-?\d+(\.\d+)?[eE][-+]?\d/);
  });

  it('vehicle by code and by id', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const byCode = await get(`/v1/vehicles/code/${v.code.toLowerCase()}`);
    expect(byCode.status).to.equal(200);
    expect(byCode.body.data[0].id).to.equal(v.id);
    expect(byCode.body.data[0].price).to.deep.equal({ currency: 'EUR', pricePerMinute: 19, startPrice: 90, vat: 0.2 });
    const byId = await get(`/v1/vehicles/id/${v.id}`);
    expect(byId.body).to.deep.equal(byCode.body);
    expectError(await get('/v1/vehicles/code/AB'), 400, 'BadVehicleCode', 'vehicle code incorrect');
    expectError(await get('/v1/vehicles/code/AB-1'), 400, 'BadVehicleCode');
    expectError(await get('/v1/vehicles/code/ZZZZ'), 404, 'VehicleNotFound', 'vehicle not found');
    expectError(await get('/v1/vehicles/id/123'), 400, 'InvalidVehicleID', 'vehicle id incorrect');
    expectError(await get('/v1/vehicles/id/6ba7b810-9dad-41d1-80b4-00c04fd430c8'), 404, 'VehicleNotFound');
    // partners restricted to other zones do not see it
    const other = await insertZone(t.ctx.db);
    const restricted = await insertPartner(t.ctx.db, { zones: [other.id] });
    expectError(await get(`/v1/vehicles/id/${v.id}`, restricted.key), 404, 'VehicleNotFound');
    expectError(await get(`/v1/vehicles?zoneID=${zone.id}`, restricted.key), 404, 'ZoneNotFound');
  });

  it('zone areas: v1 without free-floating, v2 with; GeoJSON MultiPolygons', async () => {
    const z = await insertZone(t.ctx.db);
    await insertArea(t.ctx.db, z, 'no-parking', { eastM: 100, vehicleTypes: ['scooter'] });
    await insertArea(t.ctx.db, z, 'free-floating', { eastM: -100 });
    const v1 = await get(`/v1/zone/id/${z.id}`);
    expect(v1.status).to.equal(200);
    expect(v1.body.data).to.include({ id: z.id, type: 'area' });
    const types1 = v1.body.data.attributes.areas.map((a: { area_type: string }) => a.area_type).sort();
    expect(types1).to.deep.equal(['no-parking', 'operations']);
    const np = v1.body.data.attributes.areas.find((a: { area_type: string }) => a.area_type === 'no-parking');
    expect(np.vehicle_types).to.deep.equal(['scooter']);
    expect(np.geometry.type).to.equal('MultiPolygon');
    expect(np.id).to.be.a('string');
    const v2 = await get(`/v2/zone/id/${z.id}`);
    expect(v2.body.data.attributes.areas.map((a: { area_type: string }) => a.area_type).sort()).to.deep.equal(['free-floating', 'no-parking', 'operations']);
    expectError(await get('/v1/zone/id/'), 400, 'EmptyZoneID', 'zone id empty');
    expectError(await get('/v2/zone/id'), 400, 'EmptyZoneID');
    expectError(await get('/v1/zone/id/unknown-zone'), 404, 'ZoneNotFound');
    expectError(await get('/v1/zone/id//areasOccupancy'), 400, 'EmptyZoneID');
  });

  it('parking-spot occupancy from PostGIS', async () => {
    const z = await insertZone(t.ctx.db, { parkingMode: 'parking-spot' });
    const a = await insertArea(t.ctx.db, z, 'parking-spot', { eastM: 200, halfM: 15, capacity: 4 });
    const b = await insertArea(t.ctx.db, z, 'parking-spot', { eastM: -200, halfM: 15, capacity: 2 });
    await insertVehicle(t.ctx.db, z, { eastM: 200 });
    await insertVehicle(t.ctx.db, z, { eastM: 205, northM: 5 });
    await insertVehicle(t.ctx.db, z, { eastM: 200, status: 'riding' });
    await insertVehicle(t.ctx.db, z, { eastM: 0 });
    // bicycles in a spot are not occupancy of its scooter capacity
    await insertVehicle(t.ctx.db, z, { eastM: 198, typeId: 'pt-bike' });
    await insertVehicle(t.ctx.db, z, { eastM: -200, typeId: 'pt-bike' });
    const res = await get(`/v1/zone/id/${z.id}/areasOccupancy`);
    expect(res.status).to.equal(200);
    const byId = Object.fromEntries(res.body.data.map((r: { id: string }) => [r.id, r]));
    expect(byId[a]).to.deep.equal({ id: a, occupancy: 2, capacity: 4 });
    expect(byId[b]).to.deep.equal({ id: b, occupancy: 0, capacity: 2 });
    expectError(await get('/v1/zone/id/nope/areasOccupancy'), 404, 'ZoneNotFound');
  });

  it('zone info: the partner’s zones with sleep state in the zone timezone', async () => {
    const awake = await insertZone(t.ctx.db, { licenceRequired: true });
    const asleep = await insertZone(t.ctx.db, { sleepWindows: [{ start: '12:00', end: '13:00' }] });
    // in New York it is 06:00
    const nySleep = await insertZone(t.ctx.db, { timezone: 'America/New_York', sleepWindows: [{ start: '05:00', end: '07:00' }] });
    const restricted = await insertPartner(t.ctx.db, { zones: [awake.id, asleep.id, nySleep.id] });
    const res = await get('/v1/zone/info', restricted.key);
    expect(res.status).to.equal(200);
    expect(res.body.data).to.include({ id: restricted.id, type: 'zone' });
    const zones = res.body.data.attributes.zones;
    expect(zones.map((z: { zoneId: string }) => z.zoneId).sort()).to.deep.equal([awake.id, asleep.id, nySleep.id].sort());
    const info = Object.fromEntries(zones.map((z: { zoneId: string }) => [z.zoneId, z]));
    expect(info[awake.id]).to.deep.equal({
      zoneId: awake.id,
      zoneName: 'Berlin',
      parkingMode: 'free-floating',
      licenceVerificationRequired: true,
      speedConfig: { maxSpeed: 20, minRequiredRides: 3, reducedSpeed: 15, speedUnit: 'km/h' },
      isSleeping: false,
    });
    expect(info[asleep.id].isSleeping).to.equal(true);
    expect(info[nySleep.id].isSleeping).to.equal(true);
    t.ctx.clock.advance(60 * 60_000);
    const later = (await get('/v1/zone/info', restricted.key)).body.data.attributes.zones;
    expect(later.every((z: { isSleeping: boolean }) => !z.isSleeping)).to.equal(true);
    t.ctx.clock.advance(-60 * 60_000);
    // an unrestricted partner sees every zone
    expect((await get('/v1/zone/info')).body.data.attributes.zones.length).to.be.greaterThan(3);
  });
});
