/**
 * TOMP booking API: authentication, operator information and the typical flow of the requirement
 * end to end (regions → pricing plans → one-stop booking → leg → START_FINISHING → FINISH → final
 * booking), every 2xx body and its required headers validated against the official 1.6.1 file.
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { buildApp } from '../api/app.js';
import { recordTelemetry } from '../ops/sim/telemetry.js';
import { useTestContext } from './support/context.js';
import { conforms, loadTompSpec } from './support/tomp-openapi.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

const P = '/edge/tomp';

describe('TOMP API', () => {
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  const spec = loadTompSpec();
  let api: supertest.Agent;
  let zoneId: string;
  let maas: { id: string; key: string };

  before(async () => {
    if (!spec) console.warn('    (TOMP spec not found: schema conformance checks are skipped)');
    api = supertest.agent(buildApp(t.ctx).callback());
    zoneId = await insertTompZone(t.ctx.db);
    await insertTompZone(t.ctx.db, { status: 'closed', lat: 41, lng: -4 });
    maas = await insertMaasPartner(t.ctx.db);
  });

  describe('authentication and routing', () => {
    it('401 without a key and with an unknown key', async () => {
      const a = await api.get(`${P}/operator/meta`);
      expect(a.status).to.equal(401);
      expect(a.body).to.include({ status: 401 });
      expect(a.body.detail).to.be.a('string');
      const b = await api.get(`${P}/operator/meta`).set('X-Access-Token', 'no-such-key-123456');
      expect(b.status).to.equal(401);
    });

    it('403 for a valid key of another API (partner scope)', async () => {
      const partner = await insertMaasPartner(t.ctx.db, { scope: 'partner' });
      const res = await api.get(`${P}/operator/meta`).set('X-Access-Token', partner.key);
      expect(res.status).to.equal(403);
      expect(res.body).to.include({ status: 403 });
    });

    it('429 with Retry-After once the key has spent its budget', async () => {
      const limited = await insertMaasPartner(t.ctx.db, { rateLimit: 2 });
      for (let i = 0; i < 2; i++) expect((await api.get(`${P}/operator/meta`).set('X-Access-Token', limited.key)).status).to.equal(200);
      const res = await api.get(`${P}/operator/meta`).set('X-Access-Token', limited.key);
      expect(res.status).to.equal(429);
      expect(res.body).to.include({ status: 429 });
      expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
    });

    it('404 for an unknown path, 405 for a wrong method, both as TOMP errors', async () => {
      const a = await api.get(`${P}/operator/stations`).set('X-Access-Token', maas.key);
      expect(a.status).to.equal(404);
      expect(a.body).to.include({ status: 404 });
      const b = await api.delete(`${P}/operator/meta`).set('X-Access-Token', maas.key);
      expect(b.status).to.equal(405);
      expect(b.headers.allow).to.contain('GET');
    });
  });

  describe('operator information', () => {
    it('GET /operator/regions lists operating zones with a Polygon service area', async () => {
      const res = await api.get(`${P}/operator/regions`).set('X-Access-Token', maas.key);
      expect(res.status).to.equal(200);
      conforms(spec, res, '/operator/regions', 'get');
      expect(res.body).to.have.length(1);
      const [r] = res.body;
      expect(r).to.include({ regionId: zoneId, type: 'OPERATING' });
      expect(r.serviceArea.type).to.equal('Polygon');
      // the largest of the two polygons: the 0.1° square around Madrid (negative longitudes)
      const lngs = r.serviceArea.coordinates[0].map((p: number[]) => p[0]);
      expect(Math.min(...lngs)).to.be.closeTo(-3.7538, 1e-6);
      expect(Math.max(...lngs)).to.be.closeTo(-3.6538, 1e-6);
    });

    it('GET /operator/regions pages with offset/limit and rejects bad values', async () => {
      const res = await api.get(`${P}/operator/regions?offset=1`).set('X-Access-Token', maas.key);
      expect(res.body).to.deep.equal([]);
      expect((await api.get(`${P}/operator/regions?limit=-1`).set('X-Access-Token', maas.key)).status).to.equal(400);
    });

    it('GET /operator/meta describes version, base URL, endpoints and AUTO_COMMIT', async () => {
      const res = await api.get(`${P}/operator/meta`).set('X-Access-Token', maas.key);
      expect(res.status).to.equal(200);
      conforms(spec, res, '/operator/meta', 'get');
      expect(res.body).to.have.length(1);
      const m = res.body[0];
      expect(m.version).to.equal('1.6.1');
      expect(m.baseUrl).to.equal(`${t.ctx.config.publicBaseUrl}/edge/tomp`);
      expect(m.scenarios).to.include.members(['POSTPONED_COMMIT', 'PAY_WHEN_FINISHED']);
      expect(m.processIdentifiers.booking).to.deep.equal(['AUTO_COMMIT']);
      expect(m.endpoints.every((e: any) => e.status === 'IMPLEMENTED')).to.equal(true);
      const served = m.endpoints.map((e: any) => `${e.method} ${e.path}${e.eventType ? ` ${e.eventType}` : ''}`);
      expect(served).to.include.members([
        'GET /operator/regions',
        'GET /operator/meta',
        'GET /operator/pricing-plans',
        'POST /bookings/one-stop',
        'GET /bookings/{id}',
        'POST /bookings/{id}/events COMMIT',
        'POST /bookings/{id}/events CANCEL',
        'GET /legs/{id}',
        'POST /legs/{id}/events FINISH',
        'POST /legs/{id}/events START_FINISHING',
        'POST /support/',
      ]);
    });

    it('GET /operator/pricing-plans: unlock fee (FIXED) and per-minute price (FLEX) per zone and vehicle type', async () => {
      const res = await api.get(`${P}/operator/pricing-plans`).set('X-Access-Token', maas.key);
      expect(res.status).to.equal(200);
      conforms(spec, res, '/operator/pricing-plans', 'get');
      expect(res.body).to.have.length(1);
      const plan = res.body[0];
      expect(plan).to.include({ planId: `${zoneId}:tomp-scooter`, regionId: zoneId, isTaxable: false });
      expect(plan.fare.parts).to.deep.include({ amount: 1, currencyCode: 'EUR', vatRate: 21, type: 'FIXED', name: 'unlock fee' });
      expect(plan.fare.parts).to.deep.include({
        amount: 0.25,
        currencyCode: 'EUR',
        vatRate: 21,
        type: 'FLEX',
        unitType: 'MINUTE',
        units: 1,
        name: 'price per minute',
      });
      const none = await api.get(`${P}/operator/pricing-plans?regionId=nowhere`).set('X-Access-Token', maas.key);
      expect(none.body).to.deep.equal([]);
    });
  });

  describe('the typical flow', () => {
    it('books, follows, finishes and prices a trip', async () => {
      const key = maas.key;
      expect((await api.get(`${P}/operator/regions`).set('X-Access-Token', key)).status).to.equal(200);
      expect((await api.get(`${P}/operator/pricing-plans`).set('X-Access-Token', key)).status).to.equal(200);
      const v = await insertTompVehicle(t.ctx.db, zoneId);

      const booked = await api
        .post(`${P}/bookings/one-stop`)
        .set('X-Access-Token', key)
        .set('Accept-Language', 'es, en;q=0.5')
        .send(oneStopBody(v.id, v, 'rider-1'));
      expect(booked.status, JSON.stringify(booked.body)).to.equal(201);
      conforms(spec, booked, '/bookings/one-stop', 'post');
      expect(booked.headers['content-language']).to.equal('es');
      expect(new Date(booked.headers.expires).getTime()).to.equal(t.ctx.clock.now().getTime() + 300_000);
      const b = booked.body;
      expect(b.state).to.equal('CONFIRMED');
      expect(b.from.coordinates).to.deep.equal({ lng: v.lng, lat: v.lat });
      expect(b.legs).to.have.length(1);
      const leg = b.legs[0];
      expect(leg.state).to.equal('NOT_STARTED');
      expect(leg.departureTime).to.equal('2026-11-21T10:00:00Z');
      expect(leg.assetType).to.deep.equal({ id: 'tomp-scooter', assetClass: 'STEP', assetSubClass: 'e-scooter' });
      expect(leg.asset).to.deep.equal({ id: v.id, stateOfCharge: 80, maxRange: 35000 });
      expect(leg.pricing.estimated).to.equal(true);
      expect(leg.pricing.parts.map((p: any) => [p.type, p.amount])).to.deep.equal([
        ['FIXED', 1],
        ['FLEX', 0.25],
      ]);

      // the vehicle is unlocked and on a TOMP rental of the MaaS partner's user
      const rental = await t.ctx.db.one(
        `SELECT r.source, r.state, u.email, u.external_id FROM rentals r JOIN users u ON u.id = r.user_id WHERE r.vehicle_id = $1`,
        [v.id],
      );
      expect(rental).to.deep.equal({ source: 'tomp', state: 'RUNNING', email: 'rider-1@maas.invalid', external_id: 'rider-1' });

      let res = await api.get(`${P}/legs/${leg.id}`).set('X-Access-Token', key);
      expect(res.status).to.equal(200);
      conforms(spec, res, '/legs/{id}', 'get');
      expect(res.body.state).to.equal('NOT_STARTED');

      // telemetry shows the vehicle moving: the leg is in use, the price no longer an estimate
      t.ctx.clock.advance(60_000);
      const trip = await t.ctx.db.one<{ trip_id: string }>(`SELECT trip_id FROM rentals WHERE vehicle_id = $1`, [v.id]);
      await recordTelemetry(t.ctx.db, {
        deviceId: v.id,
        zoneId,
        ts: t.ctx.clock.now(),
        location: { lat: v.lat + 0.002, lng: v.lng },
        batteryPercent: 78,
        tripId: trip.trip_id,
      });
      res = await api.get(`${P}/legs/${leg.id}`).set('X-Access-Token', key);
      expect(res.body.state).to.equal('IN_USE');
      expect(res.body.pricing.estimated).to.equal(false);
      res = await api.get(`${P}/bookings/${b.id}`).set('X-Access-Token', key);
      expect(res.status).to.equal(200);
      conforms(spec, res, '/bookings/{id}', 'get');
      expect(res.body.state).to.equal('STARTED');

      res = await api.post(`${P}/legs/${leg.id}/events`).set('X-Access-Token', key).send({ event: 'START_FINISHING', time: t.ctx.clock.now().toISOString() });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      conforms(spec, res, '/legs/{id}/events', 'post');
      expect(res.body.state).to.equal('START_FINISHING');
      expect((await api.get(`${P}/bookings/${b.id}`).set('X-Access-Token', key)).body.state).to.equal('START_FINISHING');

      t.ctx.clock.advance(150_000); // 3.5 minutes after the start: 4 started minutes
      res = await api
        .post(`${P}/legs/${leg.id}/events`)
        .set('X-Access-Token', key)
        .send({
          event: 'FINISH',
          time: t.ctx.clock.now().toISOString(),
          userLocation: { coordinates: { lng: v.lng, lat: v.lat + 0.002 } },
          url: ['https://example.com/p.jpg'],
        });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      conforms(spec, res, '/legs/{id}/events', 'post');
      expect(res.body.state).to.equal('FINISHED');
      expect(res.body.pricing.estimated).to.equal(false);
      expect(res.body.pricing.parts.map((p: any) => [p.type, p.amount, p.units])).to.deep.equal([
        ['FIXED', 1, undefined],
        ['FLEX', 1, 4],
      ]);
      expect(res.body.actualArrivalTime).to.equal('2026-11-21T10:03:30Z');

      res = await api.get(`${P}/bookings/${b.id}`).set('X-Access-Token', key);
      conforms(spec, res, '/bookings/{id}', 'get');
      expect(res.body.state).to.equal('FINISHED');
      expect(res.body.legs[0].pricing).to.deep.equal({
        estimated: false,
        parts: [
          { amount: 1, currencyCode: 'EUR', vatRate: 21, type: 'FIXED', name: 'unlock fee' },
          { amount: 1, currencyCode: 'EUR', vatRate: 21, type: 'FLEX', unitType: 'MINUTE', units: 4, name: 'price per minute' },
        ],
      });
      const ended = await t.ctx.db.one(`SELECT state, total_amount FROM rentals WHERE vehicle_id = $1`, [v.id]);
      expect(ended).to.deep.equal({ state: 'ENDED', total_amount: 200 });
    });

    it('finds the customer again by externalId and accepts the printed code and the GBFS id as asset ids', async () => {
      const a = await insertTompVehicle(t.ctx.db, zoneId);
      const b = await insertTompVehicle(t.ctx.db, zoneId);
      const first = await api
        .post(`${P}/bookings/one-stop`)
        .set('X-Access-Token', maas.key)
        .send(oneStopBody(a.code.toLowerCase(), a, 'rider-2'));
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      expect(first.body.legs[0].asset.id).to.equal(a.id);
      const fin = await api.post(`${P}/legs/${first.body.legs[0].id}/events`).set('X-Access-Token', maas.key).send({ event: 'FINISH' });
      expect(fin.status).to.equal(200);
      const second = await api
        .post(`${P}/bookings/one-stop`)
        .set('X-Access-Token', maas.key)
        .send(oneStopBody(b.gbfsId, b, 'rider-2'));
      expect(second.status, JSON.stringify(second.body)).to.equal(201);
      const users = await t.ctx.db.many(`SELECT id FROM users WHERE partner_id = $1 AND external_id = 'rider-2'`, [maas.id]);
      expect(users).to.have.length(1);
    });

    it("another partner's bookings and legs are 404", async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const booked = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', maas.key).send(oneStopBody(v.id, v));
      expect(booked.status).to.equal(201);
      const other = await insertMaasPartner(t.ctx.db);
      expect((await api.get(`${P}/bookings/${booked.body.id}`).set('X-Access-Token', other.key)).status).to.equal(404);
      expect((await api.get(`${P}/legs/${booked.body.legs[0].id}`).set('X-Access-Token', other.key)).status).to.equal(404);
      expect((await api.post(`${P}/legs/${booked.body.legs[0].id}/events`).set('X-Access-Token', other.key).send({ event: 'FINISH' })).status).to.equal(404);
      expect((await api.get(`${P}/bookings/not-a-uuid`).set('X-Access-Token', maas.key)).status).to.equal(404);
    });
  });

  describe('support', () => {
    let bookingId: string;
    before(async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const res = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', maas.key).send(oneStopBody(v.id, v));
      bookingId = res.body.id;
    });
    const ticket = (id: string) => ({
      id,
      supportType: 'BROKEN_DOWN',
      time: '2026-11-21T09:58:00+01:00',
      contactInformationEndUser: '+34 600 000 000',
      comment: 'brake does not work',
    });

    for (const path of ['/support', '/support/']) {
      it(`POST ${path} stores a ticket and answers PROCESSING`, async () => {
        const res = await api.post(`${P}${path}`).set('X-Access-Token', maas.key).send(ticket(bookingId));
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        conforms(spec, res, '/support/', 'post');
        expect(res.body).to.deep.equal({ ...ticket(bookingId), time: '2026-11-21T08:58:00Z', status: 'PROCESSING' });
      });
    }

    it('stores the ticket', async () => {
      const rows = await t.ctx.db.many(`SELECT support_type, status, occurred_at FROM support_tickets WHERE booking_id = $1`, [bookingId]);
      expect(rows).to.have.length(2);
      expect(rows[0]).to.deep.include({ support_type: 'BROKEN_DOWN', status: 'PROCESSING' });
    });

    it('404 for an unknown booking, 400 for a missing field or a bad supportType', async () => {
      expect((await api.post(`${P}/support`).set('X-Access-Token', maas.key).send(ticket('8f14e45f-ceea-467f-a0e6-0b4a1f2c3d4e'))).status).to.equal(404);
      const { comment: _c, ...missing } = ticket(bookingId);
      const a = await api.post(`${P}/support`).set('X-Access-Token', maas.key).send(missing);
      expect(a.status).to.equal(400);
      expect(a.body.detail).to.contain('comment');
      expect(
        (
          await api
            .post(`${P}/support/`)
            .set('X-Access-Token', maas.key)
            .send({ ...ticket(bookingId), supportType: 'ANGRY' })
        ).status,
      ).to.equal(400);
      expect(
        (
          await api
            .post(`${P}/support/`)
            .set('X-Access-Token', maas.key)
            .send({ ...ticket(bookingId), time: 'yesterday' })
        ).status,
      ).to.equal(400);
    });
  });
});
