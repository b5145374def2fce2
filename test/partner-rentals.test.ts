/**
 * Partner API over HTTP: start, end, reads, the whole lifecycle with auto end, every error row of
 * start/end/active/by-user, and the gateway failure rows.
 */
import { expect } from 'chai';
import request from 'supertest';
import { useTestContext } from './support/context.js';
import { buildApp } from '../api/app.js';
import {
  expectError,
  expectValid,
  failingQuery,
  insertArea,
  insertPartner,
  insertUser,
  insertVehicle,
  insertZone,
  offset,
  type PartnerFixture,
  type ZoneFixture,
} from './support/partner-fixtures.js';
import { RentalRecordSchema } from '../schemas/partner/responses.js';
import { recordTelemetry } from '../ops/sim/telemetry.js';
import { autoEndIdleRentals } from '../publisher/jobs/rentals.js';
import { DbError } from '../lib/core/db.js';
import type { VehicleGateway } from '../lib/domain/gateway.js';

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

describe('partner API: rentals', function () {
  const t = useTestContext({ now: '2026-06-01T08:00:00Z' });
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let other: PartnerFixture;
  let zone: ZoneFixture;

  before(async () => {
    server = buildApp(t.ctx).callback();
    p = await insertPartner(t.ctx.db);
    other = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db, { vatRate: 0.19, startPrice: 100, pricePerMinute: 25 });
  });
  beforeEach(() => t.ctx.gateway.reset());

  const api = (key = p.key) => ({
    get: (path: string) => request(server).get(path).set('X-Auth-Token', key),
    post: (path: string, body?: object) => {
      const r = request(server).post(path).set('X-Auth-Token', key);
      return body === undefined ? r : r.send(body);
    },
  });

  it('whole lifecycle: start, poll, end with cost and receipt, lists, active', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone);
    const near = offset(v.lat, v.lng, 10, 0);
    const s = await api().post('/v1/rental/start', {
      userId: user.toUpperCase(),
      vehicleId: v.id,
      userStartLocation: { latitude: near.lat, longitude: near.lng },
      userLicenseValidated: true,
      beginnersMode: false,
    });
    expect(s.status, JSON.stringify(s.body)).to.equal(200);
    expect(s.body.data).to.be.an('array').with.length(1);
    const started = s.body.data[0];
    expectValid(RentalRecordSchema, started);
    expect(started.type).to.equal('rental');
    const a = started.attributes;
    expect(a.state).to.equal('RUNNING');
    expect(a.startedAt).to.equal('2026-06-01T08:00:00Z');
    expect(a.endedAt).to.equal(undefined);
    expect(a.vehicle).to.deep.equal({ vehicleId: v.id, vehicleCode: v.code });
    expect(a.cost).to.deep.equal({ startPrice: 100, pricePerMinute: 25, subtotal: 84, total: { amount: 100, currency: 'EUR', vat: 16, vatPercentage: 0.19 } });
    expect(a.userStartLocation).to.deep.equal({ longitude: near.lng, latitude: near.lat });
    expect(a.vehicleStartLocation.latitude).to.be.closeTo(v.lat, 1e-9);
    expect(a.receipt).to.equal(undefined);
    expect(a.photoUploadURL).to.equal(undefined);

    const trip = (await t.ctx.db.one<{ trip_id: string }>(`SELECT trip_id FROM rentals WHERE id = $1`, [started.id])).trip_id;
    const end1 = offset(v.lat, v.lng, 0, 200);
    await recordTelemetry(t.ctx.db, {
      deviceId: v.id,
      zoneId: zone.id,
      ts: new Date('2026-06-01T08:02:00Z'),
      location: { lat: v.lat, lng: v.lng },
      batteryPercent: 80,
      tripId: trip,
    });
    await recordTelemetry(t.ctx.db, {
      deviceId: v.id,
      zoneId: zone.id,
      ts: new Date('2026-06-01T08:05:00Z'),
      location: end1,
      batteryPercent: 78,
      tripId: trip,
    });
    t.ctx.clock.advance(7 * 60_000 + 1000);

    const poll = await api().get(`/v1/rental/${started.id}`);
    expect(poll.status).to.equal(200);
    expect(poll.body.data[0].attributes).to.include({ state: 'RUNNING', rentalDurationMin: 8 });
    expect(poll.body.data[0].attributes.cost.total.amount).to.equal(300);
    const active = await api().get(`/v1/rental/user/${user}/active`);
    expect(active.status).to.equal(200);
    expect(active.body.data[0].id).to.equal(started.id);

    const e = await api().post(`/v1/rental/${started.id}/end`, { userEndLocation: { latitude: end1.lat, longitude: end1.lng } });
    expect(e.status, JSON.stringify(e.body)).to.equal(200);
    expectValid(RentalRecordSchema, e.body.data[0]);
    const ea = e.body.data[0].attributes;
    expect(ea.state).to.equal('ENDED');
    expect(ea.endedAt).to.match(RFC3339_UTC);
    expect(ea.rentalDurationMin).to.equal(8);
    expect(ea.rentalDistanceMeters).to.be.within(200, 202);
    // 100 + 8 × 25 = 300 incl. VAT; 300 / 1.19 = 252.1 → 252; VAT 48
    expect(ea.cost).to.deep.equal({
      startPrice: 100,
      pricePerMinute: 25,
      subtotal: 252,
      total: { amount: 300, currency: 'EUR', vat: 48, vatPercentage: 0.19 },
    });
    expect(ea.vehicleEndLocation.latitude).to.be.closeTo(end1.lat, 1e-9);
    expect(ea.userEndLocation.latitude).to.be.closeTo(end1.lat, 1e-9);
    expect(ea.photoUploadURL).to.match(new RegExp(`/v1/rental/${started.id}/photo\\?expires=\\d+&sig=`));
    expect(ea.receipt.url).to.match(new RegExp(`/v1/rental/${started.id}/receipt\\?expires=\\d+&sig=`));

    const receiptPath = new URL(ea.receipt.url).pathname + new URL(ea.receipt.url).search;
    const pdf = await request(server)
      .get(receiptPath)
      .buffer(true)
      .parse((res, cb) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    expect(pdf.status).to.equal(200);
    expect(pdf.headers['content-type']).to.equal('application/pdf');
    expect((pdf.body as Buffer).subarray(0, 5).toString()).to.equal('%PDF-');
    // rendered on the first download and kept in the store
    expect((await t.ctx.store.head(`receipts/${started.id}.pdf`))?.contentType).to.equal('application/pdf');
    // deterministic: the first character always changes (replacing it with 'A' left an 'A' unchanged)
    expectError(await request(server).get(receiptPath.replace(/sig=(.)/, (_m, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`)), 403, 'ErrInvalidURLSignature');
    expectError(await request(server).get(receiptPath.replace(/expires=(\d+)/, (_m, d) => `expires=${Number(d) + 1}`)), 403, 'ErrInvalidURLSignature');

    const list = await api().get(`/v1/rental/user/${user}`);
    expect(list.status).to.equal(200);
    expect(list.body.data.map((r: { id: string }) => r.id)).to.deep.equal([started.id]);
    expect(list.body.data[0].attributes.receipt.url).to.be.a('string');
    for (const r of list.body.data) expectValid(RentalRecordSchema, r);
    expectError(await api().get(`/v1/rental/user/${user}/active`), 404, 'ActiveRentalNotFound', 'no active rental');
    expectError(await api().post(`/v1/rental/${started.id}/end`, {}), 400, 'RentalAlreadyEnded', 'rental already ended');
    // other partners see nothing
    expectError(await api(other.key).get(`/v1/rental/${started.id}`), 404, 'RentalIDDoesNotExist');
    expectError(await api(other.key).get(`/v1/rental/user/${user}`), 404, 'ErrUserNotFound');
  });

  it('auto end over HTTP: idle 10 minutes → ENDED_WITH_NO_CHARGE with zero cost', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { eastM: 500 });
    await t.ctx.db.query(`UPDATE vehicles SET last_moved_at = $2 WHERE id = $1`, [v.id, t.ctx.clock.now()]);
    const s = await api().post('/v1/rental/start', { userId: user, vehicleId: v.id });
    expect(s.status).to.equal(200);
    t.ctx.clock.advance(10 * 60_000);
    expect(await autoEndIdleRentals(t.ctx)).to.equal(1);
    const r = await api().get(`/v1/rental/${s.body.data[0].id}`);
    expect(r.body.data[0].attributes).to.deep.include({ state: 'ENDED_WITH_NO_CHARGE', rentalDurationMin: 10 });
    expect(r.body.data[0].attributes.cost.total).to.deep.equal({ amount: 0, currency: 'EUR', vat: 0, vatPercentage: 0.19 });
    expect(t.ctx.gateway.calls.map((c) => c.command)).to.deep.equal(['unlock', 'lock']);
  });

  it('start error rows', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { eastM: 800 });
    const start = (body: object) => api().post('/v1/rental/start', body);
    expectError(await start({ userId: user }), 400, 'InvalidRequestBody', 'invalid body');
    expectError(await start({ userId: user, vehicleId: v.id, beginnersMode: 'yes' }), 400, 'InvalidRequestBody');
    expectError(await start({ userId: user, vehicleId: v.id, userStartLocation: { latitude: 91, longitude: 0 } }), 400, 'InvalidRequestBody');
    expectError(await start({ userId: 'u', vehicleId: v.id }), 400, 'InvalidUserId', 'invalid user id');
    expectError(await start({ userId: user, vehicleId: '6ba7b810-9dad-11d1-80b4-00c04fd430c8' }), 400, 'InvalidVehicleId', 'invalid vehicle id');
    expectError(await start({ userId: await insertUser(t.ctx.db, other.id), vehicleId: v.id }), 400, 'UserNotFound', 'user does not exist');
    expectError(await start({ userId: user, vehicleId: '6ba7b810-9dad-41d1-80b4-00c04fd430c8' }), 400, 'VehicleNotFound', 'vehicle not found');
    const far = offset(v.lat, v.lng, 0, 120);
    expectError(
      await start({ userId: user, vehicleId: v.id, userStartLocation: { latitude: far.lat, longitude: far.lng } }),
      405,
      'UserTooFarFromVehicle',
      'user too far from vehicle',
    );
    const low = await insertVehicle(t.ctx.db, zone, { battery: 5 });
    expectError(await start({ userId: user, vehicleId: low.id }), 405, 'VehicleNotAvailable');
    const licZone = await insertZone(t.ctx.db, { licenceRequired: true });
    const lv = await insertVehicle(t.ctx.db, licZone);
    expectError(await start({ userId: user, vehicleId: lv.id }), 400, 'UserLicenceVerificationRequired', 'user must validate driving licence');
    // 08:00 UTC = 10:00 in Berlin
    const sleepy = await insertZone(t.ctx.db, { sleepWindows: [{ start: '09:00', end: '11:00' }] });
    const sv = await insertVehicle(t.ctx.db, sleepy);
    expectError(await start({ userId: user, vehicleId: sv.id }), 405, 'ZoneIsSleeping');
    const closed = await insertZone(t.ctx.db, { status: 'closed' });
    const cv = await insertVehicle(t.ctx.db, closed);
    expectError(await start({ userId: user, vehicleId: cv.id }), 405, 'ZoneIsSleeping');
    // a zone outside the partner's access: the vehicle does not exist for it
    const restricted = await insertPartner(t.ctx.db, { zones: [licZone.id] });
    const ru = await insertUser(t.ctx.db, restricted.id);
    expectError(await api(restricted.key).post('/v1/rental/start', { userId: ru, vehicleId: v.id }), 400, 'VehicleNotFound');

    t.ctx.gateway.failNext('unlock', 'refused');
    expectError(await start({ userId: user, vehicleId: v.id }), 500, 'FailedToUnlockVehicle', 'error unlocking vehicle');
    t.ctx.gateway.failNext('unlock', 'unreachable');
    expectError(await start({ userId: user, vehicleId: v.id }), 500, 'FailedToUpdateVehicle', 'error communicating with vehicle');
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1`, [v.id])).n).to.equal(0);

    const ok = await start({ userId: user, vehicleId: v.id });
    expect(ok.status).to.equal(200);
    const v2 = await insertVehicle(t.ctx.db, zone);
    expectError(await start({ userId: user, vehicleId: v2.id }), 400, 'RentalAlreadyExists', 'user already has a rental');
    const user2 = await insertUser(t.ctx.db, p.id);
    expectError(await start({ userId: user2, vehicleId: v.id }), 405, 'VehicleNotAvailable');
  });

  it('end and read error rows', async () => {
    expectError(await api().post('/v1/rental/xyz/end', {}), 400, 'InvalidRentalID', 'invalid rental id');
    expectError(await api().post('/v1/rental/6ba7b810-9dad-41d1-80b4-00c04fd430c8/end'), 404, 'RentalIDDoesNotExist', 'rental id does not exist');
    expectError(await api().get('/v1/rental/xyz'), 400, 'InvalidRentalID');
    expectError(await api().get('/v1/rental/6ba7b810-9dad-41d1-80b4-00c04fd430c8'), 404, 'RentalIDDoesNotExist');
    expectError(await api().get('/v1/rental/user/xyz/active'), 400, 'InvalidInput', 'invalid input');
    expectError(await api().get('/v1/rental/user/xyz'), 400, 'InvalidUserId');
    expectError(await api().get('/v1/rental/user/6ba7b810-9dad-41d1-80b4-00c04fd430c8'), 404, 'ErrUserNotFound');
    const user = await insertUser(t.ctx.db, p.id);
    expectError(await api().get(`/v1/rental/user/${user}?limit=0`), 400, 'InvalidInput');
    expect((await api().get(`/v1/rental/user/${user}?limit=5`)).body).to.deep.equal({ data: [] });

    const v = await insertVehicle(t.ctx.db, zone, { northM: -900 });
    const s = await api().post('/v1/rental/start', { userId: user, vehicleId: v.id });
    const id = s.body.data[0].id;
    expectError(await api(other.key).post(`/v1/rental/${id}/end`, {}), 404, 'RentalIDDoesNotExist');
    expectError(await api().post(`/v1/rental/${id}/end`, { userEndLocation: { latitude: 'x' } }), 400, 'InvalidRequestBody');
    await insertArea(t.ctx.db, zone, 'no-parking', { northM: -900, halfM: 20 });
    expectError(await api().post(`/v1/rental/${id}/end`, {}), 405, 'FailedToEndRentalNoParking', 'not a parking area, cannot end');
    await t.ctx.db.query(`DELETE FROM areas WHERE zone_id = $1 AND area_type = 'no-parking'`, [zone.id]);
    t.ctx.gateway.failNext('lock', 'unreachable');
    expectError(await api().post(`/v1/rental/${id}/end`, {}), 500, 'FailedToEndRental', 'unable to end rental');
    expect((await api().get(`/v1/rental/${id}`)).body.data[0].attributes.state).to.equal('RUNNING');
    // an empty body is fine for end
    expect((await api().post(`/v1/rental/${id}/end`)).status).to.equal(200);
  });

  it('50 simultaneous starts on one vehicle over HTTP: exactly one 200', async () => {
    const v = await insertVehicle(t.ctx.db, zone, { northM: 1200 });
    const users = await Promise.all(Array.from({ length: 50 }, () => insertUser(t.ctx.db, p.id)));
    const results = await Promise.all(users.map((u) => api().post('/v1/rental/start', { userId: u, vehicleId: v.id })));
    expect(results.filter((r) => r.status === 200)).to.have.length(1);
    for (const r of results) if (r.status !== 200) expectError(r, 405, 'VehicleNotAvailable');
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1 AND state = 'RUNNING'`, [v.id])).n).to.equal(1);
  });

  it('unexpected failures: FailedToStartRental, InternalServerError, 503 when the database is down; nothing leaks', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { northM: 1500 });
    const broken: VehicleGateway = {
      unlock: () => Promise.reject(new TypeError('boom at 0xdeadbeef')),
      lock: () => Promise.resolve(),
      setMaxSpeed: () => Promise.resolve(),
    };
    const s1 = buildApp({ ...t.ctx, gateway: broken }).callback();
    const r1 = await request(s1).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId: user, vehicleId: v.id });
    expectError(r1, 500, 'FailedToStartRental', 'unexpected error');
    expect(JSON.stringify(r1.body)).to.not.contain('deadbeef');
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1`, [v.id])).n).to.equal(0);

    const s2 = buildApp(failingQuery(t.ctx, 'PartnerVehicleById', new Error('relation "secret_table" does not exist'))).callback();
    const r2 = await request(s2).get(`/v1/vehicles/id/${v.id}`).set('X-Auth-Token', p.key);
    expectError(r2, 500, 'InternalServerError');
    expect(JSON.stringify(r2.body)).to.not.contain('secret_table');

    const down = new DbError('connect ECONNREFUSED', 'unavailable', 'PartnerVehicleById');
    const s3 = buildApp(failingQuery(t.ctx, 'PartnerVehicleById', down)).callback();
    const r3 = await request(s3).get(`/v1/vehicles/id/${v.id}`).set('X-Auth-Token', p.key);
    expectError(r3, 503, 'ServiceUnavailable');
    expect(r3.headers['retry-after']).to.equal('5');
  });

  it('concurrent double end over HTTP: one 200, one RentalAlreadyEnded', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { northM: 300 });
    const id = (await api().post('/v1/rental/start', { userId: user, vehicleId: v.id })).body.data[0].id;
    const [a, b] = await Promise.all([api().post(`/v1/rental/${id}/end`, {}), api().post(`/v1/rental/${id}/end`, {})]);
    expect([a.status, b.status].sort()).to.deep.equal([200, 400]);
    expectError(a.status === 400 ? a : b, 400, 'RentalAlreadyEnded');
  });
});
