/**
 * The auth matrix: every feed route × no token, bad token, expired token, other role, other zone,
 * right token. Files come from the real publishers (engineer E's hourly files, engineer G's GBFS).
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { issueFeedToken } from '../api/feeds/access-tokens.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { publishHour } from '../publisher/publish.js';
import { publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { useTestContext } from './support/context.js';
import { gbfsZone, gbfsVehicle } from './support/gbfs-fixtures.js';
import { expectMds, insertClient, tamperedToken, tokenFor } from './support/feed-auth.js';
import { HOUR, NOW, ROUTES, type Route } from './support/feed-routes.js';

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
