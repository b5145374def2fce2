/**
 * The vehicle list's per-zone cache (api/partner/vehicle-list.ts, VEHICLE_LIST_CACHE_MS): one
 * answer per zone for its TTL, shared by the partners that may see the zone; access is checked on
 * every request; concurrent misses share one query; 0 turns it off (the test default).
 */
import { expect } from 'chai';
import request from 'supertest';
import { useTestContext } from './support/context.js';
import { buildApp } from '../api/app.js';
import { expectError, expectValid, insertPartner, insertVehicle, insertZone } from './support/partner-fixtures.js';
import { dataOf, VehicleRecord } from '../schemas/partner/responses.js';

describe('partner API: the vehicle list cache', () => {
  const t = useTestContext({ now: '2026-06-01T10:00:00Z', config: { VEHICLE_LIST_CACHE_MS: '1000' } });

  it('answers a zone from memory for VEHICLE_LIST_CACHE_MS, the same for every partner allowed to see it', async () => {
    const server = buildApp(t.ctx).callback();
    const zone = await insertZone(t.ctx.db);
    const a = await insertPartner(t.ctx.db);
    const b = await insertPartner(t.ctx.db);
    const v = await insertVehicle(t.ctx.db, zone);
    const list = (key: string) => request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', key);

    const first = await list(a.key);
    expect(first.status).to.equal(200);
    expect(first.headers['content-type']).to.equal('application/json; charset=utf-8');
    expectValid(dataOf(VehicleRecord, true), first.body);
    expect(first.body.data.map((x: { id: string }) => x.id)).to.deep.equal([v.id]);

    // taken out of service behind the API: still listed within the TTL, for both partners
    await t.ctx.db.query(`UPDATE vehicles SET status = 'unavailable' WHERE id = $1`, [v.id]);
    t.ctx.clock.advance(999);
    expect((await list(a.key)).body).to.deep.equal(first.body);
    expect((await list(b.key)).body).to.deep.equal(first.body);
    t.ctx.clock.advance(1);
    expect((await list(b.key)).body).to.deep.equal({ data: [] });
  });

  it('checks the partner’s access before the cache, and an unknown zone stays unknown', async () => {
    const server = buildApp(t.ctx).callback();
    const zone = await insertZone(t.ctx.db);
    const other = await insertZone(t.ctx.db);
    const everywhere = await insertPartner(t.ctx.db);
    const elsewhere = await insertPartner(t.ctx.db, { zones: [other.id] });
    await insertVehicle(t.ctx.db, zone);
    const list = (key: string, id = zone.id) => request(server).get(`/v1/vehicles?zoneID=${id}`).set('X-Auth-Token', key);
    expect((await list(everywhere.key)).body.data).to.have.length(1);
    expectError(await list(elsewhere.key), 404, 'ZoneNotFound');
    expectError(await list(everywhere.key, 'no-such-zone'), 404, 'ZoneNotFound');
    expectError(await list(everywhere.key, 'no-such-zone'), 404, 'ZoneNotFound');
  });

  it('serves concurrent first requests of a zone from one query', async () => {
    const server = buildApp(t.ctx).callback();
    const zone = await insertZone(t.ctx.db);
    const p = await insertPartner(t.ctx.db);
    for (let i = 0; i < 3; i++) await insertVehicle(t.ctx.db, zone);
    await request(server).get('/v1/zone/info').set('X-Auth-Token', p.key); // the key is verified and cached
    let queries = 0;
    const many = t.ctx.db.many.bind(t.ctx.db);
    t.ctx.db.many = ((query: unknown, ...rest: unknown[]) => {
      if ((query as { name?: string }).name === 'PartnerAvailableVehicles') queries++;
      return (many as (...a: unknown[]) => Promise<unknown[]>)(query, ...rest);
    }) as typeof t.ctx.db.many;
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, () => request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key)));
      expect(answers.map((r) => r.body.data.length)).to.deep.equal(Array(8).fill(3));
      expect(queries).to.equal(1);
    } finally {
      t.ctx.db.many = many;
    }
  });
});
