/**
 * Postponed commit: PENDING bookings hold their vehicle (status booked, MDS reserved) until they
 * expire; COMMIT starts the rental, CANCEL and expiry (lazy on read, or the sweep) release it.
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { buildApp } from '../api/app.js';
import { expirePendingBookings } from '../lib/domain/tomp/holds.js';
import { useTestContext } from './support/context.js';
import { conforms, loadTompSpec } from './support/tomp-openapi.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

const P = '/edge/tomp';

describe('TOMP postponed commit', () => {
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  const spec = loadTompSpec();
  let api: supertest.Agent;
  let zoneId: string;
  let key: string;
  let autoKey: string;

  const vehicleState = (id: string) => t.ctx.db.one(`SELECT status, mds_state FROM vehicles WHERE id = $1`, [id]);
  const eventTypes = async (id: string) =>
    (await t.ctx.db.many<{ event_types: string[] }>(`SELECT event_types FROM events WHERE device_id = $1 ORDER BY ts, recorded_at`, [id])).map((r) =>
      r.event_types.join(','),
    );
  const pending = async () => {
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const res = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', key).send(oneStopBody(v.id, v));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { v, res, id: res.body.id as string };
  };
  const operate = (id: string, operation: string) => api.post(`${P}/bookings/${id}/events`).set('X-Access-Token', key).send({ operation });

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    zoneId = await insertTompZone(t.ctx.db);
    key = (await insertMaasPartner(t.ctx.db, { postponedCommit: true })).key;
    autoKey = (await insertMaasPartner(t.ctx.db)).key;
  });
  afterEach(() => t.ctx.gateway.reset());

  it('meta shows the postponed commit process instead of AUTO_COMMIT', async () => {
    const res = await api.get(`${P}/operator/meta`).set('X-Access-Token', key);
    expect(res.body[0].processIdentifiers.booking).to.deep.equal(['POSTPONED_COMMIT']);
  });

  it('a one-stop booking is PENDING, holds the vehicle and expires at the Expires header', async () => {
    const { v, res } = await pending();
    conforms(spec, res, '/bookings/one-stop', 'post');
    expect(res.body.state).to.equal('PENDING');
    expect(res.body.legs[0].state).to.equal('NOT_STARTED');
    expect(res.body.legs[0].pricing.estimated).to.equal(true);
    expect(new Date(res.headers.expires).toISOString()).to.equal('2026-11-21T10:05:00.000Z');
    expect(await vehicleState(v.id)).to.deep.equal({ status: 'booked', mds_state: 'reserved' });
    expect(await eventTypes(v.id)).to.deep.equal(['reservation_start']);
    expect(t.ctx.gateway.calls).to.have.length(0);
    // nobody else can book the held vehicle
    const other = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', autoKey).send(oneStopBody(v.id, v));
    expect(other.status).to.equal(406);
    const same = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', key).send(oneStopBody(v.id, v));
    expect(same.status).to.equal(406);
  });

  it('two pending bookings racing for one vehicle: one 201, one 406', async () => {
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const send = (ext: string) =>
      api
        .post(`${P}/bookings/one-stop`)
        .set('X-Access-Token', key)
        .send(oneStopBody(v.id, v, ext));
    const results = await Promise.all([send('p-racer-a'), send('p-racer-b')]);
    expect(results.map((r) => r.status).sort()).to.deep.equal([201, 406]);
    expect(await eventTypes(v.id)).to.deep.equal(['reservation_start']);
  });

  it('COMMIT starts the rental: CONFIRMED, vehicle unlocked and on trip', async () => {
    const { v, id } = await pending();
    const res = await operate(id, 'COMMIT');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    conforms(spec, res, '/bookings/{id}/events', 'post');
    expect(res.body.state).to.equal('CONFIRMED');
    expect(await vehicleState(v.id)).to.deep.equal({ status: 'riding', mds_state: 'on_trip' });
    expect(await eventTypes(v.id)).to.deep.equal(['reservation_start', 'trip_start']);
    expect(t.ctx.gateway.calls.map((c) => c.command)).to.deep.equal(['unlock']);
    expect((await operate(id, 'COMMIT')).status).to.equal(409);
    expect((await operate(id, 'CANCEL')).status).to.equal(409);
    const fin = await api.post(`${P}/legs/${res.body.legs[0].id}/events`).set('X-Access-Token', key).send({ event: 'FINISH' });
    expect(fin.body.state).to.equal('FINISHED');
  });

  it('a leg of a PENDING booking cannot be finished (409)', async () => {
    const { res } = await pending();
    const fin = await api.post(`${P}/legs/${res.body.legs[0].id}/events`).set('X-Access-Token', key).send({ event: 'FINISH' });
    expect(fin.status).to.equal(409);
  });

  it('CANCEL releases the vehicle', async () => {
    const { v, id } = await pending();
    const res = await operate(id, 'CANCEL');
    expect(res.status).to.equal(200);
    conforms(spec, res, '/bookings/{id}/events', 'post');
    expect(res.body.state).to.equal('CANCELLED');
    expect(res.body.legs[0].state).to.equal('CANCELLED');
    expect(await vehicleState(v.id)).to.deep.equal({ status: 'ready', mds_state: 'available' });
    expect(await eventTypes(v.id)).to.deep.equal(['reservation_start', 'reservation_cancel']);
    expect((await operate(id, 'COMMIT')).status).to.equal(409);
  });

  it('a COMMIT whose unlock fails for now (jammed) is a 503 and keeps the hold; the retry confirms', async () => {
    const { v, id } = await pending();
    t.ctx.gateway.failNext('unlock', 'refused', 1, { temporary: true });
    const res = await operate(id, 'COMMIT');
    expect(res.status).to.equal(503);
    expect(res.headers['retry-after']).to.be.a('string');
    expect(await vehicleState(v.id)).to.deep.equal({ status: 'booked', mds_state: 'reserved' });
    expect((await operate(id, 'COMMIT')).body.state).to.equal('CONFIRMED');
  });

  it('a COMMIT whose unlock the vehicle refuses for good is a 406 and releases the hold', async () => {
    const { v, id } = await pending();
    t.ctx.gateway.failNext('unlock', 'refused');
    const res = await operate(id, 'COMMIT');
    expect(res.status).to.equal(406);
    expect(res.body.type).to.equal('FailedToUnlockVehicle');
    expect(await vehicleState(v.id)).to.deep.equal({ status: 'ready', mds_state: 'available' });
    expect((await operate(id, 'COMMIT')).status).to.equal(409);
  });

  it('unsupported operations are 400, unknown bookings 404', async () => {
    const { id } = await pending();
    expect((await operate(id, 'EXTEND_EXPIRY_TIME')).status).to.equal(400);
    expect((await operate(id, 'BOGUS')).status).to.equal(400);
    expect((await operate('8f14e45f-ceea-467f-a0e6-0b4a1f2c3d4e', 'COMMIT')).status).to.equal(404);
  });

  it('an expired booking is released on read, refuses COMMIT, and the sweep releases the rest', async () => {
    const a = await pending();
    const b = await pending();
    t.ctx.clock.advance(301_000);
    const read = await api.get(`${P}/bookings/${a.id}`).set('X-Access-Token', key);
    expect(read.body.state).to.equal('EXPIRED');
    conforms(spec, read, '/bookings/{id}', 'get');
    expect(await vehicleState(a.v.id)).to.deep.equal({ status: 'ready', mds_state: 'available' });
    expect((await operate(a.id, 'COMMIT')).status).to.equal(409);

    expect(await expirePendingBookings(t.ctx)).to.be.greaterThanOrEqual(1);
    expect(await vehicleState(b.v.id)).to.deep.equal({ status: 'ready', mds_state: 'available' });
    expect((await t.ctx.db.one(`SELECT state FROM tomp_bookings WHERE id = $1`, [b.id])).state).to.equal('EXPIRED');
    expect(await expirePendingBookings(t.ctx)).to.equal(0);
  });

  it('an expired booking that is committed concurrently with the sweep is released exactly once', async () => {
    const { v, id } = await pending();
    t.ctx.clock.advance(301_000);
    const [commit, swept] = await Promise.all([operate(id, 'COMMIT'), expirePendingBookings(t.ctx)]);
    expect(commit.status).to.equal(409);
    expect(swept).to.be.at.most(1);
    expect(await eventTypes(v.id)).to.deep.equal(['reservation_start', 'reservation_cancel']);
  });
});
