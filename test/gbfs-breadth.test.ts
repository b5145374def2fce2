/**
 * GBFS work follows change (issue 26; docs/gbfs.md "Cadence and change detection"): the tick picks
 * the zones whose input moved (migration 000150's counters) or whose status files are due, a zone's
 * job loads the zone only when something changed, an idle zone only re-envelopes its stored status
 * data, every kind of write that changes a zone's files reaches them at the next tick, and the GBFS
 * 2.2 systems are assembled from their zones' parts byte for byte as the whole-system builder would
 * write them. Then the same through pg-boss with two publisher processes' workers.
 */
import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { ENVELOPE_TAIL, envelopeHead, reEnveloped } from '../lib/feeds/gbfs/envelope.js';
import {
  gbfsArea,
  gbfsFeedClient,
  gbfsVehicle,
  gbfsZone,
  readSnapshot,
  servedSnapshotText,
  square,
  type VehicleFixture,
  type ZoneFixture,
} from './support/gbfs-fixtures.js';
import { buildGbfsZone, GbfsMemory, planGbfsTick, publishGbfsSnapshots, runGbfsTick } from '../publisher/feeds/gbfs/index.js';
import { buildEnv, buildGbfsZones } from '../publisher/feeds/gbfs/zone.js';
import { buildGbfsScope, type GbfsScope } from '../publisher/feeds/gbfs/scope.js';
import { readParts, storeParts } from '../publisher/feeds/gbfs/parts.js';
import type { Queryable } from '../lib/core/db.js';
import type { UntypedQuery } from '../lib/core/sql/typed.js';
import { startPublisher, type Publisher } from '../publisher/index.js';
import { GBFS_RUN_SECONDS, STATUS_REFRESH_SECONDS, STATUS_TTL, gbfsSnapshotRef, isStatusFile } from '../lib/feeds/gbfs/files.js';
import { BLOCK_KEYS, loadZoneData, loadZoneVehicles } from '../lib/feeds/gbfs/model.js';
import { buildV2, envelopeV2, systemLanguages, type V2Scope } from '../lib/feeds/gbfs/v2.js';
import { buildV3, envelopeV3 } from '../lib/feeds/gbfs/v3.js';
import { gbfsV2Scope } from '../lib/feeds/roles.js';
import { sql } from '../lib/core/sql/typed.js';
import { gbfsUnit } from '../publisher/publication/lock.js';
import { contentDigest, fragment, gzipOf, inflateFragment, crc32Combine } from '../lib/core/gzip.js';
import { crc32, gunzipSync } from 'node:zlib';
import pg from 'pg';
import { randomBytes } from 'node:crypto';

const DAY = '2026-11-21T10:00:00Z';
// 22:30 UTC = 23:30 in Berlin: inside zone B's 22:00–06:00 sleep window
const NIGHT = '2026-11-21T22:30:00Z';

describe('GBFS fragments: one gzip member from pieces compressed apart', () => {
  it('stitches fragments into a file any gzip reader decodes, with the CRC combined from the pieces', () => {
    for (let i = 0; i < 50; i++) {
      const a = randomBytes(Math.floor(Math.random() * 5000));
      const b = randomBytes(Math.floor(Math.random() * 70000));
      expect(crc32Combine(crc32(a), crc32(b), b.length)).to.equal(crc32(Buffer.concat([a, b])) >>> 0);
    }
    const texts = ['{"last_updated":1,"data":{"bikes":[', '', JSON.stringify({ a: 'x'.repeat(100_000) }), ',', 'abc'.repeat(30_000), ']}}'];
    const frags = texts.map((x) => fragment(x));
    expect(gunzipSync(gzipOf(frags)).toString()).to.equal(texts.join(''));
    expect(inflateFragment(frags[2]).toString()).to.equal(texts[2]);
    // the identity follows the text's pieces: another piece, another digest
    expect(contentDigest(frags)).to.not.equal(contentDigest([...frags.slice(0, 5), fragment(']} }')]));
  });

  it('re-envelopes a stored file byte for byte as if it had been written with the later head (what the route serves after a refresh)', () => {
    for (const version of ['2.2', '3.0'] as const) {
      const at = new Date('2026-11-21T10:00:00Z');
      const later = new Date('2026-11-21T10:00:45Z');
      const data = [fragment('{"bikes":['), fragment(JSON.stringify({ a: 'x'.repeat(90_000) })), fragment(']}'), fragment(ENVELOPE_TAIL)];
      const stored = gzipOf([fragment(envelopeHead(version, at, 30)), ...data]);
      const served = reEnveloped(stored, version, 30, at, later)!;
      expect(served.equals(gzipOf([fragment(envelopeHead(version, later, 30)), ...data])), version).to.equal(true);
      expect(JSON.parse(gunzipSync(served).toString()).last_updated).to.equal(version === '2.2' ? later.getTime() / 1000 : '2026-11-21T10:00:45Z');
      // bytes not laid out as the publisher writes them (another head, another ttl): not touched
      expect(reEnveloped(stored, version, 60, at, later)).to.equal(undefined);
      expect(reEnveloped(stored, version, 30, later, at)).to.equal(undefined);
      expect(reEnveloped(Buffer.from('not gzip'), version, 30, at, later)).to.equal(undefined);
    }
  });
});

describe('GBFS follows change', function () {
  this.timeout(60_000);
  const t = useTestContext({ now: DAY });
  // what this describe's builds keep between them, as a publisher's workers do (memory.ts)
  const memory = new GbfsMemory();
  let A: ZoneFixture;
  let B: ZoneFixture;
  let va: VehicleFixture;
  let scopeA: string;

  const rows = async () =>
    new Map(
      (
        await t.ctx.db.many<{ version: string; scope: string; file: string; sha256: string; last_updated: Date; object_key: string }>(
          `SELECT version, scope, file, sha256, last_updated, object_key FROM gbfs_snapshots`,
        )
      ).map((r) => [`${r.version}/${r.scope}/${r.file}`, r as { sha256: string; last_updated: Date; object_key: string }]),
    );
  const tick = async () => {
    t.ctx.clock.advance(GBFS_RUN_SECONDS * 1000);
    return runGbfsTick(t.ctx, memory);
  };
  const v3 = (zone: string, file: string) => readSnapshot(t.ctx, gbfsSnapshotRef('3.0', zone, file, 'city').objectKey);

  before(async () => {
    const db = t.ctx.db;
    A = await gbfsZone(db, { id: 'brd-a', lat: 48.137, lng: 11.575 });
    await gbfsArea(db, A.id, 'slow-zone', square(48.13, 11.57, 0.003), { name: 'Old town', maxSpeedKph: 12 });
    va = await gbfsVehicle(db, A.id, 48.137, 11.575);
    await gbfsVehicle(db, A.id, 48.138, 11.576, { type: 'gbfs-bike' });
    B = await gbfsZone(db, { id: 'brd-b', parkingMode: 'parking-spot', lat: 52.52, lng: 13.405, sleepWindows: [{ start: '22:00', end: '06:00' }] });
    await gbfsArea(db, B.id, 'parking-spot', square(52.52, 13.405, 0.0005), { name: 'Spot 1', capacity: 5 });
    await gbfsVehicle(db, B.id, 52.52, 13.405);
    await gbfsFeedClient(db, 'city', null);
    await gbfsFeedClient(db, 'gbfs', [A.id]);
    scopeA = gbfsV2Scope('gbfs', [A.id]);
  });

  it('the first tick builds every zone and scope', async () => {
    const r = await tick();
    expect(r).to.include({ zones: 2, built: 2, scopes: 2, failed: 0 });
    expect(r.written).to.be.greaterThan(30);
  });

  it('within the refresh interval nothing is due: no job, nothing written', async () => {
    t.ctx.clock.advance(5_000);
    expect(await planGbfsTick(t.ctx)).to.deep.include({ zones: [] });
    expect(await runGbfsTick(t.ctx, memory)).to.include({ zones: 0, built: 0, written: 0 });
  });

  it('idle zones cost the refresh of their status files only: stored data in a new envelope, no load', async () => {
    const before = await rows();
    const r = await tick();
    // 3 status files per zone, free_bike_status and system_alerts per scope
    // refreshed, not stored: only the rows' last_updated moves (the route serves the stored data in its envelope)
    expect(r).to.include({ zones: 2, built: 0, scopes: 2, written: 0, refreshed: 3 * 2 + 2 * 2, failed: 0 });
    const after = await rows();
    for (const [k, row] of after) {
      const file = k.split('/').pop()!;
      if (isStatusFile(file)) expect(row.last_updated.getTime(), k).to.equal(t.ctx.clock.now().getTime());
      if (isStatusFile(file)) expect(row.sha256, k).to.equal(before.get(k)!.sha256);
      else expect(row, k).to.deep.equal(before.get(k));
    }
    // and the refreshed file is the same data under the new last_updated
    const doc = await v3(A.id, 'vehicle_status');
    expect(Date.parse(doc.last_updated)).to.equal(t.ctx.clock.now().getTime());
    expect(doc.data.vehicles.map((v: any) => v.vehicle_id)).to.include(va.gbfsId);
  });

  it('a quiet hour: every status file stays within its ttl, static files keep the time their data changed', async () => {
    const info = (await rows()).get(`3.0/${A.id}/system_information`)!;
    for (let i = 0; i < 3600 / GBFS_RUN_SECONDS; i++) {
      const r = await tick();
      expect(r.failed).to.equal(0);
      for (const [k, row] of await rows())
        if (isStatusFile(k.split('/').pop()!)) expect(t.ctx.clock.now().getTime() - row.last_updated.getTime(), k).to.be.at.most(STATUS_TTL * 1000);
    }
    // the hourly rebuild from scratch happened (staggered) and found the same data
    expect((await rows()).get(`3.0/${A.id}/system_information`)).to.deep.equal(info);
    const builds = await t.ctx.db.many<{ zone_id: string; rebuild_due_at: Date }>(`SELECT zone_id, rebuild_due_at FROM gbfs_zone_builds`);
    for (const b of builds) expect(b.rebuild_due_at.getTime()).to.be.greaterThan(t.ctx.clock.now().getTime());
  });

  it('a vehicle moved: its zone is built (and only it), its 3.0 and 2.2 vehicle files change', async () => {
    await t.ctx.db.query(`UPDATE vehicles SET location = ST_SetSRID(ST_MakePoint(11.58, 48.139), 4326) WHERE id = $1`, [va.id]);
    const before = await rows();
    const r = await tick();
    expect(r).to.include({ zones: 2, built: 1, failed: 0 });
    const after = await rows();
    const changed = [...after].filter(([k, row]) => before.get(k)?.sha256 !== row.sha256 && !isStatusFile(k.split('/').pop()!)).map(([k]) => k);
    expect(changed, 'no static file').to.deep.equal([]);
    const moved = (await v3(A.id, 'vehicle_status')).data.vehicles.find((v: any) => v.vehicle_id === va.gbfsId);
    expect(moved.lon).to.equal(11.58);
    const bikes = (await readSnapshot(t.ctx, gbfsSnapshotRef('2.2', 'city', 'free_bike_status', 'city').objectKey)).data.bikes;
    expect(bikes.find((b: any) => b.bike_id === va.gbfsId).lon).to.equal(11.58);
  });

  it('a listed vehicle reporting again, or its GBFS id rotated, reaches the status files', async () => {
    await t.ctx.db.query(`UPDATE vehicles SET last_seen_at = $2 WHERE id = $1`, [va.id, new Date(t.ctx.clock.now().getTime() + 1000)]);
    expect(await tick()).to.include({ built: 1 });
    const v = (await v3(A.id, 'vehicle_status')).data.vehicles.find((x: any) => x.vehicle_id === va.gbfsId);
    expect(Date.parse(v.last_reported)).to.equal(t.ctx.clock.now().getTime() - GBFS_RUN_SECONDS * 1000 + 1000);
    const { gbfs_id } = await t.ctx.db.one<{ gbfs_id: string }>(`UPDATE vehicles SET gbfs_id = gen_random_uuid() WHERE id = $1 RETURNING gbfs_id`, [va.id]);
    expect(await tick()).to.include({ built: 1 });
    const ids = (await v3(A.id, 'vehicle_status')).data.vehicles.map((x: any) => x.vehicle_id);
    expect(ids).to.include(gbfs_id).and.not.include(va.gbfsId);
    va.gbfsId = gbfs_id;
  });

  it('an area edited: its zone static files at the next tick (areas bump the zone)', async () => {
    await gbfsArea(t.ctx.db, B.id, 'parking-spot', square(52.53, 13.41, 0.0005), { name: 'Spot 2', capacity: 3 });
    const r = await tick();
    expect(r).to.include({ built: 1, failed: 0 });
    expect((await v3(B.id, 'station_information')).data.stations).to.have.length(2);
    expect((await v3(B.id, 'station_status')).data.stations).to.have.length(2);
  });

  it('a vehicle type edited: every zone that uses it', async () => {
    await t.ctx.db.query(`UPDATE vehicle_types SET name = 'Scooter Pro' WHERE id = 'gbfs-scooter'`);
    expect(await tick()).to.include({ built: 2, failed: 0 });
    for (const z of [A.id, B.id]) {
      const names = (await v3(z, 'vehicle_types')).data.vehicle_types.map((x: any) => x.name[0].text);
      expect(names).to.include('Scooter Pro');
    }
    const v2types = (await readSnapshot(t.ctx, gbfsSnapshotRef('2.2', 'city', 'vehicle_types', 'city').objectKey)).data.vehicle_types;
    expect(v2types.map((x: any) => x.name)).to.include('Scooter Pro');
  });

  it('a sleep window turning by the clock alone: the zone is built though no write moved it', async () => {
    // not the hourly rebuild: the jump to the night would make it due
    await t.ctx.db.query(`UPDATE gbfs_zone_builds SET rebuild_due_at = '2027-01-01'`);
    await t.ctx.db.query(`UPDATE gbfs_scope_builds SET rebuild_due_at = '2027-01-01'`);
    t.ctx.clock.set(NIGHT);
    expect(await runGbfsTick(t.ctx, memory)).to.include({ built: 1, failed: 0 });
    expect((await v3(B.id, 'system_alerts')).data.alerts).to.have.length(1);
    expect((await v3(A.id, 'system_alerts')).data.alerts).to.have.length(0);
    t.ctx.clock.advance(GBFS_RUN_SECONDS * 1000);
    expect(await runGbfsTick(t.ctx, memory)).to.include({ built: 0 });
  });

  it('a 2.2 system assembled from its zones parts is byte for byte the whole-system build', async () => {
    for (const scope of ['city', scopeA]) {
      const row = await t.ctx.db.one<{ object_key: string; last_updated: Date }>(
        `SELECT object_key, last_updated FROM gbfs_snapshots WHERE version = '2.2' AND scope = $1 AND file = 'free_bike_status'`,
        [scope],
      );
      const served = (await servedSnapshotText(t.ctx, row.object_key))!;
      const zones = [
        ...(await loadZoneData(t.ctx.db, { zoneIds: scope === 'city' ? null : [A.id], now: t.ctx.clock.now(), areas: true, vehicles: true })).values(),
      ];
      const langs = systemLanguages(zones);
      const s: V2Scope = {
        id: scope,
        clientScope: scope,
        role: scope === 'city' ? 'city' : 'gbfs',
        zoneIds: scope === 'city' ? null : [A.id],
        zones,
        language: langs[0],
        languages: langs,
      };
      const env = {
        now: t.ctx.clock.now(),
        publicBaseUrl: t.ctx.config.publicBaseUrl,
        providerId: t.ctx.config.providerId,
        providerName: t.ctx.config.providerName,
      };
      for (const file of ['free_bike_status', 'geofencing_zones'] as const) {
        const r = await t.ctx.db.one<{ object_key: string; last_updated: Date; ttl: number }>(
          `SELECT object_key, last_updated, ttl FROM gbfs_snapshots WHERE version = '2.2' AND scope = $1 AND file = $2`,
          [scope, file],
        );
        expect(await servedSnapshotText(t.ctx, r.object_key), `${scope} ${file}`).to.equal(
          JSON.stringify(envelopeV2(r.last_updated, r.ttl, buildV2(file, s, env))),
        );
      }
      expect(served.length).to.be.greaterThan(0);
    }
  });

  it('publishGbfsSnapshots (ops: build everything now) goes through the same per-zone builder', async () => {
    t.ctx.clock.advance(1000);
    const r = await publishGbfsSnapshots(t.ctx, { only: 'all', memory });
    expect(r).to.include({ written: 0, failed: 0 });
    // the per-zone builder itself: a zone whose publication lock another process holds is left to it
    const held = await t.ctx.db.pool.connect();
    const units = [gbfsUnit('zone', A.id)];
    try {
      await held.query(sql('PublicationLock'), [units]);
      expect(await buildGbfsZone(t.ctx, memory, A.id, { force: 'all' })).to.include({ busy: true, written: 0 });
      // a scope of A alone is A's own: its files are written under A's lock, by A's build, never beside it
      expect(await buildGbfsScope(t.ctx, memory, { id: scopeA, role: 'gbfs', zoneIds: [A.id] }, { force: 'all' })).to.deep.equal({
        written: 0,
        refreshed: 0,
        unchanged: 0,
        failed: 0,
      });
    } finally {
      await held.query(sql('PublicationUnlock'), [units]);
      held.release();
    }
  });

  it("a scope of one zone is assembled by its zone's build, in the same transaction, from the parts it just stored", async () => {
    const v = await gbfsVehicle(t.ctx.db, A.id, 48.1371, 11.5751);
    t.ctx.clock.advance(1000);
    const own: GbfsScope = { id: scopeA, role: 'gbfs', zoneIds: [A.id] };
    const r = await buildGbfsZone(t.ctx, memory, A.id, { scopes: [own, { id: 'city', role: 'city', zoneIds: null }] });
    // the zone's vehicle_status and its own system's free_bike_status; the city's system (every zone) is its job's
    expect(r).to.include({ work: 'build', partsChanged: true, systems: 1, failed: 0 });
    const bikes = (await readSnapshot(t.ctx, gbfsSnapshotRef('2.2', scopeA, 'free_bike_status', 'gbfs').objectKey)).data.bikes.map((x: any) => x.bike_id);
    expect(bikes).to.include(v.gbfsId);
    const city = (await readSnapshot(t.ctx, gbfsSnapshotRef('2.2', 'city', 'free_bike_status', 'city').objectKey)).data.bikes.map((x: any) => x.bike_id);
    expect(city).to.not.include(v.gbfsId);
    // nothing changed since: the next build of the zone assembles nothing
    expect(await buildGbfsZone(t.ctx, memory, A.id, { scopes: [own] })).to.include({ work: 'none', systems: 0, written: 0 });
  });

  it('through pg-boss: the tick sends one job per zone with work, two publishers share them, a new zone and scope are published', async function () {
    this.timeout(90_000);
    const C = await gbfsZone(t.ctx.db, { id: 'brd-c', lat: 50.11, lng: 8.68 });
    await gbfsVehicle(t.ctx.db, C.id, 50.11, 8.68);
    await gbfsFeedClient(t.ctx.db, 'gbfs', [C.id]);
    t.ctx.clock.advance(GBFS_RUN_SECONDS * 1000);
    const pubs: Publisher[] = [];
    try {
      for (let i = 0; i < 2; i++) pubs.push(await startPublisher(t.ctx, { cron: false, concurrency: 1, pollingIntervalSeconds: 0.5 }));
      await pubs[0].boss.send('feeds-gbfs', {}, { singletonKey: 'gbfs' });
      const deadline = Date.now() + 60_000;
      const done = async () => {
        const c = await t.ctx.db.maybeOne(`SELECT 1 FROM gbfs_snapshots WHERE version = '3.0' AND scope = $1 AND file = 'vehicle_status'`, [C.id]);
        const city = await readSnapshot(t.ctx, gbfsSnapshotRef('2.2', 'city', 'system_regions', 'city').objectKey);
        const own = await t.ctx.db.maybeOne(`SELECT 1 FROM gbfs_snapshots WHERE version = '2.2' AND scope = $1 AND file = 'free_bike_status'`, [
          gbfsV2Scope('gbfs', [C.id]),
        ]);
        return c !== undefined && own !== undefined && city.data.regions.some((r: any) => r.region_id === C.id);
      };
      while (Date.now() < deadline && !(await done())) await new Promise((r) => setTimeout(r, 200));
      expect(await done(), 'both versions wrote their snapshots before the deadline').to.equal(true);
      const jobs = await t.ctx.db.many(`SELECT name, count(*)::int AS n FROM pgboss.job WHERE name LIKE 'feeds-gbfs%' GROUP BY name ORDER BY name`);
      const byName = Object.fromEntries(jobs.map((j) => [j.name, j.n]));
      expect(byName['feeds-gbfs-zone']).to.equal(3);
      // scope jobs only for the scope of several zones (the city's, every zone): the single-zone
      // scopes (gbfs [A], gbfs [C]) are assembled by their zone's job
      expect(byName['feeds-gbfs-scope']).to.be.at.least(1);
      const scoped = await t.ctx.db.many<{ id: string }>(`SELECT DISTINCT data->>'id' AS id FROM pgboss.job WHERE name = 'feeds-gbfs-scope'`);
      expect(scoped.map((j) => j.id)).to.deep.equal(['city']);
    } finally {
      for (const p of pubs) await p.stop();
    }
    // every row names its object as written
    for (const [k, r] of await rows()) expect((await t.ctx.store.head(r.object_key))?.metadata.sha256, k).to.equal(r.sha256);
  });
});

describe('GBFS vehicle blocks: a build costs the vehicles that changed', function () {
  this.timeout(60_000);
  const t = useTestContext({ now: DAY });
  // what this describe's builds keep between them, as a publisher's workers do (memory.ts)
  const memory = new GbfsMemory();
  let Z: ZoneFixture;
  let scope: string;
  const vehicles: VehicleFixture[] = [];

  const parts = async () =>
    new Map(
      (await t.ctx.db.many<{ part: string; sha256: string }>(`SELECT part, sha256 FROM gbfs_zone_parts WHERE zone_id = $1`, [Z.id])).map((r) => [
        r.part,
        r.sha256,
      ]),
    );
  const tick = async () => {
    t.ctx.clock.advance(GBFS_RUN_SECONDS * 1000);
    return runGbfsTick(t.ctx, memory);
  };
  /** the stored text of a snapshot and its row */
  const stored = async (version: '2.2' | '3.0', scopeId: string, file: string) => {
    const row = await t.ctx.db.one<{ object_key: string; last_updated: Date; ttl: number }>(
      `SELECT object_key, last_updated, ttl FROM gbfs_snapshots WHERE version = $1 AND scope = $2 AND file = $3`,
      [version, scopeId, file],
    );
    const obj = await t.ctx.store.get(row.object_key);
    const chunks: Buffer[] = [];
    for await (const c of obj!.body) chunks.push(c as Buffer);
    return { text: gunzipSync(Buffer.concat(chunks)).toString('utf8'), row };
  };

  /** the zone's stored 3.0 vehicle_status is the whole builder's text of the zone as loaded now */
  const vehicleStatusIsWhole = async () => {
    const env = buildEnv(t.ctx, t.ctx.clock.now());
    const z = (await loadZoneData(t.ctx.db, { zoneIds: [Z.id], now: env.now, areas: true, vehicles: true })).get(Z.id)!;
    const v3 = await stored('3.0', Z.id, 'vehicle_status');
    expect(v3.text).to.equal(JSON.stringify(envelopeV3(v3.row.last_updated, v3.row.ttl, buildV3('vehicle_status', z, env, 'city'))));
    return { env, z, v3 };
  };

  before(async () => {
    Z = await gbfsZone(t.ctx.db, { id: 'blk-z', lat: 48.137, lng: 11.575 });
    // enough vehicles that most of the 16 blocks (first hex digit of the GBFS id) hold some
    for (let i = 0; i < 48; i++) vehicles.push(await gbfsVehicle(t.ctx.db, Z.id, 48.13 + i * 0.0002, 11.57 + i * 0.0002, i % 7 ? {} : { type: 'gbfs-bike' }));
    await gbfsFeedClient(t.ctx.db, 'gbfs', [Z.id]);
    scope = gbfsV2Scope('gbfs', [Z.id]);
    expect(await tick()).to.include({ failed: 0 });
  });

  it('a ride started and one ended: only the blocks of their vehicles are rendered and stored again, and the files are the whole builders text', async () => {
    const before = await parts();
    const [ends, starts] = [vehicles[3], vehicles[10]];
    // the ride's end lists the vehicle again under a new GBFS id, in another block
    const digit = ends.gbfsId[0] === 'a' ? 'b' : 'a';
    const newId = `${digit}${ends.gbfsId.slice(1)}`;
    await t.ctx.db.query(`UPDATE vehicles SET gbfs_id = $2 WHERE id = $1`, [ends.id, newId]);
    await t.ctx.db.query(`UPDATE vehicles SET status = 'riding' WHERE id = $1`, [starts.id]);
    expect(await tick()).to.include({ built: 1, failed: 0 });
    const after = await parts();
    const changed = [...after.keys()].filter((p) => before.get(p) !== after.get(p)).sort();
    const blocks = [...new Set([ends.gbfsId[0], digit, starts.gbfsId[0]])];
    expect(changed).to.have.members(blocks.flatMap((d) => [`v2/free_bike_status/${d}`, `v3/vehicle_status/${d}`]));
    ends.gbfsId = newId;

    const { env, z, v3 } = await vehicleStatusIsWhole();
    const ids = JSON.parse(v3.text).data.vehicles.map((v: any) => v.vehicle_id);
    expect(ids).to.include(newId).and.not.include(starts.gbfsId);
    const v2 = await stored('2.2', scope, 'free_bike_status');
    const s: V2Scope = { id: scope, clientScope: scope, role: 'gbfs', zoneIds: [Z.id], zones: [z], language: 'en', languages: ['en'] };
    expect(v2.text).to.equal(JSON.stringify(envelopeV2(v2.row.last_updated, v2.row.ttl, buildV2('free_bike_status', s, env))));
  });

  it('the ttl refresh re-envelopes the stored blocks: the same vehicles, nothing loaded', async () => {
    const before = (await stored('3.0', Z.id, 'vehicle_status')).text;
    expect(await tick()).to.include({ built: 0, failed: 0 });
    const after = await stored('3.0', Z.id, 'vehicle_status');
    expect(after.row.last_updated.getTime()).to.equal(t.ctx.clock.now().getTime());
    expect(JSON.parse(after.text).data).to.deep.equal(JSON.parse(before).data);
  });

  it('blocks rendered afresh (a process without them, the hourly rebuild) are the same bytes: nothing is written', async () => {
    await t.ctx.db.query(`UPDATE vehicles SET location = ST_SetSRID(ST_MakePoint(11.58, 48.139), 4326) WHERE id = $1`, [vehicles[20].id]);
    expect(await tick()).to.include({ built: 1, failed: 0 });
    const before = await parts();
    t.ctx.clock.advance(1000);
    // 'status': every block rendered from the loaded rows, none reused
    expect(await publishGbfsSnapshots(t.ctx, { only: 'status', memory })).to.include({ written: 0, failed: 0 });
    expect(await parts()).to.deep.equal(before);
  });

  it('a vehicle that fails its schema: neither file is written, the 2.2 part keeps every previous block, until it is fixed', async () => {
    const bad = vehicles[30];
    const before = await parts();
    const v3Before = (await stored('3.0', Z.id, 'vehicle_status')).row;
    // latitude out of range: the item fails our schema in both versions
    await t.ctx.db.query(`UPDATE vehicles SET location = ST_SetSRID(ST_MakePoint(11.58, 95), 4326) WHERE id = $1`, [bad.id]);
    for (let i = 0; i < 2; i++) {
      // rendered (and failed) again at every build: no block of it is kept
      expect((await tick()).failed).to.equal(2);
      expect((await stored('3.0', Z.id, 'vehicle_status')).row.last_updated).to.deep.equal(v3Before.last_updated);
      const now = await parts();
      for (const p of [...now.keys()].filter((k) => k.startsWith('v2/free_bike_status/') || k.startsWith('v3/vehicle_status/')))
        expect(now.get(p), p).to.equal(before.get(p));
    }
    await t.ctx.db.query(`UPDATE vehicles SET location = ST_SetSRID(ST_MakePoint(11.58, 48.14), 4326) WHERE id = $1`, [bad.id]);
    expect(await tick()).to.include({ failed: 0 });
    const lat = (doc: any) => doc.data.vehicles.find((v: any) => v.vehicle_id === bad.gbfsId).lat;
    expect(lat(JSON.parse((await stored('3.0', Z.id, 'vehicle_status')).text))).to.equal(48.14);
  });

  it('a zone edit (its minimum battery) renders every block again', async () => {
    const before = await parts();
    await t.ctx.db.query(`UPDATE zones SET min_battery_percent = 90 WHERE id = $1`, [Z.id]);
    expect(await tick()).to.include({ built: 1, failed: 0 });
    const after = await parts();
    const vehicleParts = [...after.keys()].filter((p) => p.startsWith('v3/vehicle_status/') && after.get(p) !== before.get(p));
    // every vehicle is disabled now (battery 80 < 90): every non-empty block changed
    const nonEmpty = new Set(vehicles.filter((v) => v !== vehicles[10]).map((v) => v.gbfsId[0]));
    expect(vehicleParts.map((p) => p.slice(-1))).to.have.members([...nonEmpty]);
    const doc = JSON.parse((await stored('3.0', Z.id, 'vehicle_status')).text);
    expect(doc.data.vehicles.every((v: any) => v.is_disabled)).to.equal(true);
  });

  it('a load sends only the text of the blocks that changed: the others are the blocks this process holds', async () => {
    const held = memory.heldBlocks(Z.id)!;
    expect(held.filter((b) => b?.vehicles.length)).to.have.length.at.least(8);
    const moved = vehicles[5];
    const i = BLOCK_KEYS.indexOf(moved.gbfsId[0]);
    await t.ctx.db.query(`UPDATE vehicles SET battery_percent = battery_percent - 1 WHERE id = $1`, [moved.id]);
    const now = t.ctx.clock.now();
    // what crosses the wire for the digests held: the text of the moved vehicle's block alone
    const digests = held.flatMap((b, k) => (b?.sha256 ? [[Z.id, BLOCK_KEYS[k], b.sha256]] : []));
    const rows = await t.ctx.db.many(sql('GbfsVehicleBlocks'), [[Z.id], digests.map((d) => d[0]), digests.map((d) => d[1]), digests.map((d) => d[2])]);
    expect(rows.filter((r) => r.vehicles !== null).map((r) => r.block)).to.deep.equal([moved.gbfsId[0]]);
    // the zone as the next build loads it: the held blocks themselves, the changed one parsed, the
    // vehicles those of a load that holds nothing
    const zone = (await loadZoneData(t.ctx.db, { zoneIds: [Z.id], now, areas: false, vehicles: false })).get(Z.id)!;
    const z = await loadZoneVehicles(t.ctx.db, zone, now, memory.heldBlocks);
    const fresh = (await loadZoneData(t.ctx.db, { zoneIds: [Z.id], now, areas: false, vehicles: true })).get(Z.id)!;
    expect(z.vehicles).to.deep.equal(fresh.vehicles);
    expect(z.blocks).to.have.length(BLOCK_KEYS.length);
    z.blocks!.forEach((b, k) => {
      if (k === i) expect(b).not.to.equal(held[k]);
      else if (held[k]?.vehicles.length) expect(b, BLOCK_KEYS[k]).to.equal(held[k]);
      else expect(b.vehicles).to.deep.equal([]);
    });
    expect(z.blocks![i].vehicles.find((v) => v.gbfsId === moved.gbfsId)?.batteryPercent).to.equal(
      held[i]!.vehicles.find((v) => v.gbfsId === moved.gbfsId)!.batteryPercent - 1,
    );
    // a digest that is not the block's (another process's render, a stale one) gets the text
    const stale = await t.ctx.db.many(sql('GbfsVehicleBlocks'), [[Z.id], [Z.id], [BLOCK_KEYS[i]], ['not the digest']]);
    expect(stale.find((r) => r.block === BLOCK_KEYS[i])?.vehicles).to.be.a('string');
    // and the build that follows writes the files the whole builders would
    expect(await tick()).to.include({ built: 1, failed: 0 });
    await vehicleStatusIsWhole();
  });
});

describe('GBFS parts: read from this process memory', () => {
  const t = useTestContext({ now: DAY });
  // what this describe's builds keep between them, as a publisher's workers do (memory.ts)
  const memory = new GbfsMemory();

  // seen in the two-publishers test of test/gbfs.test.ts: a scope job read a zone's parts offering the
  // versions it held, a zone build of the same process stored newer ones before the rows came back,
  // and the parts that came back without their bodies were left without content, so the 2.2
  // free_bike_status of the scope was written without that zone's bikes
  it("a part that came back without its body keeps the version the read offered, whatever this process's memory holds by then", async () => {
    const Z = await gbfsZone(t.ctx.db, { id: 'gbfs-parts-race' });
    const part = 'v2/free_bike_status/0';
    const v1 = fragment('{"bike_id":"one"}');
    const v2 = fragment('{"bike_id":"two"}');
    await storeParts(t.ctx.db, memory, [{ zone: Z.id, part, fragment: v1 }]);
    let replaced = false;
    // the statement answers (v1 without its body: this process offered v1), then, before its rows
    // are handed on, another build of this process stores v2
    const racing = Object.assign(Object.create(t.ctx.db) as Queryable, {
      many: async (query: UntypedQuery, params: readonly unknown[]) => {
        const rows = await t.ctx.db.many(query, params);
        if (!replaced) {
          replaced = true;
          await storeParts(t.ctx.db, memory, [{ zone: Z.id, part, fragment: v2 }]);
        }
        return rows;
      },
    });
    const read = (await readParts(racing, [Z.id], [part], memory)).get(Z.id)!.get(part)!;
    expect(replaced).to.equal(true);
    expect(read.sha256).to.equal(v1.sha256);
    expect(read.fragment && inflateFragment(read.fragment).toString()).to.equal('{"bike_id":"one"}');
    // and the next read gets v2 with its content
    const next = (await readParts(t.ctx.db, [Z.id], [part], memory)).get(Z.id)!.get(part)!;
    expect(next.fragment && inflateFragment(next.fragment).toString()).to.equal('{"bike_id":"two"}');
  });
});

describe('GBFS zone jobs in batches (publisher/feeds/gbfs/batch.ts)', () => {
  const t = useTestContext({ now: DAY });
  // what this describe's builds keep between them, as a publisher's workers do (memory.ts)
  const memory = new GbfsMemory();

  /** The statements every pg client of this process sent while `fn` ran. */
  async function counted<T>(fn: () => Promise<T>): Promise<{ statements: number; value: T }> {
    // a property of function type, not a method: replaced and restored as a value
    const proto = pg.Client.prototype as unknown as { query: (this: pg.Client, ...args: unknown[]) => unknown };
    const original = proto.query;
    let statements = 0;
    proto.query = function (this: pg.Client, ...args: unknown[]) {
      statements++;
      return original.apply(this, args);
    };
    try {
      const value = await fn();
      return { statements, value };
    } finally {
      proto.query = original;
    }
  }

  it('one transaction for the batch: its statements do not grow with its zones, and a zone another process holds is left to it', async () => {
    const zones: string[] = [];
    for (let i = 0; i < 4; i++) {
      const z = await gbfsZone(t.ctx.db, { id: `brd-batch-${i}`, lat: 52 + i / 10, lng: 13.4 });
      await gbfsVehicle(t.ctx.db, z.id, 52 + i / 10, 13.4);
      zones.push(z.id);
    }
    const jobs = (ids: string[]) => ids.map((zone) => ({ zone }));
    const first = await buildGbfsZones(t.ctx, memory, jobs(zones));
    expect([...first.values()].map((r) => [r.work, r.failed])).to.deep.equal(zones.map(() => ['build', 0]));

    // idle, their status files due: each one's ttl refresh, in a batch of one, then of four
    t.ctx.clock.advance(STATUS_REFRESH_SECONDS * 1000);
    const one = await counted(() => buildGbfsZones(t.ctx, memory, jobs(zones.slice(0, 1))));
    t.ctx.clock.advance(STATUS_REFRESH_SECONDS * 1000);
    const four = await counted(() => buildGbfsZones(t.ctx, memory, jobs(zones)));
    expect(one.value.get(zones[0])).to.include({ work: 'refresh', refreshed: 3, failed: 0 });
    expect([...four.value.values()].map((r) => [r.work, r.refreshed])).to.deep.equal(zones.map(() => ['refresh', 3]));
    // lock, BEGIN, states, rows, parts, the index rows' and the build rows' records, COMMIT, unlock
    expect(one.statements).to.be.within(8, 12);
    expect(four.statements, 'statements of a batch of four idle zones against a batch of one').to.equal(one.statements);

    // one zone of the batch held by another process: left to it, the others refreshed
    const held = await t.ctx.db.pool.connect();
    const units = [gbfsUnit('zone', zones[1])];
    try {
      await held.query(sql('PublicationLock'), [units]);
      t.ctx.clock.advance(STATUS_REFRESH_SECONDS * 1000);
      const r = await buildGbfsZones(t.ctx, memory, jobs(zones));
      expect(r.get(zones[1])).to.include({ busy: true, work: 'none', refreshed: 0 });
      for (const z of [zones[0], zones[2], zones[3]]) expect(r.get(z)).to.include({ busy: false, work: 'refresh', refreshed: 3 });
    } finally {
      await held.query(sql('PublicationUnlock'), [units]);
      held.release();
    }

    // the same zone twice in a fetch (two jobs sent apart), its own system named by both: built once
    const own: GbfsScope = { id: gbfsV2Scope('gbfs', [zones[2]]), role: 'gbfs', zoneIds: [zones[2]] };
    const twice = await buildGbfsZones(t.ctx, memory, [
      { zone: zones[2], scopes: [own] },
      { zone: zones[2], scopes: [own] },
    ]);
    expect(twice.size).to.equal(1);
    expect(twice.get(zones[2])).to.include({ systems: 1, failed: 0 });
    const bikes = (await readSnapshot(t.ctx, gbfsSnapshotRef('2.2', own.id, 'free_bike_status', 'gbfs').objectKey)).data.bikes;
    expect(bikes).to.have.length(1);
  });
});
