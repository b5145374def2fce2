/**
 * TOMP error statuses: bad input (400/413), no booking possible (406), blocked customer (428),
 * illegal leg events (409), parking rules (409), a jammed lock (503 + Retry-After, then a retry
 * that succeeds), and two bookings racing for one vehicle (one 201, one 406).
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { buildApp } from '../api/app.js';
import { recordTelemetry } from '../ops/sim/telemetry.js';
import { useTestContext } from './support/context.js';
import { loadTompSpec } from './support/tomp-openapi.js';
import { insertMaasPartner, insertNoParking, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

const P = '/edge/tomp';

describe('TOMP API errors', () => {
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  let api: supertest.Agent;
  let zoneId: string;
  let key: string;
  const book = (body: object) => api.post(`${P}/bookings/one-stop`).set('X-Access-Token', key).send(body);
  const bookedLeg = async () => {
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const res = await book(oneStopBody(v.id, v));
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { v, bookingId: res.body.id as string, legId: res.body.legs[0].id as string };
  };
  const legEvent = (legId: string, body: object) => api.post(`${P}/legs/${legId}/events`).set('X-Access-Token', key).send(body);

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    zoneId = await insertTompZone(t.ctx.db);
    key = (await insertMaasPartner(t.ctx.db)).key;
  });
  afterEach(() => t.ctx.gateway.reset());

  describe('400 and 413', () => {
    it('malformed JSON, wrong types, missing fields, several assets', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const raw = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', key).set('Content-Type', 'application/json').send('{"from":');
      expect(raw.status).to.equal(400);
      expect(raw.body).to.include({ status: 400 });
      expect(raw.body.detail).to.contain('JSON');
      const spec = loadTompSpec();
      if (spec) expect(spec.schema('error')(raw.body)).to.equal(true);
      const cases: object[] = [
        { ...oneStopBody(v.id, v), from: { coordinates: { lng: 'west', lat: 40 } } },
        { ...oneStopBody(v.id, v), from: { coordinates: { lng: -200, lat: 40 } } },
        { ...oneStopBody(v.id, v), useAssets: [v.id, v.id] },
        { ...oneStopBody(v.id, v), useAssets: [] },
        { ...oneStopBody(v.id, v), customer: {} },
        { from: { coordinates: { lng: v.lng, lat: v.lat } }, useAssets: [v.id] },
        [oneStopBody(v.id, v)],
      ];
      for (const body of cases) {
        const res = await book(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.detail).to.be.a('string');
      }
      expect((await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', key)).status).to.equal(400);
    });

    it('413 for a body above the limit', async () => {
      const big = { ...oneStopBody('x', { lat: 0, lng: 0 }), padding: 'x'.repeat(t.ctx.config.maxBodyBytes) };
      const res = await book(big);
      expect(res.status).to.equal(413);
      expect(res.body).to.include({ status: 413 });
    });

    it('400 for a leg event we do not implement or that TOMP does not know', async () => {
      const { legId } = await bookedLeg();
      const a = await legEvent(legId, { event: 'PAUSE' });
      expect(a.status).to.equal(400);
      expect(a.body.detail).to.contain('PAUSE');
      expect((await legEvent(legId, { event: 'EXPLODE' })).status).to.equal(400);
      expect((await legEvent(legId, { event: 'FINISH', userLocation: { coordinates: { lat: 'x' } } })).status).to.equal(400);
    });
  });

  describe('406: no booking possible', () => {
    it('unknown asset', async () => {
      for (const asset of ['8f14e45f-ceea-467f-a0e6-0b4a1f2c3d4e', 'ZZZZ', 'not an id']) {
        const res = await book(oneStopBody(asset, { lat: 40.4168, lng: -3.7038 }));
        expect(res.status, asset).to.equal(406);
        expect(res.body).to.include({ status: 406, detail: 'unknown asset' });
      }
    });

    it('vehicle unavailable or low on battery', async () => {
      const broken = await insertTompVehicle(t.ctx.db, zoneId, { status: 'unavailable', mdsState: 'non_operational' });
      const res = await book(oneStopBody(broken.id, broken));
      expect(res.status).to.equal(406);
      expect(res.body.detail).to.contain('not available');
      const empty = await insertTompVehicle(t.ctx.db, zoneId, { battery: 5 });
      expect((await book(oneStopBody(empty.id, empty))).status).to.equal(406);
    });

    it('vehicle already taken', async () => {
      const { v } = await bookedLeg();
      const res = await book(oneStopBody(v.id, v));
      expect(res.status).to.equal(406);
    });

    it('departure too far from the vehicle', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const res = await book(oneStopBody(v.id, { lat: v.lat + 0.01, lng: v.lng }));
      expect(res.status).to.equal(406);
      expect(res.body.detail).to.contain('too far');
    });

    it('zone sleeping', async () => {
      const sleepy = await insertTompZone(t.ctx.db, {
        lat: 40.6,
        lng: -3.9,
        sleepWindows: [
          { start: '00:00', end: '12:00' },
          { start: '12:00', end: '24:00' },
        ],
      });
      const v = await insertTompVehicle(t.ctx.db, sleepy, { lat: 40.6, lng: -3.9 });
      const res = await book(oneStopBody(v.id, v));
      expect(res.status).to.equal(406);
      expect(res.body.detail).to.contain('sleeping');
    });

    it('a vehicle outside the partner zones is unknown', async () => {
      const other = await insertTompZone(t.ctx.db, { lat: 40.7, lng: -3.95 });
      const scoped = await insertMaasPartner(t.ctx.db, { zones: [other] });
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const res = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', scoped.key).send(oneStopBody(v.id, v));
      expect(res.status).to.equal(406);
    });
  });

  it('428 for a customer blocked by the operator', async () => {
    const partner = await insertMaasPartner(t.ctx.db);
    await t.ctx.db.query(`INSERT INTO users (partner_id, email, external_id, blocked) VALUES ($1, 'b@maas.invalid', 'blocked-1', true)`, [partner.id]);
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const res = await api
      .post(`${P}/bookings/one-stop`)
      .set('X-Access-Token', partner.key)
      .send(oneStopBody(v.id, v, 'blocked-1'));
    expect(res.status).to.equal(428);
    expect(res.body).to.include({ status: 428 });
    expect((await t.ctx.db.one(`SELECT status FROM vehicles WHERE id = $1`, [v.id])).status).to.equal('ready');
  });

  it('two bookings racing for one vehicle: one 201, one 406', async () => {
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const results = await Promise.all([book(oneStopBody(v.id, v, 'racer-a')), book(oneStopBody(v.id, v, 'racer-b'))]);
    expect(results.map((r) => r.status).sort()).to.deep.equal([201, 406]);
    const rentals = await t.ctx.db.many(`SELECT id FROM rentals WHERE vehicle_id = $1`, [v.id]);
    expect(rentals).to.have.length(1);
  });

  describe('leg events', () => {
    it('409 for an event illegal in the current state', async () => {
      const { legId } = await bookedLeg();
      expect((await legEvent(legId, { event: 'START_FINISHING' })).status).to.equal(200);
      const twice = await legEvent(legId, { event: 'START_FINISHING' });
      expect(twice.status).to.equal(409);
      expect(twice.body).to.include({ status: 409 });
      expect((await legEvent(legId, { event: 'FINISH' })).status).to.equal(200);
      expect((await legEvent(legId, { event: 'FINISH' })).status).to.equal(409);
      expect((await legEvent(legId, { event: 'START_FINISHING' })).status).to.equal(409);
    });

    it('409 when the vehicle stands where the trip may not end; the leg stays in use', async () => {
      const { v, legId } = await bookedLeg();
      const spot = { lat: v.lat + 0.01, lng: v.lng + 0.01 };
      await insertNoParking(t.ctx.db, zoneId, spot.lat, spot.lng);
      const trip = await t.ctx.db.one<{ trip_id: string }>(`SELECT trip_id FROM rentals WHERE vehicle_id = $1`, [v.id]);
      t.ctx.clock.advance(60_000);
      await recordTelemetry(t.ctx.db, { deviceId: v.id, zoneId, ts: t.ctx.clock.now(), location: spot, batteryPercent: 70, tripId: trip.trip_id });
      const res = await legEvent(legId, { event: 'FINISH' });
      expect(res.status).to.equal(409);
      expect(res.body.type).to.equal('FailedToEndRentalNoParking');
      const leg = await api.get(`${P}/legs/${legId}`).set('X-Access-Token', key);
      expect(leg.body.state).to.equal('IN_USE');
    });

    it('503 with Retry-After when the lock fails for now (jammed); the retry finishes the leg', async () => {
      const { legId, bookingId } = await bookedLeg();
      t.ctx.gateway.failNext('lock', 'refused', 1, { temporary: true });
      const res = await legEvent(legId, { event: 'FINISH' });
      expect(res.status).to.equal(503);
      expect(res.body).to.include({ status: 503 });
      expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
      const leg = await api.get(`${P}/legs/${legId}`).set('X-Access-Token', key);
      expect(leg.body.state).to.equal('NOT_STARTED');
      expect((await api.get(`${P}/bookings/${bookingId}`).set('X-Access-Token', key)).body.state).to.equal('CONFIRMED');
      const retry = await legEvent(legId, { event: 'FINISH' });
      expect(retry.status).to.equal(200);
      expect(retry.body.state).to.equal('FINISHED');
    });

    it('500 when the vehicle refuses the lock for good; the leg stays in use', async () => {
      const { legId } = await bookedLeg();
      t.ctx.gateway.failNext('lock', 'refused');
      const res = await legEvent(legId, { event: 'FINISH' });
      expect(res.status).to.equal(500);
      expect(res.body).to.include({ status: 500, type: 'FailedToEndRental' });
      expect(res.headers['retry-after']).to.equal(undefined);
      expect((await api.get(`${P}/legs/${legId}`).set('X-Access-Token', key)).body.state).to.equal('NOT_STARTED');
    });

    it('406 when the vehicle refuses the unlock for good at booking; nothing is booked', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      t.ctx.gateway.failNext('unlock', 'refused');
      const res = await book(oneStopBody(v.id, v));
      expect(res.status).to.equal(406);
      expect(res.body.type).to.equal('FailedToUnlockVehicle');
      expect(await t.ctx.db.many(`SELECT id FROM tomp_bookings WHERE vehicle_id = $1`, [v.id])).to.have.length(0);
    });

    it('503 with Retry-After when the vehicle does not unlock at booking; nothing is booked', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      t.ctx.gateway.failNext('unlock', 'timeout');
      const res = await book(oneStopBody(v.id, v));
      expect(res.status).to.equal(503);
      expect(res.headers['retry-after']).to.be.a('string');
      expect(await t.ctx.db.many(`SELECT id FROM tomp_bookings WHERE vehicle_id = $1`, [v.id])).to.have.length(0);
      expect((await book(oneStopBody(v.id, v))).status).to.equal(201);
    });

    it('a rental ended elsewhere (auto end) shows the leg FINISHED and refuses FINISH with 409', async () => {
      const { legId, bookingId } = await bookedLeg();
      const { endRental } = await import('../lib/domain/rentals/engine.js');
      const r = await t.ctx.db.one<{ rental_id: string }>(`SELECT rental_id FROM tomp_bookings WHERE id = $1`, [bookingId]);
      await endRental(t.ctx, { rentalId: r.rental_id, endState: 'ENDED_WITH_NO_CHARGE' });
      const leg = await api.get(`${P}/legs/${legId}`).set('X-Access-Token', key);
      expect(leg.body.state).to.equal('FINISHED');
      expect(leg.body.pricing.parts.map((p: any) => p.amount)).to.deep.equal([0, 0]);
      expect((await legEvent(legId, { event: 'FINISH' })).status).to.equal(409);
    });
  });
});
