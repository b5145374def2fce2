/**
 * A cached read never contradicts a write its caller could have seen, across processes: two real
 * API processes (bin/api.ts, each with its own pool and caches) on one database, the vehicle list
 * cached for longer than each step of the test takes (VEHICLE_LIST_CACHE_MS=10000, the most allowed), so that only the zone
 * version (migration 000140, api/partner/vehicle-list.ts) can make a list change. After a rental
 * start or end, a TOMP booking or finish, or an operator's status change made through one process
 * (or the ops CLI's statement), the very next list, vehicle lookup and pricing read from the other
 * process reflect it; and lists between writes are served from the cache.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { startApiProcess, type ApiProcess } from './support/api-process.js';
import { Db } from '../lib/core/db.js';
import { sql } from '../lib/core/sql/typed.js';
import { createLogger } from '../lib/core/log.js';
import { insertPartner, insertUser, type PartnerFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

type Api = ApiProcess;
const startApi = (database: TestDatabase, store: string) => startApiProcess(database, store, { VEHICLE_LIST_CACHE_MS: '10000' });

describe('cache coherence across two API processes', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let db: Db;
  let store: string;
  let one: Api;
  let two: Api;
  let zoneId: string;
  let a: PartnerFixture;
  let b: PartnerFixture;
  let maas: { id: string; key: string };

  before(async () => {
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'coherence-store-'));
    db = new Db(database.url, createLogger('silent'));
    zoneId = await insertTompZone(db);
    a = await insertPartner(db);
    b = await insertPartner(db);
    maas = await insertMaasPartner(db);
    [one, two] = await Promise.all([startApi(database, store), startApi(database, store)]);
  });
  after(async () => {
    for (const api of [one, two]) api?.stop();
    await db?.close();
    await database?.drop();
    rmSync(store, { recursive: true, force: true });
  });

  const get = async (api: Api, path: string, key: string) => {
    const res = await fetch(`${api.base}${path}`, { headers: { 'X-Auth-Token': key } });
    return { status: res.status, body: (await res.json()) as any };
  };
  const post = async (api: Api, path: string, headers: Record<string, string>, body: unknown) => {
    const res = await fetch(`${api.base}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const listed = async (api: Api, key: string): Promise<string[]> => {
    const res = await get(api, `/v1/vehicles?zoneID=${zoneId}`, key);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data.map((v: { id: string }) => v.id);
  };

  it('a partner rental started and ended through one process shows at once in the other’s list, lookup and pricing', async () => {
    const v = await insertTompVehicle(db, zoneId);
    const user = await insertUser(db, a.id);
    // both processes have the zone's list cached, with the vehicle in it
    expect(await listed(one, a.key)).to.include(v.id);
    expect(await listed(two, b.key)).to.include(v.id);

    const started = await post(one, '/v1/rental/start', { 'X-Auth-Token': a.key }, { userId: user, vehicleId: v.id });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    expect(await listed(two, b.key), 'rented: gone from the other process’s list').to.not.include(v.id);
    expect(await listed(one, a.key), 'and from the writer’s').to.not.include(v.id);
    const lookup = await get(two, `/v1/vehicles/code/${v.code}`, b.key);
    expect(lookup.body.data[0].attributes, JSON.stringify(lookup.body)).to.include({ status: 'riding', locked: false });
    const again = await post(two, '/v1/rental/start', { 'X-Auth-Token': b.key }, { userId: await insertUser(db, b.id), vehicleId: v.id });
    expect(again.body.errors[0].code, 'the second partner is refused, as the list said').to.equal('VehicleNotAvailable');

    const ended = await post(two, `/v1/rental/${started.body.data[0].id}/end`, { 'X-Auth-Token': a.key }, {});
    expect(ended.status, JSON.stringify(ended.body)).to.equal(200);
    expect(await listed(one, b.key), 'ended: back in the first process’s list').to.include(v.id);
    const pricing = await get(one, `/v1/pricing/vehicle/${v.id}`, b.key);
    expect(pricing.status, JSON.stringify(pricing.body)).to.equal(200);
  });

  it('a TOMP booking and its finish through one process show at once in the other’s partner list', async () => {
    const v = await insertTompVehicle(db, zoneId);
    expect(await listed(one, a.key)).to.include(v.id);
    const booked = await post(two, '/edge/tomp/bookings/one-stop', { 'X-Access-Token': maas.key }, oneStopBody(v.id, v));
    expect(booked.status, JSON.stringify(booked.body)).to.equal(201);
    expect(await listed(one, a.key), 'booked through TOMP: gone from the partner list').to.not.include(v.id);
    const leg = booked.body.legs[0].id;
    const time = new Date().toISOString();
    expect((await post(two, `/edge/tomp/legs/${leg}/events`, { 'X-Access-Token': maas.key }, { event: 'START_FINISHING', time })).status).to.equal(200);
    const finished = await post(
      two,
      `/edge/tomp/legs/${leg}/events`,
      { 'X-Access-Token': maas.key },
      { event: 'FINISH', time, userLocation: { coordinates: { lng: v.lng, lat: v.lat + 0.002 } } },
    );
    expect(finished.status, JSON.stringify(finished.body)).to.equal(200);
    expect(await listed(one, a.key), 'finished: back in the list').to.include(v.id);
  });

  it('an operator’s status change (the ops CLI’s statement) shows at once in both processes; between writes the list is served from the cache', async () => {
    const v = await insertTompVehicle(db, zoneId);
    expect(await listed(one, a.key)).to.include(v.id);
    expect(await listed(two, b.key)).to.include(v.id);
    await db.maybeOne(sql('AdminSetVehicleStatus'), [v.code, 'unavailable']);
    expect(await listed(one, a.key)).to.not.include(v.id);
    expect(await listed(two, b.key)).to.not.include(v.id);
    await db.maybeOne(sql('AdminSetVehicleStatus'), [v.code, 'ready']);
    expect(await listed(two, a.key)).to.include(v.id);

    // between writes the list comes from each process's cache: a change made behind the version
    // (its trigger switched off for the test) does not show, in either process
    const battery = async (api: Api) =>
      (await get(api, `/v1/vehicles?zoneID=${zoneId}`, a.key)).body.data.find((x: { id: string }) => x.id === v.id).attributes.batteryLevel;
    const shown = [await battery(one), await battery(two)];
    await db.query(`ALTER TABLE vehicles DISABLE TRIGGER vehicles_zone_version_update`);
    try {
      await db.query(`UPDATE vehicles SET battery_percent = 42 WHERE id = $1`, [v.id]);
    } finally {
      await db.query(`ALTER TABLE vehicles ENABLE TRIGGER vehicles_zone_version_update`);
    }
    for (let i = 0; i < 10; i++) expect([await battery(one), await battery(two)], 'served from the caches').to.deep.equal(shown);
    // the next write to the zone brings the list up to date in both
    await db.query(`UPDATE zones SET name = name || ' ' WHERE id = $1`, [zoneId]);
    expect([await battery(one), await battery(two)]).to.deep.equal([42, 42]);
  });
});
