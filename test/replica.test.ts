/**
 * Reads on a streaming replica (DATABASE_REPLICA_URL, lib/core/replica.ts) against a real hot standby of
 * the test server (pg_basebackup, test/support/replica.ts): reads that may lag go to the replica,
 * writes and what must see them stay on the primary. With replay paused (the replica as far behind
 * as a replica gets), the vehicle list right after a rental start never shows the rented vehicle,
 * cached or not; `replayedPast` says no until replay resumes; a zone the replica has not seen yet is
 * found on the primary; the realtime MDS vehicle feeds answer from the replica, a device it lacks
 * from the primary; an hour's files and a GBFS zone's are built from the primary's data until the
 * replica has replayed past them, an hour from the replica once it has; a GBFS 2.2 scope assembles
 * its zones' parts on the replica once it has replayed past the scope's lock, on the primary while
 * it lags. An unreachable replica sends every read to the primary.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { vehicleListsOf } from '../api/partner/vehicle-list.js';
import { TOMP_PREFIX } from '../api/tomp/router.js';
import type { AppContext } from '../lib/domain/context.js';
import { gunzipSync } from 'node:zlib';
import { Db, DbError } from '../lib/core/db.js';
import { sql } from '../lib/core/sql/typed.js';
import { createLogger } from '../lib/core/log.js';
import { gbfsSnapshotRef } from '../lib/feeds/gbfs/files.js';
import { gbfsV2Scope } from '../lib/feeds/roles.js';
import { HOUR_MS } from '../lib/feeds/hours.js';
import { streamVehicles } from '../lib/feeds/mds/sources.js';
import { feedById } from '../lib/feeds/publications.js';
import { registerDbCollectors, registry } from '../lib/core/metrics.js';
import { readerPast, readOnReplica, replayedPast, replayLagBytes, streamOnReplica } from '../lib/core/replica.js';
import { buildGbfsScope, type GbfsScope } from '../publisher/feeds/gbfs/scope.js';
import { buildGbfsZone } from '../publisher/feeds/gbfs/zone.js';
import { GbfsMemory } from '../publisher/feeds/gbfs/memory.js';
import { publishHour } from '../publisher/publish.js';
import { useTestContext } from './support/context.js';
import { serverUrl } from './support/db.js';
import { freePort, waitFor } from './support/faults.js';
import { tokenFor } from './support/feed-auth.js';
import { feedEvent, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { gbfsVehicle, gbfsZone, readSnapshot } from './support/gbfs-fixtures.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';
import { standbyOrSkip, type Standby } from './support/replica.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';

interface LogLine {
  msg: string;
  pool?: string;
  zone?: string;
  feed?: string;
  scope?: string;
}

/** A logger whose lines the test reads. */
function capturedLog(): { log: ReturnType<typeof createLogger>; lines: () => LogLine[] } {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out.push(String(chunk));
      cb();
    },
  });
  return { log: createLogger('debug', sink), lines: () => out.map((l) => JSON.parse(l)) };
}

/** The device ids of the MDS vehicles of a zone, read through streamOnReplica (the realtime feeds' cursor). */
async function mdsDevices(db: Db, zoneId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const row of streamOnReplica(db, (pool) => streamVehicles(pool, zoneId))) out.push(row.device_id);
  return out;
}

const ids = (res: request.Response): string[] => {
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body.data.map((v: { id: string }) => v.id);
};

describe('reads on a streaming replica', function () {
  this.timeout(180_000);
  const t = useTestContext();
  // the builder's GBFS memory, as its publisher would keep it (publisher/feeds/gbfs/memory.ts)
  const memory = new GbfsMemory();
  let standby: Standby | undefined;
  /** the API's context with the replica; `uncached`: a second process with VEHICLE_LIST_CACHE_MS=0 */
  let app: AppContext;
  let uncached: AppContext;
  let partner: PartnerFixture;

  // replayed what the primary has now (a fixed position: on the loaded shared server the standby may
  // be seconds behind, which a position read afresh every second would never let it catch)
  const caughtUp = () => replayedPast(app.db, t.ctx.clock.now(), t.ctx.clock.now(), { waitMs: 30_000 });

  /** rows of `table` in the zone as the replica has replayed them */
  const onReplica = async (table: 'vehicles' | 'trips', zoneId: string) =>
    (await app.db.replica.one<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE zone_id = $1`, [zoneId])).n;

  before(async function () {
    // pg_basebackup copies the whole test server, which other test files are writing to meanwhile
    this.timeout(600_000);
    standby = await standbyOrSkip(this, serverUrl());
    const replicaUrl = standby.urlFor(t.database.name);
    app = { ...t.ctx, db: new Db(t.database.url, t.ctx.log, { max: 10, replicaUrl }) };
    // the second process waits up to 1 s for the replica (DATABASE_REPLICA_WAIT_MS) so that its renders
    // go there whenever it is caught up, however loaded the shared server is
    uncached = {
      ...t.ctx,
      config: { ...t.ctx.config, vehicleListCacheMs: 0, databaseReplicaWaitMs: 1000 },
      db: new Db(t.database.url, t.ctx.log, { max: 5, replicaUrl }),
    };
    partner = await insertPartner(app.db);
    await waitFor('the standby to replay the test database', caughtUp, 120_000).catch(async (err: Error) => {
      const primary = await app.db.one<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
      throw new Error(`${err.message}: primary at ${primary.lsn}, ${await standby?.describe()}`);
    });
  });

  after(async function () {
    this.timeout(120_000);
    await app?.db.close();
    await uncached?.db.close();
    await standby?.destroy();
  });

  afterEach(async function () {
    // a failed test must not leave the next one with replay paused
    if (this.currentTest?.state === 'failed') await standby?.resumeReplay().catch(() => undefined);
  });

  it('the read pool is the replica, read-only; the primary pool writes', async () => {
    expect((await app.db.replica.one('SELECT pg_is_in_recovery() AS standby')).standby).to.equal(true);
    expect((await app.db.one('SELECT pg_is_in_recovery() AS standby')).standby).to.equal(false);
    const write = await app.db.replica.query(`UPDATE zones SET name = name WHERE false`).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(write).to.be.instanceOf(DbError);
    expect((write as DbError).role, 'the error names the pool').to.equal('replica');
    expect((write as DbError).message).to.match(/\(replica\): cannot execute UPDATE in a read-only transaction/);
    // a pool without a replica reads through itself
    expect(t.ctx.db.replica).to.equal(t.ctx.db);
  });

  it('zone and tariff reads come from the replica; a zone it has not replayed yet is found on the primary, with its areas', async () => {
    const server = buildApp(app).callback();
    const zone = await insertZone(app.db);
    const maas = await insertMaasPartner(app.db);
    await waitFor('replayed', caughtUp, 60_000);
    const zoneName = async () => {
      const res = await request(server).get('/v1/zone/info').set('X-Auth-Token', partner.key);
      return res.body.data.attributes.zones.find((z: { zoneId: string }) => z.zoneId === zone.id)?.zoneName;
    };
    const regionName = async () => {
      const res = await request(server).get(`${TOMP_PREFIX}/operator/regions`).set('X-Access-Token', maas.key);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.find((r: { regionId: string }) => r.regionId === zone.id)?.name;
    };
    expect([await zoneName(), await regionName()]).to.deep.equal(['Berlin', zone.id]);

    await standby!.pauseReplay();
    await app.db.query(`UPDATE zones SET city = 'Renamed', name = 'Renamed' WHERE id = $1`, [zone.id]);
    // what the replica had replayed: these reads went there
    expect([await zoneName(), await regionName()], 'zone info and TOMP regions from the paused replica').to.deep.equal(['Berlin', zone.id]);

    const fresh = await insertZone(app.db);
    const areas = await request(server).get(`/v2/zone/id/${fresh.id}`).set('X-Auth-Token', partner.key);
    expect(areas.status, 'a zone created a moment ago is never "not found"').to.equal(200);
    expect(
      areas.body.data.attributes.areas.map((a: { area_type: string }) => a.area_type),
      'its areas from the same pool',
    ).to.deep.equal(['operations']);
    const v = await insertVehicle(app.db, fresh);
    const lookup = await request(server).get(`/v1/vehicles/id/${v.id}`).set('X-Auth-Token', partner.key);
    expect(lookup.status, 'vehicle lookups read the primary').to.equal(200);
    expect(await mdsDevices(app.db, fresh.id), 'a realtime cursor on the paused replica').to.deep.equal([]);

    await standby!.resumeReplay();
    await waitFor('replayed', caughtUp, 60_000);
    expect([await zoneName(), await regionName()]).to.deep.equal(['Renamed', 'Renamed']);
    expect(await mdsDevices(app.db, fresh.id)).to.deep.equal([v.id]);
  });

  it('the vehicle list right after a rental start never shows the rented vehicle, even with replay paused; replayedPast says no until replay resumes', async () => {
    const server = buildApp(app).callback();
    const other = buildApp(uncached).callback();
    const zone: ZoneFixture = await insertZone(app.db);
    const user = await insertUser(app.db, partner.id);
    const v = await insertVehicle(app.db, zone);
    const w = await insertVehicle(app.db, zone);
    const list = (s: typeof server) => request(s).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', partner.key);
    await waitFor('replayed', caughtUp, 60_000);
    expect(ids(await list(server))).to.have.members([v.id, w.id]);
    expect(ids(await list(other))).to.have.members([v.id, w.id]);

    await standby!.pauseReplay();
    const started = await request(server).post('/v1/rental/start').set('X-Auth-Token', partner.key).send({ userId: user, vehicleId: v.id });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    // the replica still has the vehicle available: a list rendered there would show it
    const stale = await app.db.replica.many(sql('PartnerAvailableVehicles'), [zone.id, t.ctx.clock.now(), null]);
    expect(
      stale.map((r) => r.id),
      'the paused replica',
    ).to.include(v.id);
    for (let i = 0; i < 3; i++) {
      expect(ids(await list(server)), 'cached list').to.deep.equal([w.id]);
      expect(ids(await list(other)), 'uncached list, another process').to.deep.equal([w.id]);
    }
    const pricing = await request(other).get(`/v1/vehicles/id/${v.id}`).set('X-Auth-Token', partner.key);
    expect(pricing.body.data[0].attributes.status).to.equal('riding');

    // the publisher's question: not while paused (with a log line naming why), and never for an instant still ahead
    const now = t.ctx.clock.now();
    expect(await replayedPast(app.db, now, now, { waitMs: 100 })).to.equal(false);
    const captured = capturedLog();
    expect(await readerPast(app.db, now, now, captured.log, { waitMs: 100 })).to.equal(app.db);
    expect(captured.lines().map((l) => l.msg)).to.include('replica has not replayed far enough: reading from the primary');
    expect(await replayedPast(app.db, new Date(now.getTime() + 60_000), now)).to.equal(false);

    await standby!.resumeReplay();
    await waitFor('replayedPast once replay resumes', caughtUp, 60_000);
    expect(await readerPast(app.db, now, now, captured.log, { waitMs: 30_000 })).to.equal(app.db.replica);

    const ended = await request(server).post(`/v1/rental/${started.body.data[0].id}/end`).set('X-Auth-Token', partner.key).send({});
    expect(ended.status, JSON.stringify(ended.body)).to.equal(200);
    expect(ids(await list(server)), 'ended: listed again at once').to.have.members([v.id, w.id]);
    // caught up, lists are rendered on the replica (a render waits a few ms for it; the shared test
    // server's bursts of WAL can take longer, so a few tries)
    const lists = vehicleListsOf(uncached);
    const before = lists.rendersOnReplica;
    await waitFor('a list rendered on the replica', async () => {
      expect(ids(await list(other))).to.have.members([v.id, w.id]);
      return lists.rendersOnReplica > before;
    });
  });

  it('realtime MDS vehicles answer from the paused replica; a device it has not replayed is found on the primary; an events page misses nothing', async () => {
    const server = buildApp(app).callback();
    const zone = await insertZone(app.db);
    const v = await insertVehicle(app.db, zone);
    const auth = `Bearer ${await tokenFor(app, `replica-city-${zone.id}`, 'city', [zone.id])}`;
    const get = (path: string) => request(server).get(`/v1/partner-apis/mds/${zone.id}${path}`).set('Authorization', auth);
    const devices = async (path: string) => {
      const res = await get(path);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.vehicles.map((x: { device_id: string }) => x.device_id);
    };
    await waitFor('replayed', caughtUp, 60_000);
    expect(await devices('/vehicles')).to.deep.equal([v.id]);

    await standby!.pauseReplay();
    const w = await insertVehicle(app.db, zone);
    expect(await onReplica('vehicles', zone.id), 'the paused replica').to.equal(1);
    expect(await devices('/vehicles'), 'the zone as the paused replica has it').to.deep.equal([v.id]);
    expect(await devices(`/vehicles/${w.id}`), 'one device: never "unknown" while the primary has it').to.deep.equal([w.id]);
    const now = t.ctx.clock.now().getTime();
    const event = await feedEvent(app.db, { deviceId: w.id, zoneId: zone.id, ts: new Date(now - 60_000), eventTypes: ['service_start'], state: 'available' });
    const page = await get(`/events/recent?start_time=${now - HOUR_MS}&end_time=${now + 60_000}`);
    expect(page.status, JSON.stringify(page.body)).to.equal(200);
    expect(
      page.body.events.map((e: { event_id: string }) => e.event_id),
      'a page on the primary while the replica lags',
    ).to.deep.equal([event]);

    // the lag gauge: the primary's WAL is ahead of the paused replica's replay
    registerDbCollectors(app.db);
    const lag = async () => (await registry.getSingleMetric('db_replica_replay_lag_bytes')!.get()).values[0]?.value;
    expect(await lag()).to.be.greaterThan(0);
    expect(await replayLagBytes(t.ctx.db), 'no replica: no lag').to.equal(0);

    await standby!.resumeReplay();
    await waitFor('replayed', caughtUp, 60_000);
    expect(await devices('/vehicles')).to.have.members([v.id, w.id]);
  });

  it('publishes an hour from the primary until the replica has replayed past it and its claim, then from the replica; an hour not yet closed plus its lateness from the primary', async () => {
    const captured = capturedLog();
    const publisher: AppContext = { ...app, log: captured.log };
    const current = Math.floor(t.ctx.clock.now().getTime() / HOUR_MS) * HOUR_MS;
    const hour = new Date(current - 2 * HOUR_MS);
    const zone = await feedZone(app.db, { createdAt: new Date(hour.getTime() - 24 * HOUR_MS) });
    const vehicle = await feedVehicle(app.db, zone);
    const trip = (minute: number) =>
      feedTrip(app.db, {
        deviceId: vehicle.id,
        zoneId: zone,
        start: new Date(hour.getTime() + minute * 60_000),
        end: new Date(hour.getTime() + (minute + 5) * 60_000),
      });
    const trips = feedById('mds-2.0-trips')!;
    /** publishes the zone's trips file of `h`: the pool its outcome line names, and the file's trip ids */
    const publish = async (h: Date) => {
      const r = await publishHour(publisher, trips, zone, h, { force: true });
      const line = captured
        .lines()
        .filter((l) => l.msg === 'feed hour published' && l.feed === trips.id)
        .at(-1);
      const obj = await app.store.get(r.key);
      const chunks: Buffer[] = [];
      for await (const c of obj!.body) chunks.push(c as Buffer);
      const file = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8'));
      return { pool: line?.pool, trips: file.trips.map((x: { trip_id: string }) => x.trip_id) as string[] };
    };
    const first = await trip(5);
    await waitFor('replayed', caughtUp, 60_000);

    await standby!.pauseReplay();
    const late = await trip(30);
    expect(await onReplica('trips', zone), 'the paused replica').to.equal(1);
    const paused = await publish(hour);
    expect(paused.pool, 'read from the primary').to.equal('primary');
    expect(paused.trips).to.have.members([first, late]);
    expect(captured.lines().filter((l) => l.msg === 'replica has not replayed far enough: reading from the primary' && l.zone === zone)).to.have.length(1);

    await standby!.resumeReplay();
    await waitFor('replayed', caughtUp, 60_000);
    // the replica must also pass the claim each publication makes: a busy shared server may take longer than the publisher waits
    let resumed: Awaited<ReturnType<typeof publish>> | undefined;
    await waitFor('an hour read from the replica', async () => (resumed = await publish(hour)).pool === 'replica', 60_000);
    expect(resumed!.trips).to.have.members([first, late]);

    // caught up or not, an hour is never read from the replica before its close plus lateness
    const open = await publish(new Date(current));
    expect(open.pool).to.equal('primary');
    expect(captured.lines().map((l) => l.msg)).to.include('before the instant a replica could be trusted with: reading from the primary');
  });

  it("a GBFS zone built while the replica lags shows the primary's data", async () => {
    const captured = capturedLog();
    const builder: AppContext = { ...app, log: captured.log };
    const zone = await gbfsZone(app.db);
    const a = await gbfsVehicle(app.db, zone.id, zone.lat, zone.lng);
    const listed = async () =>
      (await readSnapshot(app, gbfsSnapshotRef('3.0', zone.id, 'vehicle_status', 'city').objectKey)).data.vehicles.map(
        (x: { vehicle_id: string }) => x.vehicle_id,
      );
    await waitFor('replayed', caughtUp, 60_000);
    expect(await buildGbfsZone(builder, memory, zone.id)).to.include({ work: 'build', failed: 0 });
    expect(await listed()).to.deep.equal([a.gbfsId]);

    await standby!.pauseReplay();
    const b = await gbfsVehicle(app.db, zone.id, zone.lat + 0.001, zone.lng);
    expect(await onReplica('vehicles', zone.id), 'the paused replica').to.equal(1);
    expect(await buildGbfsZone(builder, memory, zone.id), 'the status counter moved').to.include({ work: 'build', failed: 0 });
    expect(await listed()).to.have.members([a.gbfsId, b.gbfsId]);
    expect(captured.lines().some((l) => l.msg === 'replica has not replayed far enough: reading from the primary' && l.zone === zone.id)).to.equal(true);
    await standby!.resumeReplay();
  });

  it("a GBFS 2.2 scope assembles its zones' parts on the replica once it has caught up, on the primary while it lags", async () => {
    const captured = capturedLog();
    const builder: AppContext = { ...app, log: captured.log };
    const zone = await gbfsZone(app.db);
    const a = await gbfsVehicle(app.db, zone.id, zone.lat, zone.lng);
    // a scope of two zones (one of a single zone is assembled by its zone's job, on the primary)
    const other = await gbfsZone(app.db);
    const zoneIds = [zone.id, other.id].sort();
    const scope: GbfsScope = { id: gbfsV2Scope('gbfs', zoneIds), role: 'gbfs', zoneIds };
    const bikes = async () =>
      (await readSnapshot(app, gbfsSnapshotRef('2.2', scope.id, 'free_bike_status', 'gbfs').objectKey)).data.bikes.map((x: { bike_id: string }) => x.bike_id);
    /** the pool the scope's last job read its parts from (its debug line) */
    const lastPool = () =>
      captured
        .lines()
        .filter((l) => l.msg === 'gbfs scope job' && l.scope === scope.id)
        .at(-1)?.pool;
    const part = async (db: Db) =>
      (
        await db.one<{ sha256: string }>(
          `SELECT string_agg(sha256, ',' ORDER BY part) AS sha256 FROM gbfs_zone_parts WHERE zone_id = $1 AND part LIKE 'v2/free_bike_status/%'`,
          [zone.id],
        )
      ).sha256;
    expect(await buildGbfsZone(builder, memory, zone.id)).to.include({ work: 'build', failed: 0 });
    expect(await buildGbfsZone(builder, memory, other.id)).to.include({ work: 'build', failed: 0 });
    await waitFor('replayed', caughtUp, 60_000);
    // caught up: the replica (it must also pass the position read under the scope's lock, which a
    // busy shared server may take longer than the build waits for: a few tries)
    await waitFor(
      'a scope assembled on the replica',
      async () => {
        expect(await buildGbfsScope(builder, memory, scope)).to.include({ failed: 0 });
        return lastPool() === 'replica';
      },
      60_000,
    );
    expect(await bikes()).to.deep.equal([a.gbfsId]);

    await standby!.pauseReplay();
    const b = await gbfsVehicle(app.db, zone.id, zone.lat + 0.001, zone.lng);
    expect(await buildGbfsZone(builder, memory, zone.id), 'the zone job stores its new parts (on the primary)').to.include({
      work: 'build',
      partsChanged: true,
      failed: 0,
    });
    expect(await part(app.db.replica), 'the paused replica holds the old part').to.not.equal(await part(app.db));
    expect(await buildGbfsScope(builder, memory, scope)).to.include({ failed: 0 });
    expect(lastPool(), 'read from the primary').to.equal('primary');
    expect(await bikes(), "the primary's parts: both vehicles").to.have.members([a.gbfsId, b.gbfsId]);
    expect(captured.lines().some((l) => l.msg === 'replica has not replayed far enough: reading from the primary' && l.scope === scope.id)).to.equal(true);
    await standby!.resumeReplay();
  });
});

describe('an unreachable replica', () => {
  const t = useTestContext();
  const pools: Db[] = [];
  after(() => Promise.all(pools.map((db) => db.close())));

  /** a pool whose replica refuses connections, logging to its own lines */
  async function unreachable() {
    const captured = capturedLog();
    const db = new Db(t.database.url, captured.log, { max: 3, replicaUrl: `postgres://postgres@127.0.0.1:${await freePort()}/none` });
    pools.push(db);
    const warnings = () => captured.lines().filter((l) => l.msg === 'replica unreachable: reading from the primary');
    return { db, log: captured.log, warnings };
  }

  it('sends each kind of read to the primary, logged once while it rests', async () => {
    const zone = await insertZone(t.ctx.db);
    const v = await insertVehicle(t.ctx.db, zone);
    const now = t.ctx.clock.now();

    const a = await unreachable();
    expect((await readOnReplica(a.db, (pool) => pool.one('SELECT pg_is_in_recovery() AS standby'))).standby).to.equal(false);
    expect(a.warnings()).to.have.length(1);
    expect(a.warnings()[0]?.pool).to.equal('replica');
    expect(await mdsDevices(a.db, zone.id), 'resting: straight to the primary').to.deep.equal([v.id]);
    expect(await readerPast(a.db, now, now, a.log)).to.equal(a.db);
    expect(a.warnings(), 'not asked again, not logged again').to.have.length(1);

    const b = await unreachable();
    expect(await mdsDevices(b.db, zone.id), 'a realtime cursor, opened again on the primary').to.deep.equal([v.id]);
    expect(b.warnings()).to.have.length(1);

    const c = await unreachable();
    expect(await readerPast(c.db, now, now, c.log), 'the publisher reads the primary').to.equal(c.db);
    expect(c.warnings()).to.have.length(1);

    const d = await unreachable();
    const server = buildApp({ ...t.ctx, db: d.db }).callback();
    const key = (await insertPartner(t.ctx.db)).key;
    expect(ids(await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', key))).to.deep.equal([v.id]);
    expect((await request(server).get('/v1/zone/info').set('X-Auth-Token', key)).status).to.equal(200);
    expect(d.warnings()).to.have.length(1);
  });
});
