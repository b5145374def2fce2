/**
 * GBFS and insurance through the feed routes: served files validate against the official schemas,
 * discovery lists only what the role may read and its URLs work as written; insurance by API key
 * (and the deprecated bearer token) with version negotiation.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { createApiKey } from '../lib/domain/credentials/api-keys.js';
import { feedOf } from '../lib/feeds/publications.js';
import { gbfsV2Scope } from '../lib/feeds/roles.js';
import { STATUS_REFRESH_SECONDS, V2_FILES, V3_FILES } from '../lib/feeds/gbfs/files.js';
import { publishHour } from '../publisher/publish.js';
import { publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { useTestContext } from './support/context.js';
import { gbfsSpecsAvailable, gbfsVehicle, gbfsZone, officialGbfs } from './support/gbfs-fixtures.js';
import { insertClient, tokenFor } from './support/feed-auth.js';

const NOW = Date.parse('2026-11-21T10:30:00Z');
const HOUR = '2026-11-21T08';

function expectGbfs(version: '2.2' | '3.0', file: string, body: unknown): void {
  if (!gbfsSpecsAvailable()) return;
  const v = officialGbfs(version, file);
  if (!v(body)) throw new Error(`${version}/${file}: ${JSON.stringify(v.errors?.slice(0, 5))}`);
}

describe('feeds: GBFS and insurance', () => {
  const t = useTestContext({ now: new Date(NOW) });
  let app: ReturnType<typeof request>;
  let city: string;
  let gbfs: string;
  let insurerKey: string;

  before(async function () {
    this.timeout(60_000);
    if (!gbfsSpecsAvailable()) console.warn('    (specs/gbfs absent: schema checks skipped)');
    const db = t.ctx.db;
    await gbfsZone(db, { id: 'munich' });
    await gbfsZone(db, { id: 'augsburg', lat: 48.37, lng: 10.9 });
    await db.query(`UPDATE zones SET created_at = '2026-01-01'`);
    await gbfsVehicle(db, 'munich', 48.137, 11.575);
    await gbfsVehicle(db, 'munich', 48.138, 11.576, { status: 'riding' });
    await insertClient(db, 'city-munich', 'city', ['munich']);
    await insertClient(db, 'gbfs-all', 'gbfs', null);
    expect((await publishGbfsSnapshots(t.ctx)).failed).to.equal(0);
    for (const z of ['munich', 'augsburg']) await publishHour(t.ctx, feedOf('insurance_trips', '2.0')!, z, new Date(`${HOUR}:00:00Z`));
    const partner = await db.one<{ id: string }>(`INSERT INTO partners (name, kind) VALUES ('Insurer', 'insurer') RETURNING id`);
    await db.query(`INSERT INTO partner_zones (partner_id, zone_id) VALUES ($1, 'munich')`, [partner.id]);
    insurerKey = (await createApiKey(db, partner.id, 'insurance')).key;
    city = `Bearer ${await tokenFor(t.ctx, 'city-munich', 'city', ['munich'])}`;
    gbfs = `Bearer ${await tokenFor(t.ctx, 'gbfs-all', 'gbfs', null)}`;
    app = request(buildApp(t.ctx).callback());
  });

  /** The path of an absolute feed URL on our main host, which it must name. */
  const local = (url: string) => {
    expect(url.startsWith(t.ctx.config.publicBaseUrl + '/'), url).to.equal(true);
    return url.slice(t.ctx.config.publicBaseUrl.length);
  };

  describe('GBFS 3.0', () => {
    for (const file of V3_FILES) {
      it(`${file}.json validates against the official schema`, async () => {
        const res = await app.get(`/v1/partner-apis/gbfs/munich/${file}.json`).set('Authorization', city);
        expect(res.status).to.equal(200);
        expect(res.headers['content-type']).to.match(/^application\/json/);
        expect(res.headers['cache-control']).to.match(/^private, max-age=\d+$/);
        expectGbfs('3.0', file, res.body);
        expect(res.body.version).to.equal('3.0');
      });
    }

    it('gbfs.json URLs work as written with the same token', async () => {
      const res = await app.get('/v1/partner-apis/gbfs/munich/gbfs.json').set('Authorization', gbfs);
      expect(res.status).to.equal(200);
      const feeds = res.body.data.feeds as Array<{ name: string; url: string }>;
      expect(feeds.length).to.be.greaterThan(3);
      for (const f of feeds) {
        const r = await app.get(local(f.url)).set('Authorization', gbfs);
        expect(r.status, f.url).to.equal(200);
      }
    });

    it('manifest.json: the datasets of the caller, at the URL every system_information names', async () => {
      const info = await app.get('/v1/partner-apis/gbfs/munich/system_information.json').set('Authorization', city);
      const url = local(info.body.data.manifest_url);
      expect(url).to.equal('/v1/partner-apis/gbfs/manifest.json');
      const mine = await app.get(url).set('Authorization', city);
      expect(mine.status).to.equal(200);
      expectGbfs('3.0', 'manifest', mine.body);
      // the one-zone client: munich only, its 2.2 and 3.0 in one dataset
      expect(mine.body.data.datasets.map((d: any) => [d.system_id, d.versions.map((v: any) => v.version)])).to.deep.equal([
        [`${t.ctx.config.providerId}:munich`, ['2.2', '3.0']],
      ]);
      const all = await app.get(url).set('Authorization', gbfs);
      expect(all.body.data.datasets.map((d: any) => d.system_id)).to.deep.equal([
        `${t.ctx.config.providerId}:augsburg`,
        `${t.ctx.config.providerId}:munich`,
        t.ctx.config.providerId,
      ]);
      for (const d of all.body.data.datasets)
        for (const v of d.versions) expect((await app.get(local(v.url)).set('Authorization', gbfs)).status, v.url).to.equal(200);
      expect((await app.get(url)).status).to.equal(401);
    });

    it('unknown file → 404; 304 on If-None-Match', async () => {
      expect((await app.get('/v1/partner-apis/gbfs/munich/stations.json').set('Authorization', city)).status).to.equal(404);
      expect((await app.get('/v1/partner-apis/gbfs/munich/..%2Fgbfs.json').set('Authorization', city)).status).to.equal(404);
      const first = await app.get('/v1/partner-apis/gbfs/munich/vehicle_status.json').set('Authorization', city);
      const again = await app.get('/v1/partner-apis/gbfs/munich/vehicle_status.json').set('Authorization', city).set('If-None-Match', first.headers.etag);
      expect(again.status).to.equal(304);
    });
  });

  describe('GBFS 2.2 (region-scoped by the token)', () => {
    for (const file of V2_FILES) {
      it(`${file}.json validates against the official schema`, async () => {
        const res = await app.get(`/gbfs/v2/${file}.json`).set('Authorization', city);
        expect(res.status).to.equal(200);
        expectGbfs('2.2', file, res.body);
      });
    }

    it('the scope follows the token: a one-zone client sees its zone only', async () => {
      const mine = await app.get('/gbfs/v2/system_regions.json').set('Authorization', city);
      const all = await app.get('/gbfs/v2/system_regions.json').set('Authorization', gbfs);
      expect(mine.body.data.regions).to.have.length(1);
      expect(all.body.data.regions).to.have.length(2);
    });

    it('gbfs.json URLs work as written', async () => {
      const res = await app.get('/gbfs/v2/gbfs.json').set('Authorization', gbfs);
      for (const lang of Object.values<{ feeds: Array<{ url: string }> }>(res.body.data)) {
        for (const f of lang.feeds) expect((await app.get(local(f.url)).set('Authorization', gbfs)).status, f.url).to.equal(200);
      }
    });

    it('a client whose scope has no snapshot yet → 503 with Retry-After', async () => {
      const token = await tokenFor(t.ctx, 'fresh', 'gbfs', ['augsburg', 'munich', 'x']);
      const res = await app.get('/gbfs/v2/gbfs.json').set('Authorization', `Bearer ${token}`);
      expect(res.status).to.equal(503);
      expect(res.headers['retry-after']).to.equal('30');
    });
  });

  describe('insurance', () => {
    const trips = (zone = 'munich') => app.get(`/v1/partner-apis/insurance/${zone}/trips?end_time=${HOUR}`);

    it('X-Access-Token: 200 with the insurance content type', async () => {
      const res = await trips().set('X-Access-Token', insurerKey);
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal('application/vnd.insurance+json;version=2.0');
      expect(res.body.version).to.equal('2.0.0');
      expect(res.body.trips).to.deep.equal([]);
      expect(res.body.last_updated).to.be.a('number');
    });

    it('a zone outside the partner → 403; wrong key → 401; a partner key (another API) → 403 naming it', async () => {
      expect((await trips('augsburg').set('X-Access-Token', insurerKey)).status).to.equal(403);
      expect((await trips().set('X-Access-Token', 'nope')).status).to.equal(401);
      const p = await t.ctx.db.one<{ id: string }>(`INSERT INTO partners (name, kind) VALUES ('Rental', 'rental') RETURNING id`);
      const partnerKey = (await createApiKey(t.ctx.db, p.id, 'partner')).key;
      const other = await trips().set('X-Access-Token', partnerKey);
      expect(other.status).to.equal(403);
      expect(other.body.error_description).to.contain('the partner rental API');
    });

    for (const accept of ['application/vnd.insurance+json;version=2.0', '*/*', 'application/vnd.insurance+json']) {
      it(`Accept ${accept} → 200`, async () => {
        expect((await trips().set('X-Access-Token', insurerKey).set('Accept', accept)).status).to.equal(200);
      });
    }
    for (const accept of ['application/vnd.insurance+json;version=1.0', 'application/vnd.mds+json;version=2.0', 'text/csv']) {
      it(`Accept ${accept} → 406`, async () => {
        const res = await trips().set('X-Access-Token', insurerKey).set('Accept', accept);
        expect(res.status).to.equal(406);
        expect(res.body.error_details).to.deep.equal(['application/vnd.insurance+json;version=2.0']);
      });
    }

    it('hour states: not yet published → 202; future → 404; malformed → 400', async () => {
      expect((await app.get('/v1/partner-apis/insurance/munich/trips?end_time=2026-11-21T09').set('X-Access-Token', insurerKey)).status).to.equal(202);
      expect((await app.get('/v1/partner-apis/insurance/munich/trips?end_time=2026-11-21T11').set('X-Access-Token', insurerKey)).status).to.equal(404);
      expect((await app.get('/v1/partner-apis/insurance/munich/trips?end_time=2026-13-01T00').set('X-Access-Token', insurerKey)).status).to.equal(400);
    });
  });
  describe('served through the publication index cache', () => {
    it('a GBFS file is read from the index once per 2 s, and a rewritten file goes out with its new ETag within that bound', async () => {
      const path = '/v1/partner-apis/gbfs/munich/system_information.json';
      let queries = 0;
      const maybeOne = t.ctx.db.maybeOne.bind(t.ctx.db);
      t.ctx.db.maybeOne = (query: unknown, ...rest: unknown[]) => {
        if ((query as { name?: string }).name === 'FeedGbfsSnapshot') queries++;
        return (maybeOne as (...a: unknown[]) => Promise<unknown>)(query, ...rest);
      };
      try {
        const local = request(buildApp(t.ctx).callback());
        const first = await local.get(path).set('Authorization', gbfs);
        expect(first.status).to.equal(200);
        for (let i = 0; i < 5; i++) expect((await local.get(path).set('Authorization', gbfs)).headers.etag).to.equal(first.headers.etag);
        expect(queries).to.equal(1);
        expect((await local.get(path).set('Authorization', gbfs).set('If-None-Match', first.headers.etag)).status).to.equal(304);

        // the zone renamed: the publisher rewrites the file; its row is re-read once 2 s old
        await t.ctx.db.query(`UPDATE zones SET name = 'München' WHERE id = 'munich'`);
        t.ctx.clock.advance(1_000);
        expect((await publishGbfsSnapshots(t.ctx, { only: 'static' })).written).to.be.greaterThan(0);
        expect((await local.get(path).set('Authorization', gbfs)).headers.etag, 'within the bound').to.equal(first.headers.etag);
        t.ctx.clock.advance(1_000);
        const renewed = await local.get(path).set('Authorization', gbfs);
        expect(renewed.headers.etag).to.not.equal(first.headers.etag);
        expect(JSON.stringify(renewed.body.data.name)).to.contain('München');
        expect(queries).to.equal(2);
      } finally {
        t.ctx.db.maybeOne = maybeOne;
      }
    });
  });

  describe('a ttl refresh stores nothing: the route serves the stored data in the envelope of the row', () => {
    const v3Path = '/v1/partner-apis/gbfs/munich/vehicle_status.json';
    const v2Path = '/gbfs/v2/free_bike_status.json';
    const row = (version: string, scope: string, file: string) =>
      t.ctx.db.one<{ object_key: string; sha256: string; last_updated: Date }>(
        `SELECT object_key, sha256, last_updated FROM gbfs_snapshots WHERE version = $1 AND scope = $2 AND file = $3`,
        [version, scope, file],
      );

    it('the row moves, the object stays; GET, HEAD, 304 and identity clients see the new last_updated over the same data', async () => {
      const local = request(buildApp(t.ctx).callback());
      const before = await local.get(v3Path).set('Authorization', city);
      expect(before.status).to.equal(200);
      const stored = await row('3.0', 'munich', 'vehicle_status');
      const storedMeta = (await t.ctx.store.head(stored.object_key))!;

      t.ctx.clock.advance((STATUS_REFRESH_SECONDS + 1) * 1000);
      const res = await publishGbfsSnapshots(t.ctx);
      expect(res).to.include({ written: 0, failed: 0 });
      expect(res.refreshed).to.be.greaterThan(0);
      const refreshed = await row('3.0', 'munich', 'vehicle_status');
      expect(refreshed.sha256).to.equal(stored.sha256);
      expect(refreshed.last_updated.getTime()).to.be.greaterThan(stored.last_updated.getTime());
      expect((await t.ctx.store.head(stored.object_key))!.metadata).to.deep.equal(storedMeta.metadata);

      const after = await local.get(v3Path).set('Authorization', city);
      expect(after.status).to.equal(200);
      expectGbfs('3.0', 'vehicle_status', after.body);
      expect(Date.parse(after.body.last_updated)).to.equal(refreshed.last_updated.getTime());
      expect(after.body.data).to.deep.equal(before.body.data);
      expect(after.body.ttl).to.equal(before.body.ttl);
      expect(after.headers.etag)
        .to.match(/^"[^"]+"$/)
        .and.not.equal(before.headers.etag);
      expect(after.headers['last-modified']).to.equal(refreshed.last_updated.toUTCString());
      expect((await local.get(v3Path).set('Authorization', city).set('If-None-Match', before.headers.etag)).status).to.equal(200);
      expect((await local.get(v3Path).set('Authorization', city).set('If-None-Match', after.headers.etag)).status).to.equal(304);
      const head = await local.head(v3Path).set('Authorization', city).set('Accept-Encoding', 'gzip');
      expect(head.status).to.equal(200);
      expect(head.headers['content-length']).to.equal(after.headers['content-length']);
      expect(head.headers.etag).to.equal(after.headers.etag);
      const identity = await local.get(v3Path).set('Authorization', city).set('Accept-Encoding', 'identity');
      expect(identity.headers['content-encoding']).to.equal(undefined);
      expect(identity.body).to.deep.equal(after.body);
      expect(identity.headers.etag).to.equal(`W/${after.headers.etag}`);
    });

    it('the same for a GBFS 2.2 system file (POSIX last_updated)', async () => {
      const local = request(buildApp(t.ctx).callback());
      const before = await local.get(v2Path).set('Authorization', gbfs);
      expect(before.status).to.equal(200);
      t.ctx.clock.advance((STATUS_REFRESH_SECONDS + 1) * 1000);
      expect(await publishGbfsSnapshots(t.ctx)).to.include({ written: 0, failed: 0 });
      const refreshed = await row('2.2', gbfsV2Scope('gbfs', null), 'free_bike_status');
      const after = await local.get(v2Path).set('Authorization', gbfs);
      expect(after.status).to.equal(200);
      expectGbfs('2.2', 'free_bike_status', after.body);
      expect(after.body.last_updated).to.be.greaterThan(before.body.last_updated);
      expect(after.body.last_updated).to.equal(refreshed.last_updated.getTime() / 1000);
      expect(after.body.data).to.deep.equal(before.body.data);
    });
  });
});
