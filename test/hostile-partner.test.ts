/**
 * Hostile input on every endpoint of the partner rental API (property-based, fixed seed): malformed
 * JSON, wrong types, missing and extra fields, huge bodies (413), invalid and non-v4 UUIDs, odd zone
 * ids and vehicle codes, hostile query parameters and signed-URL parameters. Every answer is 2xx
 * (the input happened to be valid) or a 4xx as a JSON:API error `{errors:[{status,code,title,detail}]}`;
 * never a 5xx, never a stack trace or SQL text.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import supertest from 'supertest';
import { buildApp, listenerOf } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type ZoneFixture } from './support/partner-fixtures.js';
import { FC, everyField, expectSafe, hostileHeader, hostileSegment, hostileString, malformedJson, mutatedBody, postChunked } from './support/figures.js';

const ROW = 'hostile partner';

describe('hostile input: partner rental API', function () {
  this.timeout(120000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  let api: supertest.Agent;
  let key: string;
  let partnerId: string;
  let zone: ZoneFixture;
  let userId: string;
  let vehicle: { id: string; code: string; lat: number; lng: number };
  let rentalId: string;

  const check = (res: supertest.Response, what: string, allowed?: number[]) =>
    expectSafe(ROW, res, what, () => {
      if (res.status < 300) return;
      expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 200)}`).to.be.within(400, 499);
      if (allowed) expect(allowed, `${what} → ${res.status} ${res.text.slice(0, 200)}`).to.include(res.status);
      expect(res.type, what).to.equal('application/json');
      expect(res.body.errors, what).to.be.an('array').with.length(1);
      const e = res.body.errors[0];
      expect(e.status, what).to.equal(String(res.status));
      expect(e.code, what)
        .to.be.a('string')
        .and.match(/^[A-Za-z]+$/);
      expect(e.title, what).to.be.a('string');
      expect(e.detail, what).to.be.a('string');
    });

  const send = (method: 'post' | 'patch' | 'put', path: string, body: unknown) =>
    api[method](path)
      .set('X-Auth-Token', key)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(body) ?? 'null');

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    zone = await insertZone(t.ctx.db);
    const p = await insertPartner(t.ctx.db);
    key = p.key;
    partnerId = p.id;
    userId = await insertUser(t.ctx.db, partnerId);
    const v = await insertVehicle(t.ctx.db, zone);
    const started = await send('post', '/v1/rental/start', { userId, vehicleId: v.id });
    expect(started.status, started.text).to.equal(200);
    rentalId = started.body.data[0].id;
    vehicle = await insertVehicle(t.ctx.db, zone);
  });

  it('POST /v1/user/register and PATCH /v1/user/{id}: mutated bodies', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedBody({ email: 'rider@example.com', externalId: 'ext-1' }), async (body) => {
        check(await send('post', '/v1/user/register', body), `register ${JSON.stringify(body)?.slice(0, 200)}`, [400]);
      }),
      FC,
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(userId), hostileSegment), mutatedBody({ email: 'rider2@example.com' }), async (id, body) => {
        check(await send('patch', `/v1/user/${id}`, body), `patch ${id.slice(0, 80)} ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404]);
      }),
      FC,
    );
  });

  it('POST /v1/rental/start and /v1/rental/{id}/end: mutated bodies', async () => {
    const start = {
      userId,
      vehicleId: vehicle.id,
      userStartLocation: { latitude: vehicle.lat, longitude: vehicle.lng },
      userLicenseValidated: true,
      beginnersMode: false,
    };
    await fc.assert(
      fc.asyncProperty(mutatedBody(start), async (body) => {
        // userId has a running rental: even a valid body cannot start (RentalAlreadyExists)
        check(await send('post', '/v1/rental/start', body), `start ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404, 405]);
      }),
      FC,
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(hostileSegment, fc.constant(rentalId)),
        mutatedBody({ userEndLocation: { latitude: zone.lat, longitude: zone.lng } }),
        async (id, body) => {
          check(await send('post', `/v1/rental/${id}/end`, body), `end ${id.slice(0, 80)} ${JSON.stringify(body)?.slice(0, 200)}`, [400, 404, 405]);
        },
      ),
      FC,
    );
  });

  it('every field of every body, in turn: NUL bytes, lone surrogates, huge numbers', async () => {
    const bodies: Array<['post' | 'patch', string, Record<string, unknown>]> = [
      ['post', '/v1/user/register', { email: 'rider@example.com', externalId: 'ext-1' }],
      ['patch', `/v1/user/${userId}`, { email: 'rider2@example.com' }],
      [
        'post',
        '/v1/rental/start',
        { userId, vehicleId: vehicle.id, userStartLocation: { latitude: vehicle.lat, longitude: vehicle.lng }, userLicenseValidated: true },
      ],
    ];
    const broken: string[] = [];
    for (const [method, path, valid] of bodies) {
      for (const body of everyField(valid)) {
        try {
          check(await send(method, path, body), `${path} ${JSON.stringify(body).slice(0, 200)}`, [400, 404, 405]);
        } catch (err) {
          broken.push((err as Error).message.split('\n')[0]);
        }
      }
    }
    // NUL inside an address that otherwise looks valid
    for (const [method, path, body] of [
      ['post', '/v1/user/register', { email: 'ri\u0000der@example.com', externalId: 'e' }],
      ['patch', `/v1/user/${userId}`, { email: 'ri\u0000der@example.com' }],
    ] as const) {
      try {
        check(await send(method, path, body), `${path} ${JSON.stringify(body)}`, [400]);
      } catch (err) {
        broken.push((err as Error).message.split('\n')[0]);
      }
    }
    expect(broken, broken.join('\n')).to.deep.equal([]);
  });

  it('bodies: malformed JSON is 400 InvalidRequestBody, an oversized body 413', async () => {
    const targets: Array<['post' | 'patch', string]> = [
      ['post', '/v1/user/register'],
      ['patch', `/v1/user/${userId}`],
      ['post', '/v1/rental/start'],
      ['post', `/v1/rental/${rentalId}/end`],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), malformedJson, async ([method, path], text) => {
        const res = await api[method](path).set('X-Auth-Token', key).set('Content-Type', 'application/json').send(text);
        check(res, `${path} ${JSON.stringify(text)}`, [400]);
        expect(res.body.errors[0].code).to.equal('InvalidRequestBody');
      }),
      FC,
    );
    const big = JSON.stringify({ email: 'a@b.cd', externalId: 'x'.repeat(t.ctx.config.maxBodyBytes) });
    for (const [method, path] of targets) {
      check(await api[method](path).set('X-Auth-Token', key).set('Content-Type', 'application/json').send(big), `${path} big`, [413]);
      const res = await postChunked(
        listenerOf(buildApp(t.ctx)),
        path,
        { 'X-Auth-Token': key, 'Content-Type': 'application/json' },
        Buffer.from(big),
        method.toUpperCase(),
      );
      check(res as unknown as supertest.Response, `${path} big chunked`, [413]);
    }
  });

  it('GET/DELETE with odd ids, codes and zone ids', async () => {
    const reads = [
      '/v1/user/id/:x',
      '/v1/users/:x',
      '/v1/rental/:x',
      '/v1/rental/user/:x',
      '/v1/rental/user/:x/active',
      '/v1/pricing/vehicle/:x',
      '/v1/vehicles/code/:x',
      '/v1/vehicles/id/:x',
      '/v1/zone/id/:x',
      '/v2/zone/id/:x',
      '/v1/zone/id/:x/areasOccupancy',
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...reads), hostileSegment, async (route, x) => {
        const res = await api.get(route.replace(':x', x)).set('X-Auth-Token', key);
        check(res, `GET ${route} ${x.slice(0, 80)}`, [400, 404]);
      }),
      FC,
    );
    await fc.assert(
      fc.asyncProperty(hostileSegment, async (x) => {
        check(await api.delete(`/v1/user/${x}`).set('X-Auth-Token', key), `DELETE ${x.slice(0, 80)}`, [400, 404]);
      }),
      FC,
    );
  });

  it('GET with hostile query parameters (zoneID, limit, anything)', async () => {
    const params = fc.dictionary(
      fc.constantFrom('zoneID', 'zoneId', 'limit', 'page[size]', 'x'),
      hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '?'))),
      { maxKeys: 3 },
    );
    const paths = ['/v1/vehicles', '/v1/vehicles/', '/v1/zone/info', `/v1/rental/user/${userId}`, `/v1/zone/id/${zone.id}`];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), params, async (path, query) => {
        const qs = Object.entries(query)
          .map(([k, v]) => `${encodeURIComponent(k)}=${v}`)
          .join('&');
        check(await api.get(`${path}?${qs}`).set('X-Auth-Token', key), `GET ${path}?${qs.slice(0, 200)}`, [400, 404]);
      }),
      FC,
    );
    // a zoneID given twice, or as an array, is not a 500 either
    check(await api.get(`/v1/vehicles?zoneID=${zone.id}&zoneID=${zone.id}`).set('X-Auth-Token', key), 'zoneID twice', [400, 404]);
    check(await api.get('/v1/vehicles?zoneID[]=a&zoneID[x]=b').set('X-Auth-Token', key), 'zoneID array', [400, 404]);
  });

  it('signed photo and receipt URLs with hostile ids, expiries and signatures', async () => {
    const q = fc.record({ expires: fc.oneof(hostileString, fc.constant('9999999999')), sig: hostileString }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileSegment, fc.constant(rentalId)), q, async (id, query) => {
        const qs = Object.entries(query)
          .map(([k, v]) => `${k}=${encodeURIComponent(v.replace(/[\ud800-\udfff]/g, '?'))}`)
          .join('&');
        const put = await api
          .put(`/v1/rental/${id}/photo?${qs}`)
          .set('Content-Type', 'image/jpeg')
          .send(Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
        check(put, `PUT photo ${id.slice(0, 80)}?${qs.slice(0, 200)}`, [400, 403, 404, 410]);
        const get = await api.get(`/v1/rental/${id}/receipt?${qs}`);
        check(get, `GET receipt ${id.slice(0, 80)}?${qs.slice(0, 200)}`, [400, 403, 404]);
      }),
      FC,
    );
  });

  it('hostile X-Auth-Token and Authorization values are 401 Unauthorized', async () => {
    await fc.assert(
      fc.asyncProperty(hostileHeader, fc.constantFrom('X-Auth-Token', 'Authorization'), async (token, header) => {
        const value = header === 'Authorization' ? `Bearer ${token}` : token || ' ';
        const res = await api.get('/v1/zone/info').set(header, value);
        check(res, `${header}: ${value.slice(0, 60)}`, [401]);
        expect(res.body.errors[0].code).to.equal('Unauthorized');
      }),
      FC,
    );
  });
});
