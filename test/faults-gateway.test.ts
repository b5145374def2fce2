/**
 * Fault: the vehicle gateway times out on unlock. Neither the partner API start nor a TOMP booking
 * leaves anything behind: no rental (running or charged), no booking, no trip_start event, the
 * vehicle still ready and available; the next attempt on the same vehicle succeeds.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { count } from './support/figures.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

const ROW = 'faults: gateway timeout';

describe('faults: vehicle gateway times out on unlock', function () {
  const t = useTestContext();
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let zone: ZoneFixture;

  before(async () => {
    server = buildApp(t.ctx).callback();
    p = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db);
  });
  afterEach(() => t.ctx.gateway.reset());

  /** What a failed start may not leave behind on `vehicleId`. */
  async function expectNothingLeft(vehicleId: string) {
    const left = await t.ctx.db.one(
      `SELECT (SELECT count(*)::int FROM rentals WHERE vehicle_id = $1) AS rentals,
              (SELECT count(*)::int FROM rentals WHERE vehicle_id = $1 AND (state = 'RUNNING' OR total_amount > 0)) AS running_or_charged,
              (SELECT count(*)::int FROM trips WHERE device_id = $1) AS trips,
              (SELECT count(*)::int FROM events WHERE device_id = $1 AND 'trip_start' = ANY (event_types)) AS trip_starts,
              (SELECT count(*)::int FROM tomp_bookings WHERE vehicle_id = $1) AS bookings,
              v.status, v.mds_state
         FROM vehicles v WHERE v.id = $1`,
      [vehicleId],
    );
    expect(left).to.deep.equal({ rentals: 0, running_or_charged: 0, trips: 0, trip_starts: 0, bookings: 0, status: 'ready', mds_state: 'available' });
  }

  it('partner API start: 5xx in the error format, nothing left behind, the retry rents', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone);
    t.ctx.gateway.failNext('unlock', 'timeout');
    count(ROW, 'faults');
    const res = await request(server).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId: user, vehicleId: v.id, userLicenseValidated: true });
    count(ROW, 'inputs');
    expect(res.status, JSON.stringify(res.body)).to.be.within(500, 599);
    expect(res.body.errors?.[0]?.code).to.be.oneOf(['FailedToUpdateVehicle', 'FailedToUnlockVehicle']);
    expect(res.body.errors[0].status).to.equal(String(res.status));
    expect(t.ctx.gateway.calls.filter((c) => c.command === 'unlock' && c.vehicleId === v.id)).to.have.length(1);
    await expectNothingLeft(v.id);
    // the user has no active rental either
    const active = await request(server).get(`/v1/rental/user/${user}/active`).set('X-Auth-Token', p.key);
    expect(active.status).to.equal(404);

    const retry = await request(server).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId: user, vehicleId: v.id, userLicenseValidated: true });
    expect(retry.status, JSON.stringify(retry.body)).to.equal(200);
    expect(retry.body.data[0].attributes.state).to.equal('RUNNING');
  });

  it('TOMP booking: 503 with Retry-After, no booking, no rental, the retry books', async () => {
    const zoneId = await insertTompZone(t.ctx.db);
    const maas = await insertMaasPartner(t.ctx.db);
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    t.ctx.gateway.failNext('unlock', 'timeout');
    count(ROW, 'faults');
    const res = await request(server).post('/edge/tomp/bookings/one-stop').set('X-Access-Token', maas.key).send(oneStopBody(v.id, v));
    count(ROW, 'inputs');
    expect(res.status, JSON.stringify(res.body)).to.equal(503);
    expect(res.body).to.include({ status: 503 });
    expect(res.headers['retry-after']).to.be.a('string');
    await expectNothingLeft(v.id);

    const retry = await request(server).post('/edge/tomp/bookings/one-stop').set('X-Access-Token', maas.key).send(oneStopBody(v.id, v));
    expect(retry.status, JSON.stringify(retry.body)).to.equal(201);
    const r = await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1 AND state = 'RUNNING'`, [v.id]);
    expect(r.n).to.equal(1);
  });

  it('several timeouts in a row on one vehicle: still nothing left behind', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone);
    t.ctx.gateway.failNext('unlock', 'timeout', 5);
    for (let i = 0; i < 5; i++) {
      count(ROW, 'faults');
      count(ROW, 'inputs');
      const res = await request(server).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId: user, vehicleId: v.id, userLicenseValidated: true });
      expect(res.status).to.be.within(500, 599);
    }
    await expectNothingLeft(v.id);
  });
});
