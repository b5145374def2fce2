/**
 * Hostile input on every feed endpoint of both hosts (property-based, fixed seed): odd zone ids
 * (`..%2F`, `%00`, unicode, very long), impossible time-hours (2026-02-30T10, hour 24), hostile
 * millisecond windows (longer than two weeks, negative, 1e308, NaN), odd device ids, hostile Accept
 * headers and bearer tokens, and hostile token requests. Feed answers are 2xx/202/304 or a 4xx with the
 * MDS error body `{error, error_description, error_details}`; token answers a 4xx with an RFC 6749
 * body. Never a 5xx, never a stack trace or SQL text.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import supertest from 'supertest';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { basic, insertClient, insertFeedZone, tokenFor } from './support/feed-auth.js';
import { FC, IMPOSSIBLE_TIMES, NUMBERISH, expectSafe, hostileHeader, hostileSegment, hostileString } from './support/figures.js';

const ROW = 'hostile feeds';
const MDS20 = 'application/vnd.mds+json;version=2.0';
const RFC6749 = ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'];

describe('hostile input: feeds (MDS, GBFS, insurance, legacy, token)', function () {
  this.timeout(120000);
  const t = useTestContext({ now: '2026-11-21T10:30:00Z' });
  let main: supertest.Agent;
  let legacy: supertest.Agent;
  let token: string;
  let insurerToken: string;
  let zone: string;

  const checkFeed = (res: supertest.Response, what: string, allowed: number[]) =>
    expectSafe(ROW, res, what, () => {
      if (res.status < 300 && res.status !== 202) return;
      if (res.status === 304) return;
      expect(allowed, `${what} → ${res.status} ${res.text.slice(0, 200)}`).to.include(res.status);
      expect(res.body.error, what).to.be.a('string');
      expect(res.body.error_description, what).to.be.a('string');
      expect(res.body.error_details, what).to.be.an('array');
    });

  const checkToken = (res: supertest.Response, what: string) =>
    expectSafe(ROW, res, what, () => {
      expect([400, 401, 413], `${what} → ${res.status} ${res.text.slice(0, 200)}`).to.include(res.status);
      expect(RFC6749, what).to.include(res.body.error);
      if (res.body.error_description !== undefined) expect(res.body.error_description).to.be.a('string');
      expect(res.get('Cache-Control')).to.contain('no-store');
    });

  before(async () => {
    main = supertest.agent(buildApp(t.ctx).callback());
    legacy = supertest.agent(buildLegacyApp(t.ctx).callback());
    zone = await insertFeedZone(t.ctx.db, 'hostile-zone');
    await insertClient(t.ctx.db, 'hostile-city', 'city');
    await insertClient(t.ctx.db, 'hostile-ins', 'insurer');
    token = await tokenFor(t.ctx, 'hostile-city', 'city');
    insurerToken = await tokenFor(t.ctx, 'hostile-ins', 'insurer');
  });

  const mainRoutes = (z: string) => [
    `/v1/partner-apis/mds/${z}/trips?end_time=2026-11-21T08`,
    `/v1/partner-apis/mds/${z}/events/historical?event_time=2026-11-21T08`,
    `/v1/partner-apis/mds/${z}/events/recent?start_time=1763700000000&end_time=1763710000000`,
    `/v1/partner-apis/mds/${z}/vehicles`,
    `/v1/partner-apis/mds/${z}/vehicles/status`,
    `/v1/partner-apis/gbfs/${z}/gbfs.json`,
    `/v1/partner-apis/gbfs/${z}/vehicle_status.json`,
    `/v1/partner-apis/insurance/${z}/trips?end_time=2026-11-21T08`,
  ];
  const legacyRoutes = (z: string) => [`/en/${z}/trips?end_time=2026-11-21T08`, `/en/${z}/status_changes?event_time=2026-11-21T08`, `/en/${z}/vehicles`];

  it('odd zone ids on every feed endpoint: 400 or 404', async () => {
    await fc.assert(
      fc.asyncProperty(hostileSegment, fc.nat(7), async (z, i) => {
        const path = mainRoutes(z)[i];
        const insurance = path.includes('/insurance/');
        const res = await main
          .get(path)
          .set('Authorization', `Bearer ${insurance ? insurerToken : token}`)
          .set('Accept', insurance ? 'application/vnd.insurance+json;version=2.0' : MDS20);
        checkFeed(res, `GET ${path.slice(0, 200)}`, [400, 404]);
        const lpath = legacyRoutes(z)[i % 3];
        checkFeed(
          await legacy.get(lpath).set('Authorization', `Bearer ${token}`).set('Accept', 'application/vnd.mds+json;version=1.2'),
          `legacy GET ${lpath.slice(0, 200)}`,
          [400, 404],
        );
        const epath = `/en/${z}/events?start_time=1763700000000&end_time=1763710000000`;
        checkFeed(
          await legacy.post(epath).set('Authorization', `Bearer ${token}`).set('Accept', 'application/vnd.mds+json;version=1.2'),
          `legacy POST ${epath.slice(0, 200)}`,
          [400, 404],
        );
      }),
      FC,
    );
  });

  it('time-hours: impossible dates and hours are 400 on trips, historical events, insurance and legacy', async () => {
    const hours = fc.oneof(fc.constantFrom(...IMPOSSIBLE_TIMES, ...NUMBERISH), hostileString);
    const routes: Array<[supertest.Agent | 'legacy', string, string, string]> = [
      ['main', `/v1/partner-apis/mds/${zone}/trips`, 'end_time', MDS20],
      ['main', `/v1/partner-apis/mds/${zone}/events/historical`, 'event_time', MDS20],
      ['main', `/v1/partner-apis/insurance/${zone}/trips`, 'end_time', 'application/vnd.insurance+json;version=2.0'],
      ['legacy', `/en/${zone}/trips`, 'end_time', 'application/vnd.mds+json;version=1.2'],
      ['legacy', `/en/${zone}/status_changes`, 'event_time', 'application/vnd.mds.provider+json;version=0.4'],
    ] as never;
    await fc.assert(
      fc.asyncProperty(hours, fc.constantFrom(...routes), async (h, [host, path, param, accept]) => {
        const agent = host === 'legacy' ? legacy : main;
        const bearer = path.includes('/insurance/') ? insurerToken : token;
        const res = await agent
          .get(`${path}?${param}=${encodeURIComponent(h.replace(/[\ud800-\udfff]/g, '?'))}`)
          .set('Authorization', `Bearer ${bearer}`)
          .set('Accept', accept);
        checkFeed(res, `${path}?${param}=${JSON.stringify(h).slice(0, 80)}`, [400, 404]);
        if (IMPOSSIBLE_TIMES.includes(h) && !/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(h)) expect(res.status, h).to.equal(400);
      }),
      FC,
    );
    for (const h of ['2026-02-30T10', '2026-01-01T24', '2025-02-29T10', '2026-13-01T00']) {
      const res = await main.get(`/v1/partner-apis/mds/${zone}/trips?end_time=${h}`).set('Authorization', `Bearer ${token}`).set('Accept', MDS20);
      checkFeed(res, h, [400]);
      expect(res.status, h).to.equal(400);
    }
  });

  it('millisecond windows: negative, huge, NaN, reversed and longer than two weeks are 400', async () => {
    const now = t.ctx.clock.now().getTime();
    const ms = fc.oneof(
      fc.constantFrom(...NUMBERISH, String(now), String(now - 15 * 86400_000), String(now + 1), '0', String(8.64e15 + 1)),
      fc.integer({ min: now - 30 * 86400_000, max: now + 86400_000 }).map(String),
      hostileString,
    );
    await fc.assert(
      fc.asyncProperty(ms, ms, fc.boolean(), async (a, b, onLegacy) => {
        const qs = `start_time=${encodeURIComponent(a.replace(/[\ud800-\udfff]/g, '?'))}&end_time=${encodeURIComponent(b.replace(/[\ud800-\udfff]/g, '?'))}`;
        const res = onLegacy
          ? await legacy.post(`/en/${zone}/events?${qs}`).set('Authorization', `Bearer ${token}`).set('Accept', 'application/vnd.mds+json;version=1.2')
          : await main.get(`/v1/partner-apis/mds/${zone}/events/recent?${qs}`).set('Authorization', `Bearer ${token}`).set('Accept', MDS20);
        checkFeed(res, `${onLegacy ? 'legacy events' : 'events/recent'}?${qs.slice(0, 200)}`, [400]);
        const [s, e] = [Number(a), Number(b)];
        const validWindow = /^\d+$/.test(a) && /^\d+$/.test(b) && s < e && e - s <= 14 * 86400_000 && s >= now - 14 * 86400_000;
        if (!validWindow) expect(res.status, qs).to.equal(400);
      }),
      FC,
    );
    const tooLong = await main
      .get(`/v1/partner-apis/mds/${zone}/events/recent?start_time=${now - 14 * 86400_000 + 1000}&end_time=${now + 86400_000}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', MDS20);
    checkFeed(tooLong, 'window of 15 days', [400]);
    expect(tooLong.status).to.equal(400);
  });

  it('odd device ids, GBFS file names and Accept headers', async () => {
    await fc.assert(
      fc.asyncProperty(hostileSegment, fc.constantFrom('vehicles', 'vehicles/status'), async (id, kind) => {
        const res = await main.get(`/v1/partner-apis/mds/${zone}/${kind}/${id}`).set('Authorization', `Bearer ${token}`).set('Accept', MDS20);
        checkFeed(res, `${kind}/${id.slice(0, 80)}`, [400, 404]);
      }),
      FC,
    );
    await fc.assert(
      fc.asyncProperty(hostileSegment, fc.boolean(), async (file, v2) => {
        const path = v2 ? `/gbfs/v2/${file}.json` : `/v1/partner-apis/gbfs/${zone}/${file}.json`;
        checkFeed(await main.get(path).set('Authorization', `Bearer ${token}`), `GET ${path.slice(0, 200)}`, [400, 403, 404]);
        checkFeed(
          await main.get(path.replace(/\.json$/, '')).set('Authorization', `Bearer ${token}`),
          `GET ${path.slice(0, 200)} (no .json)`,
          [400, 403, 404, 405],
        );
      }),
      FC,
    );
    await fc.assert(
      fc.asyncProperty(hostileHeader, fc.boolean(), async (accept, onLegacy) => {
        const res = onLegacy
          ? await legacy.get(`/en/${zone}/vehicles`).set('Authorization', `Bearer ${token}`).set('Accept', accept)
          : await main.get(`/v1/partner-apis/mds/${zone}/vehicles`).set('Authorization', `Bearer ${token}`).set('Accept', accept);
        checkFeed(res, `Accept: ${accept.slice(0, 80)}`, [400, 406]);
      }),
      FC,
    );
  });

  it('hostile bearer tokens and API keys are 401', async () => {
    await fc.assert(
      fc.asyncProperty(hostileHeader, fc.constantFrom('bearer', 'x-access-token'), async (value, how) => {
        const req = main.get(`/v1/partner-apis/insurance/${zone}/trips?end_time=2026-11-21T08`).set('Accept', 'application/vnd.insurance+json;version=2.0');
        const res = how === 'bearer' ? await req.set('Authorization', `Bearer ${value}`) : await req.set('X-Access-Token', value || ' ');
        checkFeed(res, `${how} ${value.slice(0, 60)}`, [401]);
        expect(res.status).to.equal(401);
        const gbfs = await main.get('/gbfs/v2/gbfs.json').set('Authorization', `Bearer ${value}`);
        checkFeed(gbfs, `gbfs v2 bearer ${value.slice(0, 60)}`, [401]);
        expect(gbfs.status).to.equal(401);
      }),
      FC,
    );
  });

  it('token endpoints: hostile forms, Basic headers and oversized bodies are RFC 6749 errors', async () => {
    const form = fc.oneof(
      hostileString.map((s) => s.replace(/[\ud800-\udfff]/g, '?')),
      fc
        .dictionary(
          fc.constantFrom('grant_type', 'client_id', 'client_secret', 'scope', 'x'),
          hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '?'))),
          { maxKeys: 4 },
        )
        .map((d) =>
          Object.entries(d)
            .map(([k, v]) => `${k}=${v}`)
            .join('&'),
        ),
      fc.constantFrom(
        'grant_type=client_credentials&grant_type=client_credentials',
        'grant_type=%ZZ',
        'grant_type=client_credentials&client_id=hostile-city&client_secret=%00',
      ),
    );
    const auth = fc.oneof(
      fc.constant(undefined),
      hostileHeader.map((h) => `Basic ${h}`),
      fc.tuple(hostileString, hostileString).map(([id, secret]) => basic(id.replace(/[\ud800-\udfff]/g, '?'), secret.replace(/[\ud800-\udfff]/g, '?'))),
      fc.constant(basic('hostile-city', 'wrong-secret')),
      hostileHeader,
    );
    await fc.assert(
      fc.asyncProperty(
        form,
        auth,
        fc.constantFrom('application/x-www-form-urlencoded', 'application/json', 'text/plain'),
        fc.boolean(),
        async (body, authorization, type, onLegacy) => {
          const agent = onLegacy ? legacy : main;
          let req = agent.post(onLegacy ? '/token' : '/v1/partner-apis/token').set('Content-Type', type);
          if (authorization !== undefined) req = req.set('Authorization', authorization);
          checkToken(await req.send(body), `token ${type} ${authorization?.slice(0, 60)} ${body.slice(0, 100)}`);
        },
      ),
      FC,
    );
    for (const [agent, path] of [
      [main, '/v1/partner-apis/token'],
      [legacy, '/token'],
    ] as const) {
      const big = `grant_type=client_credentials&x=${'a'.repeat(t.ctx.config.maxBodyBytes)}`;
      // the token endpoint answers an oversized form as RFC 6749 invalid_request (400), not a bare 413
      checkToken(await agent.post(path).set('Authorization', basic('hostile-city', 'hostile-city-secret')).type('form').send(big), `${path} big`);
    }
  });
});
