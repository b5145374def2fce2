/**
 * Signed feeds (issue 40; api/feeds/signatures.ts, lib/feeds/signing-keys.ts, docs/feed-signatures.md):
 * every answer of the feed hosts, fetched over real HTTP from the in-process hosts (the hot path in
 * front, as bin/api.ts listens), is verified with an independent RFC 9421 implementation
 * (`http-message-signatures`, its httpbis verifier) and the public key from the served JWKS, and its
 * Content-Digest is checked against the raw bytes received with node:crypto. Rotation: an answer
 * signed by the old key verifies during the overlap, the new key signs after it, and the old key
 * leaves the JWKS when the overlap ends.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createHash, createPublicKey } from 'node:crypto';
import { once } from 'node:events';
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { httpbis, createVerifier } from 'http-message-signatures';
import { buildApp, buildLegacyApp, withHotPath } from '../api/app.js';
import { publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { DEFAULT_OVERLAP_MS, ensureSigningKeys, listSigningKeys, rotateSigningKeys, SigningKeyRing } from '../lib/feeds/signing-keys.js';
import { feedSignerOf } from '../api/feeds/signatures.js';
import { createLogger } from '../lib/core/log.js';
import { useTestContext } from './support/context.js';
import { entry } from './support/entries.js';
import { ROOT } from '../lib/core/paths.js';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { insertFeedZone, publishHour, tokenFor } from './support/feed-auth.js';
import { feedVehicle } from './support/feed-fixtures.js';
import { gbfsFeedClient, gbfsVehicle, gbfsZone } from './support/gbfs-fixtures.js';

const NOW = '2026-11-21T10:30:00Z';
const HOUR = '2026-11-21T08';
const V12 = 'application/vnd.mds+json;version=1.2';

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  /** the bytes as received: gzip when the answer is gzip-encoded */
  body: Buffer;
  request: { method: string; url: string; headers: Record<string, string> };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function fetchRaw(server: Server, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks),
          request: { method, url: `http://127.0.0.1:${port}${path}`, headers },
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

type Jwk = { kid: string; kty: string; crv: string; x: string };

/** What a city does: the signature verified with the key the JWKS names, by an off-the-shelf RFC 9421 verifier. */
async function verifyWith(jwks: { keys: Jwk[] }, r: Raw, request = r.request): Promise<{ ok: boolean | null; keyid: string | undefined }> {
  let keyid: string | undefined;
  const ok = await httpbis.verifyMessage(
    {
      keyLookup: (params) => {
        keyid = params.keyid;
        const jwk = jwks.keys.find((k) => k.kid === params.keyid);
        if (!jwk) return Promise.resolve(null);
        return Promise.resolve({ id: jwk.kid, algs: ['ed25519'], verify: createVerifier(createPublicKey({ key: jwk, format: 'jwk' }), 'ed25519') });
      },
      requiredFields: ['@status', 'content-type', 'content-digest', '@path'],
      requiredParams: ['created', 'keyid', 'alg'],
    },
    { status: r.status, headers: r.headers as Record<string, string> },
    request,
  );
  return { ok, keyid };
}

/** RFC 9530: the sha-256 of the bytes received (gzip when encoded so), independently of the server's code. */
function digestMatches(r: Raw): boolean {
  const m = /^sha-256=:([A-Za-z0-9+/=]+):$/.exec(String(r.headers['content-digest']));
  return m !== null && m[1] === createHash('sha256').update(r.body).digest('base64');
}

const json = (r: Raw): any => JSON.parse((r.headers['content-encoding'] === 'gzip' ? gunzipSync(r.body) : r.body).toString('utf8'));

describe('signed feeds: RFC 9421 signatures verified by an independent library, keys from the JWKS', () => {
  const t = useTestContext({ now: NOW });
  let main: Server;
  let legacy: Server;
  let city: string;
  let insurer: string;
  let gbfsZoneId: string;
  let gbfsToken: string;
  const jwks = async (server = main) => json(await fetchRaw(server, '/.well-known/jwks.json')) as { keys: Jwk[] };

  before(async function () {
    this.timeout(30000);
    await insertFeedZone(t.ctx.db, 'berlin');
    city = `Bearer ${await tokenFor(t.ctx, 'sig-city', 'city')}`;
    insurer = `Bearer ${await tokenFor(t.ctx, 'sig-insurer', 'insurer')}`;
    const trips = { version: '2.0.0', last_updated: { last_updated: 1 }, ttl: { ttl: 0 }, trips: [] };
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'berlin', hour: HOUR, body: trips });
    await publishHour(t.ctx, { feed: 'insurance_trips', version: '2.0', zone: 'berlin', hour: HOUR, body: { version: '2.0.0', trips: [] } });
    await publishHour(t.ctx, { feed: 'mds_trips', version: '1.2', zone: 'berlin', hour: HOUR, body: { version: '1.2.0', data: { trips: [] } } });
    const z = await gbfsZone(t.ctx.db, { id: 'sig-gbfs' });
    gbfsZoneId = z.id;
    // gbfsZone made the vehicle types
    await feedVehicle(t.ctx.db, 'berlin', { type: 'gbfs-scooter' });
    await feedVehicle(t.ctx.db, 'berlin', { type: 'gbfs-scooter' });
    await gbfsVehicle(t.ctx.db, z.id, z.lat, z.lng);
    await publishGbfsSnapshots(t.ctx, { only: 'all' });
    const gbfsClient = await gbfsFeedClient(t.ctx.db, 'city', null);
    gbfsToken = `Bearer ${await tokenFor(t.ctx, gbfsClient, 'city')}`;
    main = createServer(withHotPath(buildApp(t.ctx))).listen(0, '127.0.0.1');
    legacy = createServer(withHotPath(buildLegacyApp(t.ctx))).listen(0, '127.0.0.1');
    await Promise.all([once(main, 'listening'), once(legacy, 'listening')]);
  });
  after(async () => {
    agent.destroy();
    await Promise.all([main, legacy].map((s) => s && new Promise((r) => s.close(r))));
  });

  it('the JWKS: public, cacheable, the same on both hosts; a fresh database gets an active and a next key on first need', async () => {
    const r = await fetchRaw(main, '/.well-known/jwks.json');
    expect(r.status).to.equal(200);
    expect(r.headers['content-type']).to.match(/^application\/jwk-set\+json/);
    expect(r.headers['cache-control']).to.equal('public, max-age=300');
    const set = json(r) as { keys: Array<Jwk & { use: string; alg: string }> };
    expect(set.keys).to.have.length(2);
    for (const k of set.keys) {
      expect(k).to.include({ kty: 'OKP', crv: 'Ed25519', use: 'sig', alg: 'EdDSA' });
      // RFC 7638 thumbprint, computed here independently
      expect(k.kid).to.equal(createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${k.x}"}`).digest('base64url'));
      expect(k).to.not.have.property('d');
    }
    expect(await jwks(legacy)).to.deep.equal(set);
    const states = (await listSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now())).map((k) => k.state).sort();
    expect(states).to.deep.equal(['active', 'next']);
    expect((await verifyWith(set, r)).ok).to.equal(true);
  });

  it('private keys are encrypted at rest under SIGNING_SECRET: another secret cannot load them', async () => {
    const rows = (await t.ctx.db.query<{ private_key: Buffer; public_jwk: Jwk }>('SELECT private_key, public_jwk FROM feed_signing_keys')).rows;
    for (const row of rows) {
      // PKCS#8 DER of an Ed25519 key begins 30 2e 02 01 00 30 05 06 03 2b 65 70: not stored as such
      expect(row.private_key.includes(Buffer.from('302e020100300506032b6570', 'hex'))).to.equal(false);
      expect(row.private_key.length).to.equal(12 + 16 + 48);
    }
    const other = new SigningKeyRing(t.ctx.db, 'x'.repeat(40), t.ctx.clock, createLogger('silent'));
    let error: Error | undefined;
    await other.current().catch((e: Error) => (error = e));
    expect(error?.message).to.match(/cannot be decrypted with this SIGNING_SECRET/);
  });

  const cases: Array<{ name: string; host: () => Server; path: string; headers: () => Record<string, string>; status?: number }> = [
    {
      name: 'MDS 2.0 trips file (gzip)',
      host: () => main,
      path: `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`,
      headers: () => ({ Authorization: city, 'Accept-Encoding': 'gzip' }),
    },
    {
      name: 'MDS 2.0 trips file (decoded for a client without gzip)',
      host: () => main,
      path: `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`,
      headers: () => ({ Authorization: city }),
    },
    {
      name: 'MDS 2.0 realtime /vehicles/status (gzip)',
      host: () => main,
      path: '/v1/partner-apis/mds/berlin/vehicles/status',
      headers: () => ({ Authorization: city, 'Accept-Encoding': 'gzip' }),
    },
    { name: 'MDS 2.0 realtime /vehicles', host: () => main, path: '/v1/partner-apis/mds/berlin/vehicles', headers: () => ({ Authorization: city }) },
    {
      name: 'MDS 2.0 realtime /events/recent',
      host: () => main,
      path: `/v1/partner-apis/mds/berlin/events/recent?start_time=${Date.parse('2026-11-21T09:00:00Z')}&end_time=${Date.parse('2026-11-21T10:00:00Z')}`,
      headers: () => ({ Authorization: city }),
    },
    {
      name: 'GBFS 3.0 vehicle_status.json',
      host: () => main,
      path: `/v1/partner-apis/gbfs/sig-gbfs/vehicle_status.json`,
      headers: () => ({ Authorization: gbfsToken, 'Accept-Encoding': 'gzip' }),
    },
    { name: 'GBFS 2.2 gbfs.json', host: () => main, path: '/gbfs/v2/gbfs.json', headers: () => ({ Authorization: gbfsToken }) },
    {
      name: 'insurance trips file',
      host: () => main,
      path: `/v1/partner-apis/insurance/berlin/trips?end_time=${HOUR}`,
      headers: () => ({ Authorization: insurer, 'Accept-Encoding': 'gzip' }),
    },
    {
      name: 'legacy 1.2 trips file',
      host: () => legacy,
      path: `/en/berlin/trips?end_time=${HOUR}`,
      headers: () => ({ Authorization: city, Accept: V12, 'Accept-Encoding': 'gzip' }),
    },
    { name: 'legacy 1.2 realtime /vehicles', host: () => legacy, path: '/en/berlin/vehicles', headers: () => ({ Authorization: city, Accept: V12 }) },
    { name: 'an error: 401 without a token', host: () => main, path: `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`, headers: () => ({}), status: 401 },
    {
      name: 'an error: a path no feed route takes (404)',
      host: () => main,
      path: '/v1/partner-apis/mds/berlin/nothing',
      headers: () => ({ Authorization: city }),
      status: 404,
    },
    {
      name: 'an error on the legacy host: 406 without a version',
      host: () => legacy,
      path: '/en/berlin/vehicles',
      headers: () => ({ Authorization: city }),
      status: 406,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: signed, the signature verifies, Content-Digest is the digest of the bytes received`, async () => {
      const set = await jwks();
      // twice: the first fills the caches (the ordinary route), the second may be the hot path's
      for (let i = 0; i < 2; i++) {
        const r = await fetchRaw(c.host(), c.path, c.headers());
        expect(r.status, r.body.toString()).to.equal(c.status ?? 200);
        expect(r.headers['signature-input']).to.match(/^feed=\("@status" "content-type" "content-digest"/);
        expect(r.headers['signature-input']).to.match(/;alg="ed25519";tag="mobility-feeds"$/);
        expect(digestMatches(r), 'Content-Digest').to.equal(true);
        const v = await verifyWith(set, r);
        expect(v.ok).to.equal(true);
        expect(set.keys.map((k) => k.kid)).to.include(v.keyid);
        json(r);
      }
    });
  }
  // the GBFS zone fixture is used above by path
  it('the GBFS zone is the fixture one', () => expect(gbfsZoneId).to.equal('sig-gbfs'));

  it('docs/examples/verify-feed-signature.mjs, the city-side example of docs/feed-signatures.md, verifies answers and refuses a replayed or changed one', async () => {
    type Example = { fetchVerified: (url: string, headers: Record<string, string>) => Promise<{ status: number; keyid: string; body: Buffer }> };
    const example = (await import(pathToFileURL(join(ROOT, 'docs/examples/verify-feed-signature.mjs')).href)) as Example;
    const { port } = main.address() as AddressInfo;
    const base = `http://127.0.0.1:${port}`;
    const set = await jwks();
    for (const [path, auth] of [
      [`/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`, city],
      ['/v1/partner-apis/gbfs/sig-gbfs/system_information.json', gbfsToken],
      ['/v1/partner-apis/mds/berlin/vehicles/status', city],
    ] as const) {
      const a = await example.fetchVerified(`${base}${path}`, { Authorization: auth, 'Accept-Encoding': 'gzip' });
      expect(a.status).to.equal(200);
      expect(set.keys.map((k) => k.kid)).to.include(a.keyid);
    }
    // a go-between that answers another hour's request with the 08:00 file, or changes a byte: refused
    let mode: 'replay' | 'flip' = 'replay';
    const proxy = createServer((req, res) => {
      const upstream = mode === 'replay' ? req.url!.replace('T07', 'T08') : req.url!;
      const headers = Object.fromEntries(['authorization', 'accept-encoding'].filter((h) => req.headers[h]).map((h) => [h, String(req.headers[h])]));
      void fetchRaw(main, upstream, headers).then((r) => {
        const body = Buffer.from(r.body);
        if (mode === 'flip' && r.status === 200) body[body.length - 1] ^= 1;
        const { connection: _c, 'keep-alive': _k, ...kept } = r.headers;
        res.writeHead(r.status, kept);
        res.end(body);
      });
    }).listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    try {
      const via = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const refusal = (url: string) =>
        example.fetchVerified(url, { Authorization: city, 'Accept-Encoding': 'gzip' }).then(
          () => 'verified',
          (e: Error) => e.message,
        );
      expect(await refusal(`${via}/v1/partner-apis/mds/berlin/trips?end_time=2026-11-21T07`)).to.equal('the signature does not verify');
      mode = 'flip';
      expect(await refusal(`${via}/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`)).to.match(/^Content-Digest does not match the body/);
    } finally {
      await new Promise((r) => proxy.close(r));
    }
  });

  it('a cached file decoded for a client without gzip still streams: its decoded digest is known once per cached object', async () => {
    const set = await jwks();
    for (let i = 0; i < 2; i++) {
      const r = await fetchRaw(main, `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`, { Authorization: city });
      expect(r.headers).to.not.have.property('content-encoding');
      expect(r.headers['transfer-encoding']).to.equal('chunked');
      expect(digestMatches(r)).to.equal(true);
      expect((await verifyWith(set, r)).ok).to.equal(true);
    }
  });

  it('a file served without the body cache streams from the store, signed over the digest its writer recorded', async () => {
    const set = await jwks();
    const uncached = createServer(withHotPath(buildApp({ ...t.ctx, config: { ...t.ctx.config, feedCacheBytes: 0 } }))).listen(0, '127.0.0.1');
    await once(uncached, 'listening');
    try {
      const r = await fetchRaw(uncached, `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`, { Authorization: city, 'Accept-Encoding': 'gzip' });
      expect(r.status).to.equal(200);
      expect(r.headers['content-encoding']).to.equal('gzip');
      expect(digestMatches(r), 'Content-Digest').to.equal(true);
      expect((await verifyWith(set, r)).ok).to.equal(true);
    } finally {
      await new Promise((resolve) => uncached.close(resolve));
    }
  });

  it('HEAD and 304 are signed over what they have (status, ETag, the request), without content', async () => {
    const set = await jwks();
    const path = `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`;
    const full = await fetchRaw(main, path, { Authorization: city, 'Accept-Encoding': 'gzip' });
    const head = await fetchRaw(main, path, { Authorization: city, 'Accept-Encoding': 'gzip' }, 'HEAD');
    expect(head.headers['signature-input']).to.match(/^feed=\("@status" "content-type" "etag" "@method";req "@path";req "@query";req\)/);
    expect(await verifyWith(set, head).catch((e: Error) => e.message)).to.match(/Missing required signed fields/);
    const notModified = await fetchRaw(main, path, { Authorization: city, 'Accept-Encoding': 'gzip', 'If-None-Match': String(full.headers.etag) });
    expect(notModified.status).to.equal(304);
    expect(notModified.headers['signature-input']).to.match(/^feed=\("@status" "etag" "@method";req "@path";req "@query";req\)/);
    const lenient = await httpbis.verifyMessage(
      {
        keyLookup: (p) => {
          const jwk = set.keys.find((k) => k.kid === p.keyid)!;
          return Promise.resolve({ id: jwk.kid, algs: ['ed25519'], verify: createVerifier(createPublicKey({ key: jwk, format: 'jwk' }), 'ed25519') });
        },
      },
      { status: notModified.status, headers: notModified.headers as Record<string, string> },
      notModified.request,
    );
    expect(lenient).to.equal(true);
  });

  it('a changed answer or another request does not verify: body, status, or the hour asked for', async () => {
    const set = await jwks();
    const r = await fetchRaw(main, `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`, { Authorization: city, 'Accept-Encoding': 'gzip' });
    expect((await verifyWith(set, r)).ok).to.equal(true);
    expect(digestMatches({ ...r, body: Buffer.concat([r.body, Buffer.from(' ')]) })).to.equal(false);
    expect((await verifyWith(set, { ...r, status: 202 })).ok).to.equal(false);
    const other = { ...r.request, url: r.request.url.replace(HOUR, '2026-11-21T07') };
    expect((await verifyWith(set, r, other)).ok).to.equal(false);
    const forged = { ...r, headers: { ...r.headers, 'content-digest': `sha-256=:${createHash('sha256').update('x').digest('base64')}:` } };
    expect((await verifyWith(set, forged)).ok).to.equal(false);
  });

  it('rotation: the next key signs after it, an answer of the old key verifies through the overlap, then the old key leaves the JWKS', async () => {
    const signer = feedSignerOf(t.ctx);
    const before = await jwks();
    const path = '/v1/partner-apis/mds/berlin/vehicles';
    const old = await fetchRaw(main, path, { Authorization: city });
    const oldKid = (await verifyWith(before, old)).keyid!;
    const listed = await listSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now());
    const nextKid = listed.find((k) => k.state === 'next')!.kid;
    expect(before.keys.map((k) => k.kid)).to.include(nextKid);

    const rot = await rotateSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now());
    expect(rot).to.include({ active: nextKid, retiring: oldKid });
    expect(rot.retireAfter.getTime() - t.ctx.clock.now().getTime()).to.equal(DEFAULT_OVERLAP_MS);
    // within 30 s by the ring's own reload; the test does not wait
    await signer.ring.reload();

    const during = await jwks();
    expect(during.keys.map((k) => k.kid).sort()).to.deep.equal([oldKid, nextKid, rot.next].sort());
    expect((await verifyWith(during, old)).ok, 'the old answer during the overlap').to.equal(true);
    const fresh = await fetchRaw(main, path, { Authorization: city });
    const v = await verifyWith(during, fresh);
    expect(v).to.deep.equal({ ok: true, keyid: nextKid });
    // the hot path signs with the new key too
    const file = `/v1/partner-apis/mds/berlin/trips?end_time=${HOUR}`;
    await fetchRaw(main, file, { Authorization: city, 'Accept-Encoding': 'gzip' });
    expect((await verifyWith(during, await fetchRaw(main, file, { Authorization: city, 'Accept-Encoding': 'gzip' }))).keyid).to.equal(nextKid);

    // past the overlap: the old key is out of the JWKS, and retired with its private half gone
    t.ctx.clock.advance(DEFAULT_OVERLAP_MS + 1000);
    await signer.ring.reload();
    const afterOverlap = await jwks();
    expect(afterOverlap.keys.map((k) => k.kid).sort()).to.deep.equal([nextKid, rot.next].sort());
    expect((await verifyWith(afterOverlap, old)).ok).to.equal(null);
    const keys = await listSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now());
    expect(keys.find((k) => k.kid === oldKid)).to.include({ state: 'retired', published: false });
    const row = await t.ctx.db.one<{ private_key: Buffer | null }>('SELECT private_key FROM feed_signing_keys WHERE kid = $1', [oldKid]);
    expect(row.private_key).to.equal(null);
  });

  it('SIGNING_SECRET changed: no unsigned answer goes out (503), and one rotation under the new secret signs again, the old key still published', async () => {
    const before = await jwks();
    const oldActive = (await listSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now())).find((k) => k.state === 'active')!.kid;
    const changed = { ...t.ctx, config: { ...t.ctx.config, signingSecret: 'another-secret-of-at-least-32-characters' } };
    const other = createServer(withHotPath(buildApp(changed))).listen(0, '127.0.0.1');
    await once(other, 'listening');
    try {
      const refused = await fetchRaw(other, '/.well-known/jwks.json');
      expect(refused.status).to.equal(503);
      expect(json(refused)).to.deep.equal({
        error: 'service_unavailable',
        error_description: 'the service is temporarily unavailable',
        error_details: ['answers cannot be signed now'],
      });
      expect(refused.headers).to.not.have.property('signature');
      const rot = await rotateSigningKeys(t.ctx.db, changed.config.signingSecret, t.ctx.clock.now());
      // the next key was sealed under the old secret: replaced, so the new active one is readable
      expect(before.keys.map((k) => k.kid)).to.not.include(rot.active);
      expect(rot.retiring).to.equal(oldActive);
      await feedSignerOf(changed).ring.reload();
      const r = await fetchRaw(other, '/.well-known/jwks.json');
      expect(r.status).to.equal(200);
      const set = json(r) as { keys: Jwk[] };
      expect(set.keys.map((k) => k.kid)).to.include(oldActive);
      expect(await verifyWith(set, r)).to.deep.equal({ ok: true, keyid: rot.active });
    } finally {
      await new Promise((res) => other.close(res));
    }
  });

  it('keys are created once, whatever runs at once (the partial unique indexes and the lock decide)', async () => {
    const made = await Promise.all([1, 2, 3].map(() => ensureSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now())));
    expect(made.flat()).to.deep.equal([]);
    const rots = await Promise.all([1, 2].map(() => rotateSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now(), 0)));
    expect(rots[0].active).to.not.equal(rots[1].active);
    const states = (await listSigningKeys(t.ctx.db, t.ctx.config.signingSecret, t.ctx.clock.now())).filter((k) => k.state === 'active' || k.state === 'next');
    expect(states.map((k) => k.state).sort()).to.deep.equal(['active', 'next']);
  });
});

describe('signed feeds: ops signing-keys, and API processes that pick a rotation up without a restart', function () {
  this.timeout(120000);
  const t = useTestContext({ now: NOW });
  let main: Server;
  let city: string;
  const cli = (args: string[]) =>
    spawnSync(process.execPath, [entry('ops'), ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, DATABASE_URL: t.database.url, SIGNING_SECRET: t.ctx.config.signingSecret, LOG_LEVEL: 'silent' },
    });

  before(async () => {
    await insertFeedZone(t.ctx.db, 'berlin');
    city = `Bearer ${await tokenFor(t.ctx, 'cli-city', 'city')}`;
    main = createServer(withHotPath(buildApp(t.ctx))).listen(0, '127.0.0.1');
    await once(main, 'listening');
  });
  after(async () => {
    await new Promise((r) => main?.close(r));
  });

  it('list on a fresh database names the first keys; rotate promotes the next; the API signs with it within its reload interval', async () => {
    const list = cli(['signing-keys', 'list']);
    expect(list.status, list.stderr).to.equal(0);
    const kids = (state: string) => [...list.stdout.matchAll(new RegExp(`'([A-Za-z0-9_-]{43})'\\s*│\\s*'${state}'`, 'g'))].map((m) => m[1]);
    const [active] = kids('active');
    const [next] = kids('next');
    expect(active).to.be.a('string');
    expect(next).to.be.a('string');

    const first = await fetchRaw(main, '/v1/partner-apis/mds/berlin/vehicles', { Authorization: city });
    expect(first.headers['signature-input']).to.include(`keyid="${active}"`);

    const rot = cli(['signing-keys', 'rotate', '--overlap-days', '2']);
    expect(rot.status, rot.stderr).to.equal(0);
    expect(rot.stdout).to.include(`active (signs within 30 s in every API process): ${next}`);
    // the CLI runs on the system clock: two days from its now
    const until = /retiring \(in the JWKS until (\S+)\): (\S+)/.exec(rot.stdout);
    expect(until?.[2]).to.equal(active);
    expect(Date.parse(until![1]) - Date.now()).to.be.within(2 * 86_400_000 - 60_000, 2 * 86_400_000);

    // the running API: still the loaded key until its reload is due (30 s by its clock), then the new one
    expect((await fetchRaw(main, '/v1/partner-apis/mds/berlin/vehicles', { Authorization: city })).headers['signature-input']).to.include(active);
    t.ctx.clock.advance(30_000);
    let kid: string | undefined;
    for (let i = 0; i < 50 && kid !== next; i++) {
      const r = await fetchRaw(main, '/v1/partner-apis/mds/berlin/vehicles', { Authorization: city });
      kid = /keyid="([^"]+)"/.exec(String(r.headers['signature-input']))?.[1];
      if (kid !== next) await new Promise((res) => setTimeout(res, 20));
    }
    expect(kid).to.equal(next);
    const set = json(await fetchRaw(main, '/.well-known/jwks.json')) as { keys: Jwk[] };
    expect(set.keys.map((k) => k.kid)).to.include.members([active, next]);
    expect((await verifyWith(set, first)).ok).to.equal(true);
  });

  it('a bad overlap is one line, nothing changed', () => {
    const r = cli(['signing-keys', 'rotate', '--overlap-days', 'soon']);
    expect(r.status).to.equal(1);
    expect(r.stderr.trim()).to.equal('error: --overlap-days must be a number of days, 0 or more');
  });
});
