/**
 * The vehicle list's per-zone cache (api/partner/vehicle-list.ts): one answer per zone and zone
 * version, shared by the partners that may see the zone; a write shows in the very next list (the
 * two-process proof is test/cache-coherence.test.ts); what changes with time alone within
 * VEHICLE_LIST_CACHE_MS; access is checked on every request; concurrent misses share one query.
 */
import { expect } from 'chai';
import request from 'supertest';
import { useTestContext } from './support/context.js';
import { buildApp } from '../api/app.js';
import { expectError, expectValid, insertPartner, insertUser, insertVehicle, insertZone } from './support/partner-fixtures.js';
import { dataOf, VehicleRecord } from '../schemas/partner/responses.js';
import { vehicleListsOf } from '../api/partner/vehicle-list.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';

describe('partner API: the vehicle list cache', () => {
  const t = useTestContext({ now: '2026-06-01T10:00:00Z', config: { VEHICLE_LIST_CACHE_MS: '1000' } });

  it('answers a zone from memory between writes, the same for every partner allowed to see it; a write shows in the very next list', async () => {
    const server = buildApp(t.ctx).callback();
    const zone = await insertZone(t.ctx.db);
    const a = await insertPartner(t.ctx.db);
    const b = await insertPartner(t.ctx.db);
    const v = await insertVehicle(t.ctx.db, zone);
    const list = (key: string) => request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', key);
    const lists = vehicleListsOf(t.ctx);

    const first = await list(a.key);
    expect(first.status).to.equal(200);
    expect(first.headers['content-type']).to.equal('application/json; charset=utf-8');
    expectValid(dataOf(VehicleRecord, true), first.body);
    expect(first.body.data.map((x: { id: string }) => x.id)).to.deep.equal([v.id]);
    const rendered = lists.renders;
    expect((await list(b.key)).body).to.deep.equal(first.body);
    expect((await list(a.key)).body).to.deep.equal(first.body);
    expect(lists.renders, 'served from memory').to.equal(rendered);

    // taken out of service (the ops CLI's statement): gone from the very next list, for both partners
    await t.ctx.db.query(`UPDATE vehicles SET status = 'unavailable' WHERE id = $1`, [v.id]);
    expect((await list(b.key)).body).to.deep.equal({ data: [] });
    expect((await list(a.key)).body).to.deep.equal({ data: [] });
    expect(lists.renders).to.equal(rendered + 1);
    // back in service
    await t.ctx.db.query(`UPDATE vehicles SET status = 'ready' WHERE id = $1`, [v.id]);
    expect((await list(a.key)).body.data).to.have.length(1);
  });

  it('what changes with time alone shows within VEHICLE_LIST_CACHE_MS: a booking hold expiring', async () => {
    const server = buildApp(t.ctx).callback();
    const zone = await insertZone(t.ctx.db);
    const p = await insertPartner(t.ctx.db);
    const v = await insertVehicle(t.ctx.db, zone);
    const list = () => request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key);
    const maas = await insertMaasPartner(t.ctx.db);
    const user = await insertUser(t.ctx.db, maas.id);
    await t.ctx.db.query(
      `INSERT INTO tomp_bookings (partner_id, user_id, vehicle_id, state, from_location, customer_external_id, expires_at)
       VALUES ($1, $2, $3, 'PENDING', ST_SetSRID(ST_MakePoint(0, 0), 4326), 'c-1', $4)`,
      [maas.id, user, v.id, new Date(t.ctx.clock.now().getTime() + 500)],
    );
    expect((await list()).body.data, 'held by a pending booking').to.have.length(0);
    t.ctx.clock.advance(600); // the hold has expired, nothing was written
    expect((await list()).body.data, 'still within the bound').to.have.length(0);
    t.ctx.clock.advance(400);
    expect((await list()).body.data, 'the bound has passed').to.have.length(1);
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
    t.ctx.db.many = (query: unknown, ...rest: unknown[]) => {
      if ((query as { name?: string }).name === 'PartnerAvailableVehicles') queries++;
      return (many as (...a: unknown[]) => Promise<unknown[]>)(query, ...rest);
    };
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, () => request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key)));
      expect(answers.map((r) => r.body.data.length)).to.deep.equal(Array(8).fill(3));
      expect(queries).to.equal(1);
    } finally {
      t.ctx.db.many = many;
    }
  });
});
