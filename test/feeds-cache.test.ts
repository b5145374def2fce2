/**
 * The in-process caches of the authenticating file route (docs/feeds-access.md "Performance"):
 * publication rows (≤ 2 s), verified tokens (until exp, revocation still within 60 s), and the
 * byte-bounded LRU of file bodies. Time is the ManualClock's, so every bound is exact.
 */
import { expect } from 'chai';
import request from 'supertest';
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { revokeFeedClient } from '../lib/feeds/clients.js';
import { FeedTokenVerifier } from '../api/feeds/access-tokens.js';
import { loadConfig, ConfigError } from '../lib/core/config.js';
import { ObjectCache } from '../api/kit/object-cache.js';
import { PUBLICATION_TTL_MS } from '../api/feeds/publications.js';
import { useTestContext } from './support/context.js';
import { insertClient, insertFeedZone, publishHour, tokenFor } from './support/feed-auth.js';

const NOW = '2026-11-21T10:30:00Z';
const HOUR = '2026-11-21T08';

describe('feeds: caches of the file route', () => {
  const t = useTestContext({ now: NOW });
  let city: string;

  before(async () => {
    await insertFeedZone(t.ctx.db, 'cachezone', '2026-11-01T00:00:00Z');
    await insertClient(t.ctx.db, 'cache-city', 'city');
    city = `Bearer ${await tokenFor(t.ctx, 'cache-city', 'city')}`;
  });

  describe('publication rows and file bodies', () => {
    it(`serves a republished hour with the new ETag and bytes within ${PUBLICATION_TTL_MS} ms`, async () => {
      await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'cachezone', hour: HOUR, body: { version: '2.0.0', trips: [{ trip_id: 'old' }] } });
      const app = request(buildApp(t.ctx).callback());
      const get = () => app.get(`/v1/partner-apis/mds/cachezone/trips?end_time=${HOUR}`).set('Authorization', city);
      const first = await get();
      expect(first.status).to.equal(200);
      expect(first.body.trips[0].trip_id).to.equal('old');
      expect((await get()).headers.etag).to.equal(first.headers.etag); // now from the caches

      await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'cachezone', hour: HOUR, body: { version: '2.0.0', trips: [{ trip_id: 'new' }] } });
      t.ctx.clock.advance(PUBLICATION_TTL_MS);
      const fresh = await get();
      expect(fresh.status).to.equal(200);
      expect(fresh.headers.etag).to.not.equal(first.headers.etag);
      expect(fresh.body.trips[0].trip_id).to.equal('new');
      // the old validator no longer matches; the new one does
      expect((await get().set('If-None-Match', first.headers.etag)).status).to.equal(200);
      expect((await get().set('If-None-Match', fresh.headers.etag)).status).to.equal(304);
      // identity and HEAD answer from the same current object
      const identity = await get().set('Accept-Encoding', 'identity');
      expect(identity.headers.etag).to.equal(`W/${fresh.headers.etag}`);
      expect(identity.body.trips[0].trip_id).to.equal('new');
      const head = await app.head(`/v1/partner-apis/mds/cachezone/trips?end_time=${HOUR}`).set('Authorization', city).set('Accept-Encoding', 'gzip');
      expect(head.headers.etag).to.equal(fresh.headers.etag);
    });

    it('an hour marked dirty answers "not published yet" within the bound, also on the legacy host', async () => {
      await publishHour(t.ctx, { feed: 'mds_trips', version: '1.2', zone: 'cachezone', hour: HOUR, body: { version: '1.2.0', data: { trips: [] } } });
      const legacy = request(buildLegacyApp(t.ctx).callback());
      const get = () => legacy.get(`/en/cachezone/trips?end_time=${HOUR}`).set('Authorization', city).set('Accept', 'application/vnd.mds+json;version=1.2');
      expect((await get()).status).to.equal(200);
      await t.ctx.db.query(`UPDATE feed_publications SET dirty = true WHERE scope = 'cachezone' AND version = '1.2'`);
      t.ctx.clock.advance(PUBLICATION_TTL_MS);
      const res = await get();
      expect(res.status).to.equal(404);
      expect(res.body.error).to.equal('not_published');
    });

    it('an object deleted from the store behind the index stops being served within the bound', async () => {
      const key = await publishHour(t.ctx, { feed: 'mds_events', version: '2.0', zone: 'cachezone', hour: HOUR, body: { version: '2.0.0', events: [] } });
      const app = request(buildApp(t.ctx).callback());
      const get = () => app.get(`/v1/partner-apis/mds/cachezone/events/historical?event_time=${HOUR}`).set('Authorization', city);
      expect((await get()).status).to.equal(200);
      await t.ctx.store.delete(key);
      t.ctx.clock.advance(PUBLICATION_TTL_MS);
      expect((await get()).status).to.equal(202);
    });

    it('FEED_CACHE_BYTES=0 serves straight from the store', async () => {
      await publishHour(t.ctx, { feed: 'insurance_trips', version: '2.0', zone: 'cachezone', hour: HOUR, body: { version: '2.0', trips: [{ id: 1 }] } });
      await insertClient(t.ctx.db, 'cache-insurer', 'insurer');
      const insurer = `Bearer ${await tokenFor(t.ctx, 'cache-insurer', 'insurer')}`;
      const app = request(buildApp({ ...t.ctx, config: { ...t.ctx.config, feedCacheBytes: 0 } }).callback());
      const res = await app.get(`/v1/partner-apis/insurance/cachezone/trips?end_time=${HOUR}`).set('Authorization', insurer);
      expect(res.status).to.equal(200);
      expect(res.body.trips).to.deep.equal([{ id: 1 }]);
    });
  });

  describe('verified tokens', () => {
    it('refuses a revoked client within 60 s although its token is cached', async () => {
      await insertClient(t.ctx.db, 'cache-gone', 'city');
      const token = `Bearer ${await tokenFor(t.ctx, 'cache-gone', 'city')}`;
      const app = request(buildApp(t.ctx).callback());
      const url = `/v1/partner-apis/mds/cachezone/trips?end_time=${HOUR}`;
      for (let i = 0; i < 3; i++) expect((await app.get(url).set('Authorization', token)).status).to.equal(200);
      await revokeFeedClient(t.ctx.db, 'cache-gone', t.ctx.clock.now());
      t.ctx.clock.advance(60_000);
      const res = await app.get(url).set('Authorization', token);
      expect(res.status).to.equal(401);
      expect(res.body.error_description).to.match(/revoked/);
    });

    it('answers from the cache until exp, then reports the token expired', async () => {
      const verifier = new FeedTokenVerifier(t.ctx.config, t.ctx.clock);
      const token = await tokenFor(t.ctx, 'cache-city', 'city');
      const a = await verifier.verify(token);
      const b = await verifier.verify(token);
      expect(a.ok && b.ok && b.claims).to.equal(a.ok && a.claims); // the same object: a cache hit
      expect(verifier.size).to.equal(1);
      if (!a.ok) throw new Error('unreachable');
      t.ctx.clock.set(a.claims.expiresAt * 1000 - 1);
      expect((await verifier.verify(token)).ok).to.equal(true);
      t.ctx.clock.set(a.claims.expiresAt * 1000);
      expect(await verifier.verify(token)).to.deep.equal({ ok: false, reason: 'expired' });
      expect(verifier.size).to.equal(0);
      t.ctx.clock.set(NOW);
    });

    it('keeps no failed verification and at most maxEntries tokens', async () => {
      const verifier = new FeedTokenVerifier(t.ctx.config, t.ctx.clock, { maxEntries: 2 });
      expect((await verifier.verify('a.b.c')).ok).to.equal(false);
      expect(verifier.size).to.equal(0);
      for (let i = 0; i < 4; i++) expect((await verifier.verify(await tokenFor(t.ctx, `c${i}`, 'city'))).ok).to.equal(true);
      expect(verifier.size).to.equal(2);
    });
  });

  describe('the body cache', () => {
    const put = (key: string, bytes: number) =>
      t.ctx.store.put(key, gzipSync(randomBytes(bytes), { level: 0 }), { contentType: 'application/json', contentEncoding: 'gzip' });

    it('never holds more than its byte bound, evicting the least recently used', async () => {
      const cache = new ObjectCache({ maxBytes: 250_000, clock: t.ctx.clock });
      for (const k of ['a', 'b', 'c']) await put(`bound/${k}.json.gz`, 100_000);
      expect(cache.maxEntryBytes).to.equal(62_500);
      const big = await cache.load(t.ctx.store, 'bound/a.json.gz', 'v1');
      expect(big && 'stream' in big).to.equal(true); // larger than an entry may be: streamed, not kept
      if (big && 'stream' in big) big.stream.destroy();
      expect(cache.bytes).to.equal(0);

      const small = new ObjectCache({ maxBytes: 250_000, maxEntryBytes: 250_000, clock: t.ctx.clock });
      for (const k of ['a', 'b']) expect('cached' in ((await small.load(t.ctx.store, `bound/${k}.json.gz`, 'v1')) ?? {})).to.equal(true);
      await small.load(t.ctx.store, 'bound/a.json.gz', 'v1'); // a is now the most recently used
      await small.load(t.ctx.store, 'bound/c.json.gz', 'v1');
      expect(small.bytes).to.be.at.most(250_000);
      expect(small.size).to.equal(2);
      // b was evicted, a kept: a is a hit without touching the store, b is read again
      await t.ctx.store.delete('bound/a.json.gz');
      expect('cached' in ((await small.load(t.ctx.store, 'bound/a.json.gz', 'v1')) ?? {})).to.equal(true);
      await t.ctx.store.delete('bound/b.json.gz');
      expect(await small.load(t.ctx.store, 'bound/b.json.gz', 'v1')).to.equal(undefined);
      expect(small.bytes).to.be.at.most(250_000);
    });

    it('a new index version reads the store again; concurrent misses share one read', async () => {
      await put('ver/x.json.gz', 1000);
      const cache = new ObjectCache({ maxBytes: 1_000_000, clock: t.ctx.clock });
      const [r1, r2] = await Promise.all([cache.load(t.ctx.store, 'ver/x.json.gz', 'v1'), cache.load(t.ctx.store, 'ver/x.json.gz', 'v1')]);
      expect(r1 && 'cached' in r1 && r2 && 'cached' in r2 && r1.cached === r2.cached).to.equal(true);
      const before = r1 && 'cached' in r1 ? r1.cached.meta.etag : '';
      await put('ver/x.json.gz', 2000);
      const same = await cache.load(t.ctx.store, 'ver/x.json.gz', 'v1');
      expect(same && 'cached' in same && same.cached.meta.etag).to.equal(before); // same version, inside the bound
      const next = await cache.load(t.ctx.store, 'ver/x.json.gz', 'v2');
      expect(next && 'cached' in next && next.cached.meta.etag).to.not.equal(before);
      expect(cache.bytes).to.equal(next && 'cached' in next ? next.cached.body.length : -1);
    });
  });

  it('FEED_CACHE_BYTES: default 64 MiB, 0 allowed, garbage refused', () => {
    const base = { DATABASE_URL: 'postgres://x/y', SIGNING_SECRET: 's'.repeat(32) };
    expect(loadConfig(base).feedCacheBytes).to.equal(64 * 1024 * 1024);
    expect(loadConfig({ ...base, FEED_CACHE_BYTES: '0' }).feedCacheBytes).to.equal(0);
    expect(() => loadConfig({ ...base, FEED_CACHE_BYTES: '64MB' })).to.throw(ConfigError, /FEED_CACHE_BYTES/);
  });
});
