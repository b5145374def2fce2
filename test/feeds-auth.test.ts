/**
 * The auth matrix: every feed route × no token, bad token, expired token, other role, other zone,
 * right token. Files come from the real publishers (engineer E's hourly files, engineer G's GBFS).
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { issueFeedToken } from '../api/feeds/access-tokens.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import type { Role } from '../lib/feeds/roles.js';
import { publishHour } from '../publisher/publish.js';
import { publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { useTestContext } from './support/context.js';
import { gbfsZone, gbfsVehicle } from './support/gbfs-fixtures.js';
import { expectMds, insertClient, tamperedToken, tokenFor } from './support/feed-auth.js';

const NOW = Date.parse('2026-11-21T10:30:00Z');
const HOUR = '2026-11-21T08';
const V12 = 'application/vnd.mds+json;version=1.2';

interface Route {
  name: string;
  host: 'main' | 'legacy';
  method: 'get' | 'post';
  path: (zone: string) => string;
  accept?: string;
  roles: Role[];
  /** false: not zone-scoped in the path (GBFS 2.2 is scoped by the token) */
  zoned: boolean;
  /** the official MDS schema the 200 body must satisfy */
  spec?: string;
}

const ROUTES: Route[] = [
  {
    name: 'MDS trips',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/trips?end_time=${HOUR}`,
    roles: ['city'],
    zoned: true,
    spec: '2.0/micromobility/trips',
  },
  {
    name: 'MDS historical events',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/events/historical?event_time=${HOUR}`,
    roles: ['city'],
    zoned: true,
    spec: '2.0/micromobility/events_historical',
  },
  {
    name: 'MDS recent events',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/events/recent?start_time=${NOW - 3600_000}&end_time=${NOW}`,
    roles: ['city'],
    zoned: true,
    spec: '2.0/micromobility/events_recent',
  },
  {
    name: 'MDS vehicles',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/vehicles`,
    roles: ['city', 'data'],
    zoned: true,
    spec: '2.0/micromobility/vehicles',
  },
  {
    name: 'MDS vehicle status',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/vehicles/status`,
    roles: ['city', 'data'],
    zoned: true,
    spec: '2.0/micromobility/vehicles_status',
  },
  {
    name: 'GBFS 3.0 file',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/gbfs/${z}/vehicle_status.json`,
    roles: ['city', 'gbfs', 'data'],
    zoned: true,
  },
  {
    name: 'GBFS 3.0 discovery',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/gbfs/${z}/gbfs.json`,
    roles: ['city', 'gbfs', 'data'],
    zoned: true,
  },
  { name: 'GBFS 2.2 file', host: 'main', method: 'get', path: () => `/gbfs/v2/free_bike_status.json`, roles: ['city', 'gbfs', 'data'], zoned: false },
  {
    name: 'insurance trips (bearer)',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/insurance/${z}/trips?end_time=${HOUR}`,
    roles: ['insurer'],
    zoned: true,
  },
  {
    name: 'legacy trips',
    host: 'legacy',
    method: 'get',
    path: (z) => `/en/${z}/trips?end_time=${HOUR}`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/trips',
  },
  {
    name: 'legacy status changes',
    host: 'legacy',
    method: 'get',
    path: (z) => `/en/${z}/status_changes?event_time=${HOUR}`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/status_changes',
  },
  {
    name: 'legacy events',
    host: 'legacy',
    method: 'post',
    path: (z) => `/en/${z}/events?start_time=${NOW - 3600_000}&end_time=${NOW}`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/events',
  },
  {
    name: 'legacy vehicles',
    host: 'legacy',
    method: 'get',
    path: (z) => `/en/${z}/vehicles`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/vehicles',
  },
];

describe('feeds: auth matrix', () => {
  const t = useTestContext({ now: new Date(NOW) });
  const hosts = {} as Record<'main' | 'legacy', ReturnType<typeof request>>;

  before(async function () {
    this.timeout(60_000);
    const db = t.ctx.db;
    await gbfsZone(db, { id: 'munich' });
    await gbfsZone(db, { id: 'augsburg', lat: 48.37, lng: 10.9 });
    await db.query(`UPDATE zones SET created_at = '2026-01-01'`);
    await gbfsVehicle(db, 'munich', 48.137, 11.575);
    for (const role of ['city', 'gbfs', 'data', 'insurer'] as const) {
      await insertClient(db, `${role}-munich`, role, ['munich']);
      await insertClient(db, `${role}-augsburg`, role, ['augsburg']);
    }
    for (const f of HOURLY_FEEDS) for (const z of ['munich', 'augsburg']) await publishHour(t.ctx, f, z, new Date(`${HOUR}:00:00Z`));
    const res = await publishGbfsSnapshots(t.ctx);
    expect(res.failed).to.equal(0);
    hosts.main = request(buildApp(t.ctx).callback());
    hosts.legacy = request(buildLegacyApp(t.ctx).callback());
  });

  const call = (r: Route, auth: string | undefined, zone = 'munich') => {
    const req = hosts[r.host][r.method](r.path(zone));
    if (auth !== undefined) req.set('Authorization', auth);
    if (r.accept) req.set('Accept', r.accept);
    return req;
  };

  for (const r of ROUTES) {
    describe(r.name, () => {
      it('no token → 401 with WWW-Authenticate: Bearer', async () => {
        const res = await call(r, undefined);
        expect(res.status).to.equal(401);
        expect(res.headers['www-authenticate']).to.match(/^Bearer realm=/);
        expect(res.body).to.have.keys('error', 'error_description', 'error_details');
      });

      it('bad token → 401 invalid_token', async () => {
        for (const auth of [
          'Bearer nonsense',
          'Bearer a.b.c',
          'Basic Zm9vOmJhcg==',
          `Bearer ${tamperedToken(await tokenFor(t.ctx, `${r.roles[0]}-munich`, r.roles[0], ['munich']))}`,
        ]) {
          const res = await call(r, auth);
          expect(res.status, auth).to.equal(401);
          expect(res.headers['www-authenticate']).to.match(/^Bearer .*error="invalid_token"/);
        }
      });

      it('expired token → 401 invalid_token', async () => {
        const past = { now: () => new Date(NOW - t.ctx.config.tokenTtlSeconds * 1000 - 1000) };
        const { accessToken } = await issueFeedToken(t.ctx.config, past, { clientId: `${r.roles[0]}-munich`, role: r.roles[0], zones: ['munich'] });
        const res = await call(r, `Bearer ${accessToken}`);
        expect(res.status).to.equal(401);
        expect(res.headers['www-authenticate']).to.match(/error="invalid_token"/);
        expect(res.body.error_description).to.match(/expired/);
      });

      const others = (['city', 'gbfs', 'data', 'insurer'] as const).filter((x) => !r.roles.includes(x));
      for (const other of others) {
        it(`other role (${other}) → 403`, async () => {
          const res = await call(r, `Bearer ${await tokenFor(t.ctx, `${other}-munich`, other, ['munich'])}`);
          expect(res.status).to.equal(403);
          expect(res.body.error).to.equal('insufficient_scope');
        });
      }

      if (r.zoned) {
        it('other zone → 403; unknown zone → 404', async () => {
          const token = `Bearer ${await tokenFor(t.ctx, `${r.roles[0]}-augsburg`, r.roles[0], ['augsburg'])}`;
          expect((await call(r, token, 'munich')).status).to.equal(403);
          expect((await call(r, token, 'atlantis')).status).to.equal(404);
        });
      }

      for (const role of r.roles) {
        it(`right token (${role}) → 200`, async () => {
          const res = await call(r, `Bearer ${await tokenFor(t.ctx, `${role}-munich`, role, ['munich'])}`);
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          if (r.spec) expectMds(r.spec, res.body);
        });
      }
    });
  }
});
