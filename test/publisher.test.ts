/**
 * The hourly file publisher on data we insert: placement of every trip/event in exactly one file,
 * official-schema validity of every file, late data → dirty → republished, idempotence (same content
 * writes nothing), crash safety mid-write, the pg-boss path and publish-status.
 */
import { expect } from 'chai';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { describeSpecErrors, specOrSkip } from './support/specs.js';
import { publishHour } from '../publisher/publish.js';
import { backfill, publishStatus } from '../publisher/ops.js';
import { dueHourJobs } from '../publisher/schedule.js';
import { enqueueDue, startPublisher } from '../publisher/index.js';
import { HOUR_QUEUE, publicationQueue } from '../lib/publication/queue.js';
import { feedById, HOURLY_FEEDS, objectKey } from '../lib/feeds/publications.js';
import { parseHour } from '../lib/feeds/hours.js';
import { compile } from '../lib/core/validate.js';
import { InsuranceTripSchema } from '../schemas/insurance/trips.js';
import type { ObjectStore } from '../lib/core/store/types.js';
import type { AppContext } from '../lib/domain/context.js';

const H9 = parseHour('2026-11-21T09')!;
const H10 = parseHour('2026-11-21T10')!;
const at = (iso: string) => new Date(iso);
/** The insurance trip members beyond an MDS 2.0 trip: left out before the official MDS schema checks the rest. */
const INSURANCE_ONLY = new Set([
  'city',
  'country',
  'average_ride_speed',
  'is_group_ride',
  'license_plate',
  'license_plate_id',
  'ride_type',
  'trip_type',
  'user_ride_count',
  'vehicle_short_id',
]);

async function readJson(store: ObjectStore, key: string): Promise<any> {
  const obj = await store.get(key);
  if (!obj) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of obj.body) chunks.push(c as Buffer);
  return JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8'));
}

/** Counts puts; `failAfterBytes` makes the stream handed to the real store break halfway through. */
function wrapStore(inner: ObjectStore, opts: { failAfterBytes?: number } = {}) {
  const w = {
    puts: 0,
    ...inner,
    head: inner.head.bind(inner),
    get: inner.get.bind(inner),
    async put(key: string, body: Buffer | Readable, o: Parameters<ObjectStore['put']>[2]) {
      w.puts++;
      if (opts.failAfterBytes === undefined) return inner.put(key, body, o);
      const limit = opts.failAfterBytes;
      async function* breaking(src: Readable) {
        let seen = 0;
        for await (const chunk of src) {
          seen += (chunk as Buffer).length;
          if (seen > limit) throw new Error('store connection reset');
          yield chunk as Buffer;
        }
      }
      return inner.put(key, Readable.from(breaking(body as Readable), { objectMode: false }), o);
    },
  };
  return w;
}

describe('publisher: hourly files', function () {
  this.timeout(60000);
  // the zones here begin in January with no files: the history catch-up (test/feeds-catchup.test.ts)
  // would queue their history beside the hours these tests count
  const t = useTestContext({ now: '2026-11-21T12:00:00Z', config: { PUBLISH_CATCHUP_HOURS_PER_TICK: '0' } });
  let zone: string;
  let v1: { id: string; code: string };
  let v2: { id: string; code: string };
  const trips: Record<string, string> = {};

  before(async () => {
    const db = t.ctx.db;
    zone = await feedZone(db, { createdAt: at('2026-11-21T08:30:00Z') });
    v1 = await feedVehicle(db, zone);
    v2 = await feedVehicle(db, zone, { type: 'feed-bike' });
    // boundary cases: the last millisecond of 09 and the first of 10
    trips.a = await feedTrip(db, { deviceId: v1.id, zoneId: zone, start: at('2026-11-21T09:40:00Z'), end: at('2026-11-21T09:59:59.999Z'), tripType: 'maas' });
    trips.b = await feedTrip(db, { deviceId: v2.id, zoneId: zone, start: at('2026-11-21T09:50:00Z'), end: at('2026-11-21T10:00:00Z') });
    trips.c = await feedTrip(db, {
      deviceId: v1.id,
      zoneId: zone,
      start: at('2026-11-21T08:55:00Z'),
      end: at('2026-11-21T09:05:00Z'),
      tripType: 'operator',
      rideType: 'group-guest',
    });
    await feedEvent(db, { deviceId: v1.id, zoneId: zone, ts: at('2026-11-21T09:40:00Z'), eventTypes: ['trip_start'], state: 'on_trip', tripIds: [trips.a] });
    await feedEvent(db, {
      deviceId: v1.id,
      zoneId: zone,
      ts: at('2026-11-21T09:59:59.999Z'),
      eventTypes: ['trip_end'],
      state: 'available',
      tripIds: [trips.a],
    });
    await feedEvent(db, { deviceId: v2.id, zoneId: zone, ts: at('2026-11-21T09:50:00Z'), eventTypes: ['trip_start'], state: 'on_trip', tripIds: [trips.b] });
    await feedEvent(db, { deviceId: v2.id, zoneId: zone, ts: at('2026-11-21T10:00:00Z'), eventTypes: ['trip_end'], state: 'available', tripIds: [trips.b] });
    await feedEvent(db, { deviceId: v2.id, zoneId: zone, ts: at('2026-11-21T10:20:00Z'), eventTypes: ['reservation_start'], state: 'reserved', battery: null });
    await feedEvent(db, { deviceId: v2.id, zoneId: zone, ts: at('2026-11-21T10:30:00Z'), eventTypes: ['comms_lost'], state: 'non_contactable' });
  });

  it('publishes every feed of each hour, each trip and event in exactly one file', async () => {
    const summary = await backfill(t.ctx, { zones: [zone], from: at('2026-11-21T08:00:00Z'), to: at('2026-11-21T11:00:00Z'), feeds: 'all', force: false });
    expect(summary.failed).to.deep.equal([]);
    // the zone began at 08:30: hours 08, 09, 10, 11 × 7 feeds
    expect(summary.total).to.equal(4 * HOURLY_FEEDS.length);
    const seenTrips: Record<string, string[]> = {};
    const seenEvents: Record<string, string[]> = {};
    for (const h of ['2026-11-21T08', '2026-11-21T09', '2026-11-21T10', '2026-11-21T11']) {
      const tripsFile = await readJson(t.ctx.store, objectKey(feedById('mds-2.0-trips')!, zone, parseHour(h)!));
      for (const tr of tripsFile.trips) (seenTrips[tr.trip_id] ??= []).push(h);
      const eventsFile = await readJson(t.ctx.store, objectKey(feedById('mds-2.0-events')!, zone, parseHour(h)!));
      for (const e of eventsFile.events) (seenEvents[e.event_id] ??= []).push(h);
    }
    expect(seenTrips).to.deep.equal({ [trips.a]: ['2026-11-21T09'], [trips.b]: ['2026-11-21T10'], [trips.c]: ['2026-11-21T09'] });
    const eventCount = Number((await t.ctx.db.one(`SELECT count(*) AS n FROM events WHERE zone_id = $1`, [zone])).n);
    expect(Object.keys(seenEvents)).to.have.length(eventCount);
    for (const hours of Object.values(seenEvents)) expect(hours).to.have.length(1);
  });

  it('writes the documented envelopes, metadata rows and gzip objects', async () => {
    const trips9 = await readJson(t.ctx.store, `mds/2.0/${zone}/trips/2026-11-21T09.json.gz`);
    expect(Object.keys(trips9)).to.deep.equal(['version', 'last_updated', 'ttl', 'trips']);
    expect(trips9.version).to.equal('2.0.0');
    expect(trips9.ttl).to.deep.equal({ ttl: 0 });
    expect(trips9.trips.map((x: any) => x.trip_id)).to.deep.equal([trips.c, trips.a]); // by end_time
    const events10 = await readJson(t.ctx.store, `mds/2.0/${zone}/events/2026-11-21T10.json.gz`);
    expect(events10.links).to.deep.equal({});
    const sc = await readJson(t.ctx.store, `mds/1.2/${zone}/status_changes/2026-11-21T10.json.gz`);
    expect(Object.keys(sc)).to.deep.equal(['version', 'data']);
    const ins = await readJson(t.ctx.store, `insurance/2.0/${zone}/trips/2026-11-21T09.json.gz`);
    expect(typeof ins.last_updated).to.equal('number');
    expect(ins.trips.find((x: any) => x.trip_id === trips.c)).to.include({ ride_type: 'group-guest', is_group_ride: true, vehicle_short_id: v1.code });
    expect(ins.trips.find((x: any) => x.trip_id === trips.a).trip_type).to.deep.equal(['maas']);
    const empty = await readJson(t.ctx.store, `mds/2.0/${zone}/trips/2026-11-21T11.json.gz`);
    expect(empty.trips).to.deep.equal([]);

    const row = await t.ctx.db.one<{ object_key: string; sha256: string; bytes: number; last_updated: Date; source_watermark: Date }>(
      `SELECT status, object_key, sha256, record_count, bytes, dirty, last_updated, published_at, source_watermark FROM feed_publications
        WHERE feed = 'mds_trips' AND version = '2.0' AND scope = $1 AND hour = '2026-11-21 09:00'`,
      [zone],
    );
    expect(row).to.include({ status: 'published', record_count: 2, dirty: false, object_key: `mds/2.0/${zone}/trips/2026-11-21T09.json.gz` });
    expect(row.sha256).to.match(/^[0-9a-f]{64}$/);
    const meta = await t.ctx.store.head(row.object_key);
    expect(meta).to.include({ size: row.bytes, contentEncoding: 'gzip', contentType: 'application/json' });
    expect(row.source_watermark).to.be.instanceOf(Date);
    expect(trips9.last_updated.last_updated).to.equal(row.last_updated.getTime());
  });

  it('every produced file validates against the official schema of its version', async function () {
    const specs: Record<string, string> = {
      'mds-2.0-trips': 'mds/2.0/micromobility/trips.json',
      'mds-2.0-events': 'mds/2.0/micromobility/events_historical.json',
      'mds-1.2-trips': 'mds/1.2.0/trips.json',
      'mds-1.2-status_changes': 'mds/1.2.0/status_changes.json',
      'mds-0.4-trips': 'mds/0.4.1/trips.json',
      'mds-0.4-status_changes': 'mds/0.4.1/status_changes.json',
      'mds-2.0-telemetry': 'mds/2.0/telemetry.json',
    };
    let checked = 0;
    for (const f of HOURLY_FEEDS) {
      for (const h of ['2026-11-21T09', '2026-11-21T10']) {
        const body = await readJson(t.ctx.store, objectKey(f, zone, parseHour(h)!));
        if (f.id === 'insurance-2.0-trips') {
          // no official insurance schema: the MDS 2.0 trip schema covers its MDS part, ours the rest
          for (const tr of body.trips) expect(compile(InsuranceTripSchema)(tr)).to.equal(true);
          const v = specOrSkip(this, 'mds/2.0/micromobility/trips.json');
          const mdsPart = body.trips.map((tr: Record<string, unknown>) => Object.fromEntries(Object.entries(tr).filter(([k]) => !INSURANCE_ONLY.has(k))));
          expect(v({ version: '2.0.0', trips: mdsPart }), describeSpecErrors(v)).to.equal(true);
        } else {
          const v = specOrSkip(this, specs[f.id]);
          expect(v(body), `${f.id} ${h}: ${describeSpecErrors(v)}`).to.equal(true);
        }
        checked++;
      }
    }
    expect(checked).to.equal(HOURLY_FEEDS.length * 2);
  });

  it('republishing identical content writes nothing to the store; force rewrites', async () => {
    const store = wrapStore(t.ctx.store);
    const ctx: AppContext = { ...t.ctx, store };
    const key = `mds/2.0/${zone}/trips/2026-11-21T09.json.gz`;
    const before = await t.ctx.store.head(key);
    const r = await publishHour(ctx, feedById('mds-2.0-trips')!, zone, H9);
    expect(r.outcome).to.equal('unchanged');
    expect(store.puts).to.equal(0);
    expect((await t.ctx.store.head(key))!.lastModified.getTime()).to.equal(before!.lastModified.getTime());
    const forced = await publishHour(ctx, feedById('mds-2.0-trips')!, zone, H9, { force: true });
    expect(forced.outcome).to.equal('written');
    expect(forced.sha256).to.equal(r.sha256);
    expect(store.puts).to.equal(1);
  });

  it('late data marks the hour dirty; the sweep finds it and the republish includes it and clears dirty', async () => {
    const late = await feedTrip(t.ctx.db, { deviceId: v2.id, zoneId: zone, start: at('2026-11-21T09:10:00Z'), end: at('2026-11-21T09:30:00Z') });
    await feedEvent(t.ctx.db, { deviceId: v2.id, zoneId: zone, ts: at('2026-11-21T09:30:00Z'), eventTypes: ['trip_end'], state: 'available', tripIds: [late] });
    const dirty = await t.ctx.db.many<{ feed: string; version: string }>(
      `SELECT feed, version FROM feed_publications WHERE scope = $1 AND hour = '2026-11-21 09:00' AND dirty ORDER BY 1, 2`,
      [zone],
    );
    expect(dirty.map((d) => `${d.feed}@${d.version}`)).to.deep.equal([
      'insurance_trips@2.0',
      'mds_events@2.0',
      'mds_status_changes@0.4',
      'mds_status_changes@1.2',
      'mds_telemetry@2.0',
      'mds_trips@0.4',
      'mds_trips@1.2',
      'mds_trips@2.0',
    ]);
    const jobs = await dueHourJobs(t.ctx);
    expect(
      jobs
        .filter((j) => j.zone === zone && j.hour === '2026-11-21T09')
        .map((j) => j.feedId)
        .sort(),
    ).to.deep.equal(HOURLY_FEEDS.map((f) => f.id).sort());
    const status = await publishStatus(t.ctx, { zones: [zone], from: H9, to: H9 });
    expect(Object.values(status.rows[0].states)).to.deep.equal(HOURLY_FEEDS.map(() => 'dirty'));

    for (const f of HOURLY_FEEDS) await publishHour(t.ctx, f, zone, H9);
    const body = await readJson(t.ctx.store, `mds/2.0/${zone}/trips/2026-11-21T09.json.gz`);
    expect(body.trips.map((x: any) => x.trip_id)).to.include(late);
    const left = await t.ctx.db.many(`SELECT 1 FROM feed_publications WHERE scope = $1 AND dirty`, [zone]);
    expect(left).to.have.length(0);
  });

  it('a write that breaks halfway leaves the previous version, records the failure, and the retry publishes', async () => {
    const key = `mds/2.0/${zone}/events/2026-11-21T10.json.gz`;
    const before = await readJson(t.ctx.store, key);
    await feedEvent(t.ctx.db, { deviceId: v1.id, zoneId: zone, ts: at('2026-11-21T10:45:00Z'), eventTypes: ['located'], state: 'available' });
    // pad the hour so that the file is larger than the failure point
    for (let i = 0; i < 50; i++)
      await feedEvent(t.ctx.db, {
        deviceId: v1.id,
        zoneId: zone,
        ts: new Date(H10.getTime() + 46 * 60_000 + i * 1000),
        eventTypes: ['located'],
        state: 'available',
      });
    const broken: AppContext = { ...t.ctx, store: wrapStore(t.ctx.store, { failAfterBytes: 200 }) };
    let err: unknown;
    try {
      await publishHour(broken, feedById('mds-2.0-events')!, zone, H10);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/store connection reset/);
    expect(await readJson(t.ctx.store, key)).to.deep.equal(before);
    const row = await t.ctx.db.one(
      `SELECT status, last_error, failed_at FROM feed_publications WHERE feed = 'mds_events' AND version = '2.0' AND scope = $1 AND hour = '2026-11-21 10:00'`,
      [zone],
    );
    expect(row.status).to.equal('failed');
    expect(row.last_error).to.match(/store connection reset/);
    const status = await publishStatus(t.ctx, { zones: [zone], from: H10, to: H10, feeds: ['mds-2.0-events'] });
    expect(status.rows[0].states['mds-2.0-events']).to.equal('failed');
    expect(status.failures[0]).to.include({ feed: 'mds-2.0-events', zone, hour: '2026-11-21T10' });

    const retry = await publishHour(t.ctx, feedById('mds-2.0-events')!, zone, H10);
    expect(retry.outcome).to.equal('written');
    expect((await readJson(t.ctx.store, key)).events).to.have.length(before.events.length + 51);
    const after = await t.ctx.db.one(
      `SELECT status, last_error, dirty FROM feed_publications WHERE feed = 'mds_events' AND version = '2.0' AND scope = $1 AND hour = '2026-11-21 10:00'`,
      [zone],
    );
    expect(after).to.deep.equal({ status: 'published', last_error: null, dirty: false });
  });

  it('a first publication that breaks leaves nothing under the key', async () => {
    const z2 = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T09:00:00Z') });
    const v = await feedVehicle(t.ctx.db, z2);
    for (let i = 0; i < 30; i++)
      await feedEvent(t.ctx.db, { deviceId: v.id, zoneId: z2, ts: new Date(H9.getTime() + i * 60_000), eventTypes: ['located'], state: 'available' });
    const broken: AppContext = { ...t.ctx, store: wrapStore(t.ctx.store, { failAfterBytes: 100 }) };
    await publishHour(broken, feedById('mds-1.2-status_changes')!, z2, H9).catch(() => undefined);
    expect(await t.ctx.store.head(`mds/1.2/${z2}/status_changes/2026-11-21T09.json.gz`)).to.equal(undefined);
    const row = await t.ctx.db.one(`SELECT status, object_key FROM feed_publications WHERE scope = $1`, [z2]);
    expect(row).to.deep.equal({ status: 'failed', object_key: null });
    const jobs = await dueHourJobs(t.ctx);
    // failed hours come back after their backoff (2^attempts minutes)
    const isIt = (j: { zone: string; feedId: string; hour: string }) => j.zone === z2 && j.feedId === 'mds-1.2-status_changes' && j.hour === '2026-11-21T09';
    expect(jobs.some(isIt)).to.equal(false);
    t.ctx.clock.advance(5 * 60_000);
    expect((await dueHourJobs(t.ctx)).some(isIt)).to.equal(true);
    t.ctx.clock.set('2026-11-21T12:00:00Z');
  });

  it('an hour is due only after the lateness; pg-boss workers publish what the cron enqueues, once', async () => {
    const z3 = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T10:00:00Z') });
    const v = await feedVehicle(t.ctx.db, z3);
    await feedTrip(t.ctx.db, { deviceId: v.id, zoneId: z3, start: at('2026-11-21T11:00:00Z'), end: at('2026-11-21T11:20:00Z') });
    // 12:04: hour 11 closed 4 minutes ago, lateness is 5 minutes
    t.ctx.clock.set('2026-11-21T12:04:00Z');
    let hours = new Set((await dueHourJobs(t.ctx)).filter((j) => j.zone === z3).map((j) => j.hour));
    expect([...hours]).to.deep.equal(['2026-11-21T10']);
    t.ctx.clock.set('2026-11-21T12:05:00Z');
    hours = new Set((await dueHourJobs(t.ctx)).filter((j) => j.zone === z3).map((j) => j.hour));
    expect([...hours].sort()).to.deep.equal(['2026-11-21T10', '2026-11-21T11']);

    // the ticks before any worker runs: a running job's rows are 'pending', which a tick takes for a
    // crashed publisher's and queues again (harmless: the lock serialises them, the second writes nothing)
    const sender = await publicationQueue(t.ctx);
    const first = await enqueueDue(t.ctx, sender);
    const again = await enqueueDue(t.ctx, sender); // the same singleton keys: nothing more queued
    expect(first).to.be.greaterThan(0);
    expect(again).to.equal(0);
    const queued = await t.ctx.db.many(`SELECT singleton_key FROM pgboss.job WHERE name = $1 AND data->>'zone' = $2 ORDER BY 1`, [HOUR_QUEUE, z3]);
    expect(queued.map((j) => j.singleton_key)).to.deep.equal([`${z3}:2026-11-21T10`, `${z3}:2026-11-21T11`]);
    const pub = await startPublisher(t.ctx, { cron: false, concurrency: 3, pollingIntervalSeconds: 0.5 });
    try {
      const deadline = Date.now() + 45000;
      let n = 0;
      while (Date.now() < deadline) {
        n = Number((await t.ctx.db.one(`SELECT count(*) AS n FROM feed_publications WHERE scope = $1 AND status = 'published'`, [z3])).n);
        if (n === 2 * HOURLY_FEEDS.length) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(n).to.equal(2 * HOURLY_FEEDS.length);
      const body = await readJson(t.ctx.store, `mds/2.0/${z3}/trips/2026-11-21T11.json.gz`);
      expect(body.trips).to.have.length(1);
    } finally {
      await pub.stop();
      t.ctx.clock.set('2026-11-21T12:00:00Z');
    }
  });

  it("a job another process sends wakes the publisher's workers at once (LISTEN/NOTIFY), not at their next poll", async () => {
    const z4 = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T09:00:00Z') });
    const v = await feedVehicle(t.ctx.db, z4);
    await feedTrip(t.ctx.db, { deviceId: v.id, zoneId: z4, start: at('2026-11-21T10:00:00Z'), end: at('2026-11-21T10:20:00Z') });
    // a poll of a minute: only a NOTIFY can have the job run within seconds
    const pub = await startPublisher(t.ctx, { cron: false, concurrency: 1, pollingIntervalSeconds: 60 });
    try {
      // past the workers' first fetches, so that they are waiting out their poll
      await new Promise((r) => setTimeout(r, 1500));
      // the console's path: the API's own send-only pg-boss client, on its own pool
      const sender = await publicationQueue(t.ctx);
      const sent = Date.now();
      await sender.send(HOUR_QUEUE, { zone: z4, hour: '2026-11-21T10', feedIds: ['mds-2.0-trips'], force: true }, { singletonKey: `wake:${z4}` });
      let done = false;
      while (!done && Date.now() - sent < 20_000) {
        done = Number((await t.ctx.db.one(`SELECT count(*) AS n FROM feed_publications WHERE scope = $1 AND status = 'published'`, [z4])).n) === 1;
        if (!done) await new Promise((r) => setTimeout(r, 100));
      }
      expect(done, 'published').to.equal(true);
      expect(Date.now() - sent, 'ms from the send to the file').to.be.below(10_000);
    } finally {
      await pub.stop();
    }
  });

  it('backfill without force skips current hours; unknown feeds and zones are refused', async () => {
    // make exactly one file of the window need work: the 1.2 status_changes of hour 10 (late data)
    await t.ctx.db.query(
      `UPDATE feed_publications SET dirty = (feed = 'mds_status_changes' AND hour = $2::timestamp)
                           WHERE scope = $1 AND version = '1.2'`,
      [zone, '2026-11-21T10:00:00'],
    );
    const s = await backfill(t.ctx, { zones: [zone], from: H9, to: H10, feeds: ['mds-1.2'], force: false });
    expect(s).to.include({ total: 4, skipped: 3 });
    expect(s.written + s.unchanged, 'the dirty file is published again').to.equal(1);
    const again = await backfill(t.ctx, { zones: [zone], from: H9, to: H10, feeds: ['mds-1.2'], force: false });
    expect(again).to.include({ total: 4, skipped: 4, written: 0 });
    let err: unknown;
    await backfill(t.ctx, { zones: [zone], from: H9, to: H10, feeds: ['gtfs'], force: false }).catch((e) => (err = e));
    expect(String(err)).to.match(/unknown feed "gtfs"/);
    await backfill(t.ctx, { zones: ['nowhere'], from: H9, to: H10, feeds: 'all', force: false }).catch((e) => (err = e));
    expect(String(err)).to.match(/unknown zone/);
  });

  it('backfill of a window with no closed hour says why nothing was done', async () => {
    const future = await backfill(t.ctx, { zones: [zone], from: at('2026-11-21T12:00:00Z'), to: at('2026-11-21T15:00:00Z'), feeds: 'all', force: false });
    expect(future).to.include({
      total: 0,
      nothingDone: 'the window starts after 2026-11-21T11, the last closed hour (an hour is published once it has ended)',
    });
    const past = await backfill(t.ctx, { zones: [zone], from: at('2020-01-01T00:00:00Z'), to: at('2020-01-01T01:00:00Z'), feeds: 'all', force: false });
    expect(past.total).to.equal(0);
    expect(past.nothingDone).to.match(/^the window ends before \d{4}-\d{2}-\d{2}T\d{2}, when the first selected zone was created$/);
    const busy = await backfill(t.ctx, { zones: [zone], from: H9, to: H10, feeds: ['mds-1.2'], force: false });
    expect(busy.nothingDone).to.equal(undefined);
  });
});
