import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { generateApiKey, generateSecret, hashApiKey, hashSecret, verifySecret } from '../lib/domain/credentials/secrets.js';
import { ApiKeyVerifier, createApiKey, revokeApiKey } from '../lib/domain/credentials/api-keys.js';
import { ManualClock } from '../lib/core/clock.js';
import type { Db, Queryable } from '../lib/core/db.js';

async function partner(db: Queryable, name: string, zones: string[] = []): Promise<string> {
  const { id } = await db.one<{ id: string }>(
    `INSERT INTO partners (name, kind, trip_type, rate_limit_per_minute) VALUES ($1, 'rental', 'rider', 120) RETURNING id`,
    [name],
  );
  for (const z of zones) {
    await db.query(
      `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary)
       VALUES ($1, $1, 'X', 'DE', 'Europe/Berlin', 'EUR', 0.19, 'free-floating',
               ST_Multi(ST_MakeEnvelope(13.3, 52.4, 13.5, 52.6, 4326)))
       ON CONFLICT (id) DO NOTHING`,
      [z],
    );
    await db.query('INSERT INTO partner_zones (partner_id, zone_id) VALUES ($1, $2)', [id, z]);
  }
  return id;
}

describe('auth: secrets', () => {
  it('hashes api keys with sha256 and generates distinct prefixed keys', () => {
    expect(hashApiKey('abc').toString('hex')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const a = generateApiKey('pk');
    const b = generateApiKey('pk');
    expect(a).to.match(/^pk_[A-Za-z0-9_-]{43}$/);
    expect(a).to.not.equal(b);
    expect(() => generateApiKey('bad prefix')).to.throw();
  });

  it('hashes secrets with salted scrypt and verifies them', async () => {
    const secret = generateSecret();
    const stored = await hashSecret(secret);
    expect(stored).to.match(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(await hashSecret(secret)).to.not.equal(stored); // salted
    expect(await verifySecret(secret, stored)).to.equal(true);
    expect(await verifySecret(secret + 'x', stored)).to.equal(false);
    expect(await verifySecret('', stored)).to.equal(false);
  });

  it('treats malformed or abusive stored hashes as a mismatch', async () => {
    const stored = await hashSecret('s');
    expect(await verifySecret('s', 'plain')).to.equal(false);
    expect(await verifySecret('s', stored.replace('16384', '16383'))).to.equal(false); // N not a power of 2
    expect(await verifySecret('s', stored.replace('16384', String(1 << 24)))).to.equal(false); // too expensive
    expect(await verifySecret('s', stored.slice(0, -8))).to.equal(false);
  });
});

describe('auth: api keys', () => {
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });

  it('verifies a key and returns its principal with zones', async () => {
    const pid = await partner(t.ctx.db, 'p-zones', ['auth-z1', 'auth-z2']);
    const { id, key } = await createApiKey(t.ctx.db, pid, 'partner', { label: 'test' });
    const v = new ApiKeyVerifier(t.ctx.db, t.ctx.clock);
    const p = await v.verify(key, 'partner');
    expect(p).to.deep.equal({
      keyId: id,
      partnerId: pid,
      partnerName: 'p-zones',
      scope: 'partner',
      rateLimitPerMinute: 120,
      tripType: 'rider',
      tompPostponedCommit: false,
      zones: ['auth-z1', 'auth-z2'],
    });
    const row = await t.ctx.db.one<{ key_hash: Buffer; key_prefix: string }>('SELECT key_hash, key_prefix FROM api_keys WHERE id = $1', [id]);
    expect(Buffer.compare(row.key_hash, hashApiKey(key))).to.equal(0);
    expect(key.startsWith(row.key_prefix)).to.equal(true);
    expect(row.key_prefix.length).to.be.lessThan(key.length / 2);
  });

  it('zones is null when the partner has no partner_zones rows', async () => {
    const pid = await partner(t.ctx.db, 'p-all');
    const { key } = await createApiKey(t.ctx.db, pid, 'tomp', { key: 'fixed-key-for-test' });
    expect(key).to.equal('fixed-key-for-test');
    const p = await new ApiKeyVerifier(t.ctx.db, t.ctx.clock).verify(key, 'tomp');
    expect(p?.zones).to.equal(null);
  });

  it('rejects unknown keys, other scopes, revoked and expired keys', async () => {
    const pid = await partner(t.ctx.db, 'p-reject');
    const v = new ApiKeyVerifier(t.ctx.db, t.ctx.clock);
    const ok = await createApiKey(t.ctx.db, pid, 'partner');
    expect(await v.verify(ok.key, 'tomp')).to.equal(undefined);
    expect(await v.verify(ok.key, 'insurance')).to.equal(undefined);
    expect(await v.verify('no-such-key', 'partner')).to.equal(undefined);
    expect(await v.verify('', 'partner')).to.equal(undefined);
    expect(await v.verify('x'.repeat(10000), 'partner')).to.equal(undefined);

    const revoked = await createApiKey(t.ctx.db, pid, 'partner');
    expect(await revokeApiKey(t.ctx.db, revoked.id, t.ctx.clock.now())).to.include({ id: revoked.id });
    expect(await revokeApiKey(t.ctx.db, revoked.id, t.ctx.clock.now())).to.equal(undefined);
    expect(await v.verify(revoked.key, 'partner')).to.equal(undefined);

    const expired = await createApiKey(t.ctx.db, pid, 'partner', { expiresAt: new Date(t.ctx.clock.now().getTime() - 1000) });
    expect(await v.verify(expired.key, 'partner')).to.equal(undefined);
  });

  it('caches a valid key for 30 s: revocation applies after the ttl', async () => {
    const clock = new ManualClock('2026-11-21T10:00:00Z');
    const pid = await partner(t.ctx.db, 'p-cache');
    const { id, key } = await createApiKey(t.ctx.db, pid, 'partner');
    const v = new ApiKeyVerifier(t.ctx.db, clock);
    expect(await v.verify(key, 'partner')).to.not.equal(undefined);
    await revokeApiKey(t.ctx.db, id, clock.now());
    clock.advance(29_000);
    expect(await v.verify(key, 'partner'), 'still cached').to.not.equal(undefined);
    clock.advance(1_001);
    expect(await v.verify(key, 'partner'), 'cache expired').to.equal(undefined);
  });

  it('does not trust a cached key past its own expiry', async () => {
    const clock = new ManualClock('2026-11-21T10:00:00Z');
    const pid = await partner(t.ctx.db, 'p-expiring');
    const { key } = await createApiKey(t.ctx.db, pid, 'partner', { expiresAt: new Date('2026-11-21T10:00:10Z') });
    const v = new ApiKeyVerifier(t.ctx.db, clock);
    expect(await v.verify(key, 'partner')).to.not.equal(undefined);
    clock.advance(10_000);
    expect(await v.verify(key, 'partner')).to.equal(undefined);
  });

  it('remembers an unknown key briefly: a key created meanwhile is accepted after the negative ttl', async () => {
    const clock = new ManualClock('2026-11-21T10:00:00Z');
    const pid = await partner(t.ctx.db, 'p-negative');
    const v = new ApiKeyVerifier(t.ctx.db, clock);
    const key = generateApiKey('pk');
    expect(await v.verify(key, 'partner')).to.equal(undefined);
    await createApiKey(t.ctx.db, pid, 'partner', { key });
    expect(await v.verify(key, 'partner'), 'negative cache').to.equal(undefined);
    clock.advance(5_001);
    expect(await v.verify(key, 'partner')).to.not.equal(undefined);
  });

  it('keeps the caches bounded under a flood of random keys', async () => {
    const v = new ApiKeyVerifier(t.ctx.db, t.ctx.clock, { maxEntries: 50 });
    for (let i = 0; i < 200; i++) await v.verify(generateApiKey('x'), 'partner');
    const sizes = v as unknown as { unknown: { size: number }; known: { size: number } };
    expect(sizes.unknown.size).to.be.at.most(50);
    expect(sizes.known.size).to.equal(0);
  });

  it('serves concurrent first requests with one key from one lookup', async () => {
    const pid = await partner(t.ctx.db, 'p-burst');
    const { key, id } = await createApiKey(t.ctx.db, pid, 'insurance');
    let queries = 0;
    const counting = Object.create(t.ctx.db, {
      maybeOne: { value: (...args: Parameters<Db['maybeOne']>) => (queries++, t.ctx.db.maybeOne(...args)) },
    }) as Db;
    const v = new ApiKeyVerifier(counting, t.ctx.clock);
    const all = await Promise.all(Array.from({ length: 20 }, () => v.verify(key, 'insurance')));
    expect(all.every((p) => p?.keyId === id)).to.equal(true);
    expect(queries).to.equal(1);
    await v.verify(key, 'insurance');
    expect(queries, 'cached').to.equal(1);
  });
});
