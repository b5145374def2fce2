/**
 * Hostile input on every TOMP endpoint (property-based, fixed seed): malformed JSON, wrong types,
 * missing and extra fields, huge bodies (413), odd ids in paths, hostile query parameters and
 * headers. Every answer is 2xx (the input happened to be valid) or a documented TOMP 4xx as a TOMP
 * error object `{status, detail}`; never a 5xx, never a stack trace or SQL text.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import supertest from 'supertest';
import { buildApp, listenerOf } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';
import { FC, everyField, expectSafe, postChunked, hostileHeader, hostileSegment, hostileString, malformedJson, mutatedBody } from './support/figures.js';

const P = '/edge/tomp';
const ROW = 'hostile tomp';
const TOMP_4XX = [400, 401, 403, 404, 405, 406, 409, 413, 415, 428, 429];

describe('hostile input: TOMP API', function () {
  this.timeout(120000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  let api: supertest.Agent;
  let key: string;
  let vehicle: { id: string; lat: number; lng: number };
  let bookingId: string;
  let legId: string;

  /** The TOMP shape for errors, the documented statuses, no leaks. */
  const check = (res: supertest.Response, what: string, allowed = TOMP_4XX) =>
    expectSafe(ROW, res, what, () => {
      if (res.status < 300) return;
      expect(allowed, `${what} → ${res.status} ${res.text.slice(0, 200)}`).to.include(res.status);
      expect(res.type).to.equal('application/json');
      expect(res.body.status, what).to.equal(res.status);
      expect(res.body.detail, what).to.be.a('string');
    });

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    const zone = await insertTompZone(t.ctx.db);
    key = (await insertMaasPartner(t.ctx.db)).key;
    vehicle = await insertTompVehicle(t.ctx.db, zone);
    const res = await api.post(`${P}/bookings/one-stop`).set('X-Access-Token', key).send(oneStopBody(vehicle.id, vehicle));
    expect(res.status, res.text).to.equal(201);
    bookingId = res.body.id;
    legId = res.body.legs[0].id;
    // a second ready vehicle, so a mutated one-stop body can still name a real asset
    vehicle = await insertTompVehicle(t.ctx.db, zone);
  });

  const post = (path: string) => api.post(`${P}${path}`).set('X-Access-Token', key);
  /** Always as JSON text: supertest cannot send a bare number or string body itself. */
  const postJson = (path: string, body: unknown) =>
    post(path)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(body) ?? 'null');

  it('POST /bookings/one-stop: mutated bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constant(null).chain(() => mutatedBody(oneStopBody(vehicle.id, vehicle))),
        async (body) => {
          const res = await postJson('/bookings/one-stop', body);
          check(res, `one-stop ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404, 406, 409, 428]);
        },
      ),
      FC,
    );
  });

  it('POST endpoints: malformed JSON is 400, an oversized body 413', async () => {
    const paths = ['/bookings/one-stop', `/bookings/${bookingId}/events`, `/legs/${legId}/events`, '/support', '/support/'];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), malformedJson, async (path, text) => {
        const res = await post(path).set('Content-Type', 'application/json').send(text);
        check(res, `${path} ${JSON.stringify(text)}`, [400]);
      }),
      FC,
    );
    for (const path of paths) {
      const big = JSON.stringify({ padding: 'x'.repeat(t.ctx.config.maxBodyBytes) });
      check(await post(path).set('Content-Type', 'application/json').send(big), `${path} big`, [413]);
      // without a Content-Length (chunked): the limit is counted while reading
      const res = await postChunked(
        listenerOf(buildApp(t.ctx)),
        `${P}${path}`,
        { 'X-Access-Token': key, 'Content-Type': 'application/json' },
        Buffer.from(big),
      );
      check(res as unknown as supertest.Response, `${path} big chunked`, [413]);
    }
  });

  it('POST /bookings/{id}/events and /legs/{id}/events: odd ids and mutated bodies', async () => {
    const ids = fc.oneof(hostileSegment, fc.constant(bookingId), fc.constant(legId));
    await fc.assert(
      fc.asyncProperty(ids, mutatedBody({ operation: 'COMMIT', origin: 'MP' }), async (id, body) => {
        const res = await postJson(`/bookings/${id}/events`, body);
        check(res, `booking events ${id.slice(0, 80)} ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404, 409]);
      }),
      FC,
    );
    const legBody = {
      event: 'START_FINISHING',
      time: '2026-11-21T10:00:00Z',
      userLocation: { coordinates: { lng: vehicle.lng, lat: vehicle.lat } },
      asset: { id: 'x', stateOfCharge: 50 },
      url: ['https://example.com/p.jpg'],
    };
    await fc.assert(
      fc.asyncProperty(ids, mutatedBody(legBody), async (id, body) => {
        const res = await postJson(`/legs/${id}/events`, body);
        check(res, `leg events ${id.slice(0, 80)} ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404, 409]);
      }),
      FC,
    );
  });

  it('POST /support: mutated bodies (impossible dates, NUL bytes, huge strings)', async () => {
    const valid = {
      id: bookingId,
      supportType: 'BROKEN_DOWN',
      time: '2026-11-21T09:58:00Z',
      contactInformationEndUser: 'rider@example.com',
      comment: 'it broke',
    };
    await fc.assert(
      fc.asyncProperty(mutatedBody(valid), fc.constantFrom('/support', '/support/'), async (body, path) => {
        const res = await postJson(path, body);
        check(res, `support ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404]);
      }),
      FC,
    );
  });

  it('every field of every body, in turn: NUL bytes, lone surrogates, leap seconds, huge numbers', async () => {
    const bodies: Array<[string, Record<string, unknown>, number[]]> = [
      ['/bookings/one-stop', oneStopBody(vehicle.id, vehicle), [400, 404, 406, 409, 428]],
      [`/bookings/${bookingId}/events`, { operation: 'COMMIT', origin: 'MP' }, [400, 404, 409]],
      [
        `/legs/${legId}/events`,
        { event: 'START_FINISHING', time: '2026-11-21T10:00:00Z', userLocation: { coordinates: { lng: vehicle.lng, lat: vehicle.lat } } },
        [400, 404, 409],
      ],
      [
        '/support',
        { id: bookingId, supportType: 'OTHER', time: '2026-11-21T09:58:00Z', contactInformationEndUser: 'rider@example.com', comment: 'c' },
        [400, 404],
      ],
    ];
    for (const [path, valid, allowed] of bodies) {
      for (const body of everyField(valid)) check(await postJson(path, body), `${path} ${JSON.stringify(body).slice(0, 200)}`, allowed);
    }
  });

  it('GET /bookings/{id} and /legs/{id}: odd ids are 400 or 404', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('bookings', 'legs'), hostileSegment, async (kind, id) => {
        const res = await api.get(`${P}/${kind}/${id}`).set('X-Access-Token', key);
        check(res, `GET ${kind}/${id.slice(0, 80)}`, [400, 404]);
      }),
      FC,
    );
  });

  it('GET /operator/*: hostile query parameters and Accept-Language', async () => {
    const params = fc.dictionary(fc.constantFrom('offset', 'limit', 'regionId', 'stationId', 'x'), hostileString.map(encodeURIComponent), { maxKeys: 3 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('regions', 'meta', 'pricing-plans'), params, hostileHeader, async (what, query, lang) => {
        const qs = Object.entries(query)
          .map(([k, v]) => `${k}=${v}`)
          .join('&');
        const res = await api.get(`${P}/operator/${what}?${qs}`).set('X-Access-Token', key).set('Accept-Language', lang);
        check(res, `GET ${what}?${qs.slice(0, 200)}`, [400]);
        if (res.status < 300) expect(res.get('Content-Language')).to.match(/^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/);
      }),
      FC,
    );
  });

  it('hostile X-Access-Token values are 401, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostileHeader,
        fc.constantFrom('/operator/meta', '/operator/regions', `/bookings/${bookingId}`, `/legs/${legId}`),
        async (token, path) => {
          const res = await api.get(`${P}${path}`).set('X-Access-Token', token || ' ');
          check(res, `token ${token.slice(0, 60)}`, [401]);
          expect(res.status).to.equal(401);
        },
      ),
      FC,
    );
  });
});
