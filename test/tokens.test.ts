import { expect } from 'chai';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { basic, insertClient, insertFeedZone, tokenFor } from './support/feed-auth.js';
import { revokeFeedClient } from '../lib/feeds/clients.js';
import { issueFeedToken, verifyFeedToken } from '../api/feeds/access-tokens.js';

const FORM = 'application/x-www-form-urlencoded';

describe('feed tokens (OAuth 2.0 client credentials)', () => {
  const t = useTestContext({ now: '2026-11-21T10:30:00Z' });
  let main: ReturnType<typeof request>;
  let legacy: ReturnType<typeof request>;

  before(async () => {
    await insertFeedZone(t.ctx.db, 'berlin');
    await insertClient(t.ctx.db, 'city-1', 'city', null, 'pä ss:wörd+1');
    await insertClient(t.ctx.db, 'gbfs-1', 'gbfs', ['berlin']);
    await insertClient(t.ctx.db, 'gone', 'city', null);
    await t.ctx.db.query(`UPDATE feed_clients SET revoked_at = '2026-01-01' WHERE client_id = 'gone'`);
    main = request(buildApp(t.ctx).callback());
    legacy = request(buildLegacyApp(t.ctx).callback());
  });

  for (const [host, path] of [
    ['main', '/v1/partner-apis/token'],
    ['legacy', '/token'],
  ] as const) {
    describe(`${host} host ${path}`, () => {
      const agent = () => (host === 'main' ? main : legacy);

      it('issues a bearer token for Basic credentials (URL-decoded per RFC 6749 2.3.1)', async () => {
        const res = await agent().post(path).set('Authorization', basic('city-1', 'pä ss:wörd+1')).type(FORM).send('grant_type=client_credentials');
        expect(res.status).to.equal(200);
        expect(res.headers['cache-control']).to.equal('no-store');
        expect(res.body.token_type).to.equal('bearer');
        expect(res.body.expires_in).to.equal(900);
        expect(res.body.access_token).to.be.a('string');
        const claims = decodeJwt(res.body.access_token);
        expect(claims.sub).to.equal('city-1');
        expect(claims.role).to.equal('city');
        expect(claims.zones).to.equal(null);
        expect(claims.exp! - claims.iat!).to.equal(900);
        expect(claims.iat).to.equal(Date.parse('2026-11-21T10:30:00Z') / 1000);
        expect(claims.jti).to.be.a('string');
      });

      it('accepts body credentials when there is no Authorization header', async () => {
        const res = await agent().post(path).type(FORM).send(`grant_type=client_credentials&client_id=gbfs-1&client_secret=gbfs-1-secret`);
        expect(res.status).to.equal(200);
        expect(decodeJwt(res.body.access_token).zones).to.deep.equal(['berlin']);
      });

      it('rejects both methods at once with invalid_request', async () => {
        const res = await agent()
          .post(path)
          .set('Authorization', basic('gbfs-1', 'gbfs-1-secret'))
          .type(FORM)
          .send('grant_type=client_credentials&client_id=gbfs-1&client_secret=gbfs-1-secret');
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('invalid_request');
      });

      for (const [label, auth] of [
        ['a wrong secret', basic('city-1', 'nope')],
        ['an unknown client', basic('nobody', 'x')],
        ['a revoked client', basic('gone', 'gone-secret')],
        ['a malformed header', 'Basic !!!'],
        ['no credentials', ''],
      ] as const) {
        it(`answers invalid_client 401 with WWW-Authenticate: Basic for ${label}`, async () => {
          const r = agent().post(path).type(FORM);
          if (auth) r.set('Authorization', auth);
          const res = await r.send('grant_type=client_credentials');
          expect(res.status).to.equal(401);
          expect(res.body.error).to.equal('invalid_client');
          expect(res.headers['www-authenticate']).to.match(/^Basic /);
          expect(res.headers['cache-control']).to.equal('no-store');
        });
      }

      it('answers unsupported_grant_type 400 for other grants', async () => {
        const res = await agent().post(path).set('Authorization', basic('city-1', 'pä ss:wörd+1')).type(FORM).send('grant_type=password&username=a&password=b');
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('unsupported_grant_type');
      });

      for (const [label, type, body] of [
        ['a missing grant_type', FORM, 'scope=x'],
        ['a repeated grant_type', FORM, 'grant_type=client_credentials&grant_type=client_credentials'],
        ['a JSON body', 'application/json', '{"grant_type":"client_credentials"}'],
        ['bad percent-encoding', FORM, 'grant_type=%E0%A4%A'],
      ] as const) {
        it(`answers invalid_request 400 for ${label}`, async () => {
          const res = await agent().post(path).set('Authorization', basic('city-1', 'pä ss:wörd+1')).type(type).send(body);
          expect(res.status).to.equal(400);
          expect(res.body.error).to.equal('invalid_request');
        });
      }
    });
  }

  describe('verification', () => {
    it('accepts a fresh token and rejects it once expired (by the clock)', async () => {
      const { accessToken } = await issueFeedToken(t.ctx.config, t.ctx.clock, { clientId: 'city-1', role: 'city', zones: null });
      expect((await verifyFeedToken(t.ctx.config, t.ctx.clock, accessToken)).ok).to.equal(true);
      const later = { now: () => new Date(t.ctx.clock.now().getTime() + 900_000) };
      expect(await verifyFeedToken(t.ctx.config, later, accessToken)).to.deep.equal({ ok: false, reason: 'expired' });
    });

    it('rejects tampered tokens and tokens signed with another secret', async () => {
      const token = await tokenFor(t.ctx, 'city-1', 'city');
      const [h, , s] = token.split('.');
      const forged = Buffer.from(JSON.stringify({ ...decodeJwt(token), role: 'city', zones: null, sub: 'x' })).toString('base64url');
      expect((await verifyFeedToken(t.ctx.config, t.ctx.clock, `${h}.${forged}.${s}`)).ok).to.equal(false);
      const other = { ...t.ctx.config, signingSecret: 'another-secret-entirely' };
      expect((await verifyFeedToken(other, t.ctx.clock, token)).ok).to.equal(false);
      expect(await verifyFeedToken(t.ctx.config, t.ctx.clock, 'not.a.jwt!')).to.deep.equal({ ok: false, reason: 'malformed' });
    });

    it('stops accepting tokens of a revoked client within one refresh (30 s by the clock)', async () => {
      await insertClient(t.ctx.db, 'soon-gone', 'city');
      const app = request(buildApp(t.ctx).callback());
      const token = await tokenFor(t.ctx, 'soon-gone', 'city');
      const url = '/v1/partner-apis/mds/berlin/trips?end_time=2026-11-21T08';
      expect((await app.get(url).set('Authorization', `Bearer ${token}`)).status).to.not.equal(401);
      await revokeFeedClient(t.ctx.db, 'soon-gone', t.ctx.clock.now());
      t.ctx.clock.advance(30_001);
      const res = await app.get(url).set('Authorization', `Bearer ${token}`);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(/^Bearer .*error="invalid_token"/);
    });

    it('refuses a well-signed token whose client does not exist, or no longer exists, with 401', async () => {
      const app = request(buildApp(t.ctx).callback());
      const url = '/v1/partner-apis/mds/berlin/trips?end_time=2026-11-21T08';
      // signed with the real secret, every zone, but for a client that was never created
      const ghost = (await issueFeedToken(t.ctx.config, t.ctx.clock, { clientId: 'never-created', role: 'city', zones: null })).accessToken;
      for (const res of [
        await app.get(url).set('Authorization', `Bearer ${ghost}`),
        await app.get('/gbfs/v2/gbfs.json').set('Authorization', `Bearer ${ghost}`),
      ]) {
        expect(res.status, res.text).to.equal(401);
        expect(res.body.error).to.equal('invalid_token');
        expect(res.headers['www-authenticate']).to.match(/^Bearer .*error="invalid_token"/);
      }
      // a client created a moment ago works at once (an id not loaded yet is looked up)
      await insertClient(t.ctx.db, 'just-made', 'city');
      const fresh = (await issueFeedToken(t.ctx.config, t.ctx.clock, { clientId: 'just-made', role: 'city', zones: null })).accessToken;
      expect((await app.get(url).set('Authorization', `Bearer ${fresh}`)).status).to.not.equal(401);
      // deleted: its tokens stop within one refresh, like a revoked client's
      await t.ctx.db.query(`DELETE FROM feed_clients WHERE client_id = 'just-made'`);
      t.ctx.clock.advance(30_001);
      expect((await app.get(url).set('Authorization', `Bearer ${fresh}`)).status).to.equal(401);
    });
  });
});
