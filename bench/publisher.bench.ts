/**
 * Publisher benchmark: a simulated day of a 10,000-vehicle zone (bulk SQL generator: 3 rides per
 * vehicle per day, each a trip + trip_start + trip_end event), every hourly file set published
 * (7 files per hour, one publishHourSet per hour), then one hour 10× the average for the memory goal
 * (peak RSS < 200 MB). For comparison the same day again one file at a time (publishHour, what a
 * per-file job does) and once more with unchanged content (nothing written).
 * Floors: `COPY (SELECT row_to_json(s) FROM (<the publisher's source query>) s) TO STDOUT`, i.e.
 * what Postgres alone needs to hand the same rows and columns out as JSON:
 *   - per file: once per file that reads them (8 COPYs per hour with telemetry; the goal's floor, as defined first);
 *   - per source: once per source (3 COPYs per hour: trips, events, telemetry; the strict floor of a publisher that reads
 *     each row once, as publishHourSet does).
 *
 *   npx tsx bench/publisher.bench.ts          (BENCH_VEHICLES, BENCH_TRIPS_PER_VEHICLE to scale)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import copyStreams from 'pg-copy-streams';
import { ManualClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import { addHours, parseHour } from '../lib/feeds/hours.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import { sourceOf } from '../publisher/feeds/hourly.js';
import { GZIP_LEVEL, publishHour, publishHourSet, type HourFileResult } from '../publisher/publish.js';
import { cloneDatabase } from '../test/support/db.js';
import { bulkHistory, bulkTelemetry, bulkVehicles, feedZone } from '../test/support/feed-fixtures.js';

export interface BenchResult {
  name: string;
  metrics: Record<string, number | null>;
  goals: Array<{ metric: string; goal: string; met: boolean | null }>;
  notes: string[];
}

const VEHICLES = Number(process.env.BENCH_VEHICLES ?? 10000);
const TRIPS_PER_VEHICLE = Number(process.env.BENCH_TRIPS_PER_VEHICLE ?? 3);
const DAY = parseHour('2026-11-20T00')!;
const BIG_HOUR = parseHour('2026-11-21T08')!;

class PeakRss {
  peak = process.memoryUsage().rss;
  private timer = setInterval(() => (this.peak = Math.max(this.peak, process.memoryUsage().rss)), 20);
  reset() {
    this.peak = process.memoryUsage().rss;
  }
  stop() {
    clearInterval(this.timer);
  }
}

/**
 * Seconds Postgres needs to COPY the hour's source rows out as JSON: once per file that reads them
 * (`perFile`), or once per source.
 */
async function copyFloor(db: Db, zone: string, hour: Date, perFile: boolean): Promise<number> {
  const client = await db.pool.connect();
  try {
    const sources = perFile ? HOURLY_FEEDS.map((f) => f.source) : (['trips', 'events', 'telemetry'] as const);
    const started = performance.now();
    for (const source of sources) {
      // the publisher's own source query with its parameters inlined (telemetry: published now, no delay)
      const { rowsQuery, extraParams } = sourceOf(source, { now: new Date(), telemetryTripDelayMinutes: 0 });
      const params = [zone, hourParam(hour), ...extraParams].map((p) => `'${p instanceof Date ? p.toISOString() : String(p)}'`);
      const sql = rowsQuery.text.replace(/\$(\d+)/g, (_m, i: string) => params[Number(i) - 1]).replace(/;\s*$/, '');
      const sink = new Writable({ write: (_c, _e, cb) => cb() });
      await pipeline(client.query(copyStreams.to(`COPY (SELECT row_to_json(s) FROM (${sql}) s) TO STDOUT`)), sink);
    }
    return (performance.now() - started) / 1000;
  } finally {
    client.release();
  }
}

function sumSet(results: HourFileResult[], what: 'bytes' | 'records'): number {
  let n = 0;
  for (const r of results) {
    if (r.outcome === 'failed') throw r.error;
    n += r[what];
  }
  return n;
}

export async function run(): Promise<BenchResult> {
  const database = await cloneDatabase();
  const storeDir = mkdtempSync(join(tmpdir(), 'bench-store-'));
  const config = testConfig({ DATABASE_URL: database.url, STORE_URL: `file://${storeDir}`, LOG_LEVEL: 'silent' });
  const log = createLogger(config.logLevel);
  const ctx: AppContext = {
    config,
    log,
    db: new Db(config.databaseUrl, log, { max: 10, statementTimeoutMs: 600000 }),
    store: await openStore(config),
    clock: new ManualClock('2026-11-22T00:00:00Z'),
    gateway: new SimulatedGateway({}),
  };
  const rss = new PeakRss();
  try {
    const zone = await feedZone(ctx.db, { id: 'bench', createdAt: new Date('2026-11-01T00:00:00Z') });
    const genStart = performance.now();
    await bulkVehicles(ctx.db, zone, VEHICLES, 'B');
    await bulkHistory(ctx.db, zone, DAY, 24, TRIPS_PER_VEHICLE);
    const perHourTrips = (VEHICLES * TRIPS_PER_VEHICLE) / 24;
    // the big hour: 10× the average hour of the day
    await bulkHistory(ctx.db, zone, BIG_HOUR, 1, Math.max(1, Math.round((perHourTrips * 10) / VEHICLES)));
    // telemetry: a point a minute along every trip, and one an hour of every parked vehicle
    await bulkTelemetry(ctx.db, zone, DAY, 24);
    await bulkTelemetry(ctx.db, zone, BIG_HOUR, 1);
    await ctx.db.query('ANALYZE trips; ANALYZE events; ANALYZE vehicles; ANALYZE telemetry');
    const genSeconds = (performance.now() - genStart) / 1000;
    const counts = await ctx.db.one(
      `SELECT (SELECT count(*) FROM trips WHERE end_time < $1) AS trips, (SELECT count(*) FROM events WHERE ts < $1) AS events, (SELECT count(*) FROM telemetry WHERE ts < $1) AS telemetry`,
      [addHours(DAY, 24)],
    );

    // the day, hour by hour, every file set (first publication: every file written)
    rss.reset();
    const dayStart = performance.now();
    let bytes = 0;
    for (let h = 0; h < 24; h++) bytes += sumSet(await publishHourSet(ctx, zone, addHours(DAY, h)), 'bytes');
    const daySeconds = (performance.now() - dayStart) / 1000;
    const dayRss = rss.peak;
    const rowsRead = (['trips', 'events', 'telemetry'] as const).reduce(
      (n, src) => n + Number(counts[src]) * HOURLY_FEEDS.filter((f) => f.source === src).length,
      0,
    );

    // the same day again, unchanged content: read, render and hash everything, write nothing
    const sameStart = performance.now();
    for (let h = 0; h < 24; h++) {
      const rs = await publishHourSet(ctx, zone, addHours(DAY, h));
      if (rs.some((r) => r.outcome !== 'unchanged')) throw new Error('republishing unchanged data wrote something');
    }
    const sameSeconds = (performance.now() - sameStart) / 1000;

    // the same day one file at a time (forced, so that every file is written as above)
    const perFileStart = performance.now();
    for (let h = 0; h < 24; h++) for (const f of HOURLY_FEEDS) await publishHour(ctx, f, zone, addHours(DAY, h), { force: true });
    const perFileSeconds = (performance.now() - perFileStart) / 1000;

    let floorSeconds = 0;
    let floorSourceSeconds = 0;
    for (let h = 0; h < 24; h++) {
      floorSeconds += await copyFloor(ctx.db, zone, addHours(DAY, h), true);
      floorSourceSeconds += await copyFloor(ctx.db, zone, addHours(DAY, h), false);
    }

    // the big hour, forced (a real write), for peak memory
    rss.reset();
    const bigStart = performance.now();
    const bigRecords = sumSet(await publishHourSet(ctx, zone, BIG_HOUR, { force: true }), 'records');
    const bigSeconds = (performance.now() - bigStart) / 1000;
    const bigRss = rss.peak;
    const bigFloor = await copyFloor(ctx.db, zone, BIG_HOUR, true);
    const bigFloorSource = await copyFloor(ctx.db, zone, BIG_HOUR, false);

    const mb = (n: number) => Math.round((n / 1048576) * 10) / 10;
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    const metrics = {
      vehicles: VEHICLES,
      day_trips: Number(counts.trips),
      day_events: Number(counts.events),
      day_telemetry: Number(counts.telemetry),
      generate_s: Math.round(genSeconds * 10) / 10,
      gzip_level: GZIP_LEVEL,
      seconds_per_hour_file_set: Math.round((daySeconds / 24) * 1000) / 1000,
      rows_per_s: Math.round(rowsRead / daySeconds),
      day_gzip_mb: mb(bytes),
      copy_floor_ratio: ratio(daySeconds, floorSeconds),
      copy_floor_ratio_per_source: ratio(daySeconds, floorSourceSeconds),
      floor_seconds_per_hour: Math.round((floorSeconds / 24) * 1000) / 1000,
      floor_per_source_seconds_per_hour: Math.round((floorSourceSeconds / 24) * 1000) / 1000,
      unchanged_seconds_per_hour_file_set: Math.round((sameSeconds / 24) * 1000) / 1000,
      per_file_jobs_seconds_per_hour_file_set: Math.round((perFileSeconds / 24) * 1000) / 1000,
      per_file_jobs_copy_floor_ratio: ratio(perFileSeconds, floorSeconds),
      peak_rss_day_mb: mb(dayRss),
      big_hour_records: bigRecords,
      big_hour_seconds: Math.round(bigSeconds * 100) / 100,
      big_hour_copy_floor_ratio: ratio(bigSeconds, bigFloor),
      big_hour_copy_floor_ratio_per_source: ratio(bigSeconds, bigFloorSource),
      peak_rss_big_hour_mb: mb(bigRss),
    };
    return {
      name: 'publisher',
      metrics,
      goals: [
        { metric: 'copy_floor_ratio', goal: '<= 2', met: metrics.copy_floor_ratio <= 2 },
        { metric: 'peak_rss_big_hour_mb', goal: '< 200', met: metrics.peak_rss_big_hour_mb < 200 },
      ],
      notes: [
        `data: own bulk SQL generator (${TRIPS_PER_VEHICLE} rides per vehicle per day), not ops/sim's simulateHistory, to control the hour sizes exactly`,
        'rows_per_s counts source rows per file that renders them (a trip row feeds the 4 trip files, an event row the 3 event files, a telemetry row the telemetry file), as before the single-pass publisher, so figures stay comparable',
        'copy_floor_ratio: publisher time / COPY (row_to_json of the same source queries) TO STDOUT time, one COPY per file (8 per hour); includes mapping, validation, gzip, sha256, spool and the store write',
        'copy_floor_ratio_per_source: the same against one COPY per source (3 per hour): the strict floor, since publishHourSet reads each row once',
        'per_file_jobs_*: the day published one file at a time (publishHour: each file reads its source itself), forced so that every file is written',
        'peak RSS is the whole process (Node, pg pool, bench data generation finished before measuring)',
      ],
    };
  } finally {
    rss.stop();
    await ctx.db.close();
    await ctx.store.close();
    await database.drop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run()
    .then((r) => {
      console.log(JSON.stringify(r, null, 2));
      process.exit(0);
    })
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
