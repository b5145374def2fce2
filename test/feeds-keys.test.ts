/**
 * Feed clients' API keys (lib/feeds/keys.ts, api/feeds/auth.ts): `X-Access-Token: <key>` opens what
 * its client's tokens open, on every feed route of both hosts (MDS 2.0 realtime and files, GBFS 3.0
 * and 2.2, insurance, legacy 1.2 / 0.4), with the client's role and zones; gbfs.json's URLs work
 * with the same header; an unknown, revoked or orphaned key is a 401 with WWW-Authenticate, and a
 * revocation is seen within one refresh, by the clock here and across two real API processes
 * below; the hot file path answers a key from its caches as it does a token.
 */
import { expect } from 'chai';
import request from 'supertest';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Koa from 'koa';
import { buildApp, buildLegacyApp, withHotPath } from '../api/app.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { createFeedKey, revokeFeedKey } from '../lib/feeds/keys.js';
import { revokeFeedClient } from '../lib/feeds/clients.js';
import { publishHour } from '../publisher/publish.js';
import { publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { useTestContext } from './support/context.js';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { startApiProcess, type ApiProcess } from './support/api-process.js';
import { gbfsZone, gbfsVehicle } from './support/gbfs-fixtures.js';
import { expectMds, insertClient, insertFeedZone, publishHour as publishFixtureHour, tokenFor } from './support/feed-auth.js';
import { createClientKey, createKey } from '../ops/admin/credentials.js';
import { HOUR, NOW, ROUTES, type Route } from './support/feed-routes.js';

const V04 = 'application/vnd.mds.provider+json;version=0.4';

/** The matrix's routes, and the legacy host's in 0.4 as well. */
const KEY_ROUTES: Route[] = [
  ...ROUTES,
  ...ROUTES.filter((r) => r.host === 'legacy').map((r) => ({
    ...r,
    name: `${r.name} (0.4)`,
    accept: V04,
    // 0.4.1/events.json does not compile upstream; its records are status_changes' (specs/mds/README.md)
    spec: r.spec?.replace('1.2.0/events', '0.4.1/status_changes').replace('1.2.0', '0.4.1'),
  })),
];

describe('feeds: API keys (X-Access-Token) of feed clients', () => {
  const t = useTestContext({ now: new Date(NOW) });
  const hosts = {} as Record<'main' | 'legacy', ReturnType<typeof request>>;
  const keys = new Map<string, string>();
  const keyOf = (clientId: string) => keys.get(clientId)!;

  before(async function () {
    this.timeout(60_000);
    const db = t.ctx.db;
    await gbfsZone(db, { id: 'munich' });
    await gbfsZone(db, { id: 'augsburg', lat: 48.37, lng: 10.9 });
    await db.query(`UPDATE zones SET created_at = '2026-01-01'`);
    await gbfsVehicle(db, 'munich', 48.137, 11.575);
    for (const role of ['city', 'gbfs', 'data', 'insurer'] as const) {
      for (const zone of ['munich', 'augsburg']) {
        await insertClient(db, `${role}-${zone}`, role, [zone]);
        keys.set(`${role}-${zone}`, (await createFeedKey(db, `${role}-${zone}`, 'test')).key);
      }
    }
    for (const f of HOURLY_FEEDS) for (const z of ['munich', 'augsburg']) await publishHour(t.ctx, f, z, new Date(`${HOUR}:00:00Z`));
    expect((await publishGbfsSnapshots(t.ctx)).failed).to.equal(0);
    hosts.main = request(buildApp(t.ctx).callback());
    hosts.legacy = request(buildLegacyApp(t.ctx).callback());
  });

  const call = (r: Route, key: string | undefined, zone = 'munich') => {
    const req = hosts[r.host][r.method](r.path(zone));
    if (key !== undefined) req.set('X-Access-Token', key);
    if (r.accept) req.set('Accept', r.accept);
    return req;
  };

  for (const r of KEY_ROUTES) {
    describe(r.name, () => {
      for (const role of r.roles) {
        it(`a key of a ${role} client → 200`, async () => {
          const res = await call(r, keyOf(`${role}-munich`));
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          if (r.spec) expectMds(r.spec, res.body);
        });
      }
      const others = (['city', 'gbfs', 'data', 'insurer'] as const).filter((x) => !r.roles.includes(x));
      if (others.length)
        it(`a key of another role (${others.join(', ')}) → 403 insufficient_scope`, async () => {
          for (const other of others) {
            const res = await call(r, keyOf(`${other}-munich`));
            expect(res.status, other).to.equal(403);
            expect(res.body.error).to.equal('insufficient_scope');
          }
        });
      if (r.zoned)
        it('a key of a client of another zone → 403; an unknown zone → 404', async () => {
          const key = keyOf(`${r.roles[0]}-augsburg`);
          const other = await call(r, key, 'munich');
          expect(other.status).to.equal(403);
          expect(other.body).to.include({ error: 'insufficient_scope' });
          expect(other.body.error_description).to.match(/outside the scope/);
          expect((await call(r, key, 'atlantis')).status).to.equal(404);
        });
      it('an unknown key → 401 invalid_token with WWW-Authenticate; a key and a token at once → 400', async () => {
        for (const key of ['fk_not-a-key-at-all-0000000000000000000000000000', 'short', 'x'.repeat(300)]) {
          const res = await call(r, key);
          expect(res.status, key).to.equal(401);
          expect(res.body.error).to.equal('invalid_token');
          expect(res.headers['www-authenticate']).to.match(/^Bearer realm="feeds", error="invalid_token"/);
        }
        const both = await call(r, keyOf(`${r.roles[0]}-munich`)).set('Authorization', `Bearer ${await tokenFor(t.ctx, `${r.roles[0]}-munich`, r.roles[0])}`);
        expect(both.status).to.equal(400);
        expect(both.body.error_details[0]).to.match(/not both/);
      });
    });
  }

  it('the insurance feed still takes an insurer partner’s key, and refuses a key of another API with 403 naming it', async () => {
    const partner = await createKey(t.ctx.db, 'Keys Test Insurer', 'insurance');
    const url = `/v1/partner-apis/insurance/munich/trips?end_time=${HOUR}`;
    expect((await hosts.main.get(url).set('X-Access-Token', partner.key)).status).to.equal(200);
    const tomp = await createKey(t.ctx.db, 'Keys Test MaaS', 'tomp');
    const res = await hosts.main.get(url).set('X-Access-Token', tomp.key);
    expect(res.status).to.equal(403);
    expect(res.body.error_description).to.match(/TOMP/);
  });

  for (const [version, discovery] of [
    ['3.0', '/v1/partner-apis/gbfs/munich/gbfs.json'],
    ['2.2', '/gbfs/v2/gbfs.json'],
  ] as const) {
    it(`GBFS ${version}: every URL gbfs.json lists answers the same X-Access-Token header`, async () => {
      const key = keyOf('gbfs-munich');
      const res = await hosts.main.get(discovery).set('X-Access-Token', key);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const feeds: Array<{ name: string; url: string }> =
        version === '3.0' ? res.body.data.feeds : Object.values(res.body.data as Record<string, { feeds: Array<{ name: string; url: string }> }>)[0].feeds;
      expect(feeds.length).to.be.greaterThan(3);
      for (const f of feeds) {
        const u = new URL(f.url);
        expect(`${u.protocol}//${u.host}`, 'the main host').to.equal(t.ctx.config.publicBaseUrl);
        const file = await hosts.main.get(u.pathname).set('X-Access-Token', key);
        expect(file.status, `${f.name}: ${JSON.stringify(file.body)}`).to.equal(200);
        expect(file.body.version).to.equal(version);
      }
    });
  }

  it('GBFS 3.0 manifest.json lists the key’s client’s zones', async () => {
    const res = await hosts.main.get('/v1/partner-apis/gbfs/manifest.json').set('X-Access-Token', keyOf('city-munich'));
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(JSON.stringify(res.body.data)).to.include('/gbfs/munich/gbfs.json').and.not.include('augsburg');
  });

  describe('revocation and creation (the manual clock, one process)', () => {
    const url = `/v1/partner-apis/mds/munich/vehicles`;
    const ask = (app: ReturnType<typeof request>, key: string) => app.get(url).set('X-Access-Token', key);

    it('a key created a moment ago works at once; revoked, it is refused within one refresh (30 s by the clock)', async () => {
      const app = request(buildApp(t.ctx).callback());
      await ask(app, keyOf('city-munich')); // the set is loaded
      await insertClient(t.ctx.db, 'fresh-city', 'city', ['munich']);
      const made = await createFeedKey(t.ctx.db, 'fresh-city');
      expect((await ask(app, made.key)).status, 'not in the loaded set: looked up').to.equal(200);
      await revokeFeedKey(t.ctx.db, made.id, t.ctx.clock.now());
      expect((await ask(app, made.key)).status, 'until the refresh').to.equal(200);
      t.ctx.clock.advance(30_001);
      const res = await ask(app, made.key);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(/^Bearer .*error="invalid_token"/);
      expect(res.body.error_description).to.match(/revoked/);
      // its last use was recorded at the refresh, not per request
      const row = await t.ctx.db.one<{ last_used_at: Date | null }>('SELECT last_used_at FROM feed_client_keys WHERE id = $1', [made.id]);
      expect(row.last_used_at).to.be.instanceOf(Date);
    });

    it('revoking the client stops its keys; deleting it deletes them', async () => {
      const app = request(buildApp(t.ctx).callback());
      await insertClient(t.ctx.db, 'doomed-city', 'city', ['munich']);
      const a = await createFeedKey(t.ctx.db, 'doomed-city');
      await insertClient(t.ctx.db, 'deleted-city', 'city', ['munich']);
      const b = await createFeedKey(t.ctx.db, 'deleted-city');
      expect((await ask(app, a.key)).status).to.equal(200);
      expect((await ask(app, b.key)).status).to.equal(200);
      await revokeFeedClient(t.ctx.db, 'doomed-city', t.ctx.clock.now());
      await t.ctx.db.query(`DELETE FROM feed_clients WHERE client_id = 'deleted-city'`);
      t.ctx.clock.advance(30_001);
      expect((await ask(app, a.key)).status).to.equal(401);
      expect((await ask(app, b.key)).status).to.equal(401);
      expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM feed_client_keys WHERE client_id = 'deleted-city'`)).n).to.equal(0);
    });

    it('a role or zone change of the client applies to its keys at the next refresh', async () => {
      const app = request(buildApp(t.ctx).callback());
      await insertClient(t.ctx.db, 'moving-city', 'city', ['augsburg']);
      const k = await createFeedKey(t.ctx.db, 'moving-city');
      expect((await ask(app, k.key)).status).to.equal(403);
      await t.ctx.db.query(`UPDATE feed_clients SET zones = '{munich}' WHERE client_id = 'moving-city'`);
      t.ctx.clock.advance(30_001);
      expect((await ask(app, k.key)).status).to.equal(200);
    });
  });

  it('a key costs no database statement per request once the set is loaded (Koa path, a cached file)', async () => {
    const statements: string[] = [];
    const db = Object.create(t.ctx.db) as typeof t.ctx.db;
    db.query = ((query: { name?: string } | string, ...args: unknown[]) => {
      statements.push(typeof query === 'string' ? 'adhoc' : (query.name ?? 'adhoc'));
      return (t.ctx.db.query as (...a: unknown[]) => unknown).call(db, query, ...args);
    }) as typeof t.ctx.db.query;
    const app = request(buildApp({ ...t.ctx, db }).callback());
    const url = `/v1/partner-apis/mds/munich/trips?end_time=${HOUR}`;
    const key = keyOf('city-munich');
    expect((await app.get(url).set('X-Access-Token', key)).status).to.equal(200);
    expect(statements, 'the first request loads the set').to.include('FeedKeysUsable');
    statements.length = 0;
    for (let i = 0; i < 20; i++) expect((await app.get(url).set('X-Access-Token', key)).status).to.equal(200);
    expect(statements, 'nothing per request: the set, the zone list, the index row and the body are cached').to.deep.equal([]);
    // a bad key is looked up once, then remembered until the next refresh
    const bad = 'fk_' + 'x'.repeat(43);
    for (let i = 0; i < 5; i++) expect((await app.get(url).set('X-Access-Token', bad)).status).to.equal(401);
    expect(statements).to.deep.equal(['FeedKeyByHash']);
  });

  describe('the hot file path', () => {
    let hot: Server;
    const counter = { koa: 0 };
    before(async () => {
      await insertFeedZone(t.ctx.db, 'hotkeys', '2026-11-01T00:00:00Z');
      await insertClient(t.ctx.db, 'hot-city', 'city', ['hotkeys']);
      await publishFixtureHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'hotkeys', hour: HOUR, body: { version: '2.0.0', trips: [] } });
      const app: Koa = buildApp(t.ctx);
      const callback = app.callback.bind(app);
      app.callback = () => {
        const h = callback();
        return (req, res) => {
          counter.koa++;
          return h(req, res);
        };
      };
      hot = createServer(withHotPath(app)).listen(0, '127.0.0.1');
      await once(hot, 'listening');
    });
    after(() => hot?.close());

    const get = (path: string, headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { port } = hot.address() as AddressInfo;
        const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('latin1') }));
        });
        req.on('error', reject);
        req.end();
      });

    it('answers a key’s repeats from the caches, and a revoked key goes to Koa and is refused', async () => {
      const made = await createFeedKey(t.ctx.db, 'hot-city');
      const path = `/v1/partner-apis/mds/hotkeys/trips?end_time=${HOUR}`;
      const headers = { 'X-Access-Token': made.key, 'Accept-Encoding': 'gzip' };
      expect((await get(path, headers)).status).to.equal(200);
      const before = counter.koa;
      for (let i = 0; i < 5; i++) expect((await get(path, headers)).status).to.equal(200);
      expect(counter.koa - before, 'repeats answered before Koa').to.equal(0);
      // another client's key of the zone's outside: never answered from the caches
      const outside = await get(path, { 'X-Access-Token': keyOf('city-munich'), 'Accept-Encoding': 'gzip' });
      expect(outside.status).to.equal(403);
      await revokeFeedKey(t.ctx.db, made.id, t.ctx.clock.now());
      t.ctx.clock.advance(30_001);
      const refused = await get(path, headers);
      expect(refused.status).to.equal(401);
    });
  });
});

describe('feeds: a revoked key is refused by every API process within FEED_CREDENTIAL_REFRESH_MS', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let db: Db;
  let store: string;
  let one: ApiProcess;
  let two: ApiProcess;

  before(async () => {
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'feed-keys-store-'));
    db = new Db(database.url, createLogger('silent'));
    await insertFeedZone(db, 'twoproc');
    await insertClient(db, 'twoproc-city', 'city', ['twoproc']);
    const env = { FEED_CREDENTIAL_REFRESH_MS: '1000' };
    [one, two] = await Promise.all([startApiProcess(database, store, env), startApiProcess(database, store, env)]);
  });
  after(async () => {
    for (const api of [one, two]) api?.stop();
    await db?.close();
    await database?.drop();
    rmSync(store, { recursive: true, force: true });
  });

  const status = async (api: ApiProcess, key: string) =>
    (await fetch(`${api.base}/v1/partner-apis/mds/twoproc/vehicles`, { headers: { 'X-Access-Token': key } })).status;

  it('created with the ops functions, revoked through one process’s console: both refuse it within the refresh', async () => {
    const made = await createClientKey(db, 'twoproc-city', 'two processes');
    const ops = await createKey(db, 'Keys Test Staff', 'ops');
    expect(await status(one, made.key)).to.equal(200);
    expect(await status(two, made.key)).to.equal(200);
    const revoked = await fetch(`${one.base}/console/api/feed-clients/twoproc-city/keys/${made.id}`, {
      method: 'DELETE',
      headers: { 'X-Access-Token': ops.key },
    });
    expect(revoked.status, await revoked.clone().text()).to.equal(200);
    const at = Date.now();
    for (const api of [two, one]) {
      while ((await status(api, made.key)) !== 401) {
        expect(Date.now() - at, 'refused within the refresh (1 s) and a margin').to.be.below(5000);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
});
