import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { importZone, ZoneImportError } from '../lib/admin/zones.js';
import { createFeedClient, createKey, revokeKey, rotateKey, rotateFeedClient, revokeFeedClient, AdminError } from '../lib/admin/credentials.js';
import { ApiKeyVerifier } from '../lib/auth/api-keys.js';
import { verifySecret } from '../lib/auth/secrets.js';

const square = (x: number, y: number, d: number) => ({
  type: 'Polygon',
  coordinates: [[[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]]],
});

function zoneFile(over: Record<string, unknown> = {}, areas: any[] = []) {
  return {
    type: 'FeatureCollection',
    features: [
      {
        type: 'Feature',
        geometry: square(13.3, 52.4, 0.2),
        properties: { kind: 'zone', id: 'testville', name: 'Testville', city: 'Testville', country: 'DE', timezone: 'Europe/Berlin', currency: 'EUR', vat_rate: 0.19, parking_mode: 'free-floating', ...over },
      },
      ...areas,
    ],
  };
}

describe('ops: zone import', () => {
  const t = useTestContext();

  it('creates a zone with its areas and updates it on re-import', async () => {
    const areas = [
      { type: 'Feature', geometry: square(13.35, 52.45, 0.01), properties: { area_type: 'no-parking', name: 'Park' } },
      { type: 'Feature', geometry: square(13.36, 52.46, 0.01), properties: { area_type: 'slow-zone', name: 'Market', max_speed_kph: 10, vehicle_types: ['scooter'] } },
    ];
    const r1 = await importZone(t.ctx.db, t.ctx.clock, zoneFile({}, areas));
    expect(r1).to.deep.equal({ zoneId: 'testville', created: true, areas: 2 });
    const r2 = await importZone(t.ctx.db, t.ctx.clock, zoneFile({ name: 'Testville 2' }, areas.slice(0, 1)));
    expect(r2).to.deep.equal({ zoneId: 'testville', created: false, areas: 1 });
    const z = await t.ctx.db.one("SELECT name, (SELECT count(*) FROM areas WHERE zone_id = 'testville') AS n FROM zones WHERE id = 'testville'");
    expect(z).to.deep.equal({ name: 'Testville 2', n: 1 });
  });

  it('names every bad feature and changes nothing', async () => {
    const bad = zoneFile({ id: 'bad zone!' }, [
      { type: 'Feature', geometry: square(13.35, 52.45, 0.01), properties: { area_type: 'parking-spot', name: 'Spot A' } },
      { type: 'Feature', geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] }, properties: { area_type: 'no-riding', name: 'Bowtie' } },
      { type: 'Feature', geometry: square(13.37, 52.47, 0.01), properties: { area_type: 'teleport', name: 'Nowhere' } },
    ]);
    try {
      await importZone(t.ctx.db, t.ctx.clock, bad);
      expect.fail('should refuse');
    } catch (err) {
      expect(err).to.be.instanceOf(ZoneImportError);
      const text = (err as Error).message;
      expect(text).to.match(/feature #0 "Testville"/);
      expect(text).to.match(/"Spot A".*capacity/);
      expect(text).to.match(/"Spot A": parking-spot area in a free-floating zone/);
      expect(text).to.match(/"Bowtie": invalid geometry/);
      expect(text).to.match(/"Nowhere"/);
    }
    expect((await t.ctx.db.one("SELECT count(*) AS n FROM zones WHERE id = 'bad zone!'")).n).to.equal(0);
  });
});

describe('ops: credentials', () => {
  const t = useTestContext();

  it('creates, rotates and revokes API keys; secrets are stored only as hashes', async () => {
    const k = await createKey(t.ctx.db, 'Acme Rides', 'partner', 'test');
    const verifier = new ApiKeyVerifier(t.ctx.db, t.ctx.clock, { cacheTtlMs: 0, negativeTtlMs: 0 });
    expect((await verifier.verify(k.key, 'partner'))?.partnerName).to.equal('Acme Rides');
    const stored = await t.ctx.db.many('SELECT key_hash FROM api_keys');
    expect(JSON.stringify(stored)).not.to.contain(k.key);
    const r = await rotateKey(t.ctx.db, t.ctx.clock, k.id);
    expect(await verifier.verify(k.key, 'partner')).to.equal(undefined);
    expect((await verifier.verify(r.key, 'partner'))?.partnerName).to.equal('Acme Rides');
    await revokeKey(t.ctx.db, t.ctx.clock, r.id);
    expect(await verifier.verify(r.key, 'partner')).to.equal(undefined);
    try {
      await revokeKey(t.ctx.db, t.ctx.clock, r.id);
      expect.fail('revoking twice should say so');
    } catch (err) {
      expect(err).to.be.instanceOf(AdminError);
    }
  });

  it('creates, rotates and revokes feed clients', async () => {
    await importZone(t.ctx.db, t.ctx.clock, zoneFile());
    const c = await createFeedClient(t.ctx.db, 'city-of-test', 'city', ['testville']);
    const row = await t.ctx.db.one("SELECT secret_hash, revoked_at FROM feed_clients WHERE client_id = 'city-of-test'");
    expect(row.secret_hash).not.to.contain(c.secret);
    expect(await verifySecret(c.secret, row.secret_hash)).to.equal(true);
    const r = await rotateFeedClient(t.ctx.db, 'city-of-test');
    const row2 = await t.ctx.db.one("SELECT secret_hash FROM feed_clients WHERE client_id = 'city-of-test'");
    expect(await verifySecret(c.secret, row2.secret_hash)).to.equal(false);
    expect(await verifySecret(r.secret, row2.secret_hash)).to.equal(true);
    await revokeFeedClient(t.ctx.db, t.ctx.clock, 'city-of-test');
    expect((await t.ctx.db.one("SELECT revoked_at FROM feed_clients WHERE client_id = 'city-of-test'")).revoked_at).to.be.instanceOf(Date);
    try {
      await createFeedClient(t.ctx.db, 'x', 'mayor', null);
      expect.fail('unknown role');
    } catch (err) {
      expect(err).to.be.instanceOf(AdminError);
    }
  });

  it('refuses a feed client limited to an unknown zone, listing the known zones', async () => {
    const known = (await t.ctx.db.many<{ id: string }>('SELECT id FROM zones ORDER BY id')).map((z) => z.id);
    try {
      await createFeedClient(t.ctx.db, 'city-of-atlantis', 'city', ['atlantis']);
      expect.fail('unknown zone');
    } catch (err) {
      expect(err).to.be.instanceOf(AdminError);
      expect((err as Error).message).to.equal(`unknown zone atlantis; known zones: ${known.join(', ') || 'none'}`);
    }
    expect(await t.ctx.db.maybeOne("SELECT 1 FROM feed_clients WHERE client_id = 'city-of-atlantis'")).to.equal(undefined);
  });
});
