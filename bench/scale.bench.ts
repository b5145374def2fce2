/**
 * Scale benchmark (issue 14): how costs move from 1 day of history to N days, printed as ratios
 * N days / 1 day (goal ≤ 1.2 each), and what the database holds per day and under retention.
 *
 *   - hourly publish: one hour's 7 files (forced, median of 3) with 1 day vs N days of history;
 *   - publication sweeps and the late-data trigger: the missing-hours scan, the republish sweep and
 *     one single-row event insert into a published hour (median of many), with 14 days vs a year of
 *     publication rows for BENCH_SCALE_PUB_ZONES zones (the trigger's cost grew with them before
 *     migration 000100);
 *   - database bytes per day (events, telemetry, trips with their indexes) and the steady-state size
 *     under the default retention (RETENTION_*_DAYS × bytes per day of each table);
 *   - PROBES: /vehicles/status cold and warm, events/recent of one hour and the whole window read
 *     page by page (ms per 1,000 events, time to first byte per page, heap kept), through the real
 *     HTTP stack on a loopback port, at both history sizes.
 *
 * Sized by environment (defaults fit the 2-core machine in a few minutes):
 *   BENCH_SCALE_VEHICLES (1000), BENCH_SCALE_DAYS (14), BENCH_SCALE_TRIPS_PER_VEHICLE (3),
 *   BENCH_SCALE_TELEMETRY_PER_TRIP (10), BENCH_SCALE_PUB_ZONES (20), BENCH_SCALE_PUB_DAYS (365).
 *   The issue's figures: BENCH_SCALE_VEHICLES=10000.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { sql } from '../lib/core/sql/typed.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import { addHours, parseHour } from '../lib/feeds/hours.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import { publishHourSet } from '../publisher/publish.js';
import { ensurePartitions, HISTORY_TABLES, retentionDays } from '../publisher/jobs/history.js';
import { cloneDatabase } from '../test/support/db.js';
import { bulkHistory, bulkVehicles, feedZone } from '../test/support/feed-fixtures.js';
import type { BenchResult } from './types.js';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { buildApp, withHotPath } from '../api/app.js';
import { tokenFor } from '../test/support/feed-auth.js';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const VEHICLES = env('BENCH_SCALE_VEHICLES', 1000);
const DAYS = env('BENCH_SCALE_DAYS', 14);
const TRIPS_PER_VEHICLE = env('BENCH_SCALE_TRIPS_PER_VEHICLE', 3);
const TELEMETRY_PER_TRIP = env('BENCH_SCALE_TELEMETRY_PER_TRIP', 10);
const PUB_ZONES = env('BENCH_SCALE_PUB_ZONES', 20);
const PUB_DAYS = env('BENCH_SCALE_PUB_DAYS', 365);
const DAY_MS = 86_400_000;

/** The last simulated day; history grows backwards from it, so the measured hour stays the same. */
const LAST_DAY = parseHour('2026-11-20T00')!;
const HOUR = addHours(LAST_DAY, 8);

/**
 * A figure of another part measured with 1 day and with N days of history; the report prints each
 * metric at both sizes and their ratio. Add one to PROBES, e.g. `/vehicles/status` cold and warm,
 * or `events/recent` read page by page (it gets the context and the fleet's zone).
 */
export interface ScaleProbe {
  name: string;
  measure(ctx: AppContext, zone: string): Promise<Record<string, number>>;
}

/** Serves the app of `ctx` on a loopback port for one probe; a fresh app has cold caches. */
async function withServer<T>(ctx: AppContext, fn: (base: string, auth: string) => Promise<T>): Promise<T> {
  const server = http.createServer(withHotPath(buildApp(ctx))).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const auth = `Bearer ${await tokenFor(ctx, `scale-city-${Math.random().toString(36).slice(2, 8)}`, 'city')}`;
    return await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, auth);
  } finally {
    server.close();
  }
}

/** ms to the first byte and to the last of one GET, and the body. */
async function fetchTimed(url: string, auth: string): Promise<{ ttfb: number; total: number; body: any }> {
  const started = performance.now();
  const res = await fetch(url, { headers: { Authorization: auth } });
  const reader = res.body!.getReader();
  const chunks: Uint8Array[] = [];
  let ttfb = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (!ttfb) ttfb = performance.now() - started;
    if (done) break;
    chunks.push(value);
  }
  const total = performance.now() - started;
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${Buffer.concat(chunks).toString().slice(0, 200)}`);
  return { ttfb, total, body: JSON.parse(Buffer.concat(chunks).toString()) };
}

export const PROBES: ScaleProbe[] = [
  {
    // cold: a new app (its caches empty) and its first request on a new pool; Postgres's own
    // buffers stay as they are (dropping the OS page cache needs more than this bench may do)
    name: '/vehicles/status',
    async measure(ctx, zone) {
      const fresh: AppContext = { ...ctx, db: new Db(ctx.config.databaseUrl, ctx.log, { max: 4 }) };
      try {
        return await withServer(fresh, async (base, auth) => {
          const url = `${base}/v1/partner-apis/mds/${zone}/vehicles/status`;
          const cold = (await fetchTimed(url, auth)).total;
          const warm: number[] = [];
          for (let i = 0; i < 5; i++) warm.push((await fetchTimed(url, auth)).total);
          return { 'cold ms': cold, 'warm ms': median(warm) };
        });
      } finally {
        await fresh.db.close();
      }
    },
  },
  {
    // the last hour, and the whole window the clock allows (up to two weeks) page by page at the
    // largest page size, the most memory one page can take
    name: 'events/recent',
    async measure(ctx, zone) {
      return withServer(ctx, async (base, auth) => {
        const now = ctx.clock.now().getTime();
        const hour: number[] = [];
        for (let i = 0; i < 7; i++)
          hour.push((await fetchTimed(`${base}/v1/partner-apis/mds/${zone}/events/recent?start_time=${now - 3_600_000}&end_time=${now}`, auth)).total);
        let url: string | null = `${base}/v1/partner-apis/mds/${zone}/events/recent?start_time=${now - 14 * DAY_MS + 60_000}&end_time=${now}&limit=5000`;
        const ttfbs: number[] = [];
        let events = 0;
        let total = 0;
        // the heap the read keeps: after a full collection (bench/run.ts starts benches with
        // --expose-gc) before the read and after each page. RSS itself is no measure here: V8 grows
        // it lazily until ~10 pages whatever the window, and this process also generated the history.
        const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
        gc();
        const heapBefore = process.memoryUsage().heapUsed;
        let heapPeak = heapBefore;
        while (url) {
          const page: { ttfb: number; total: number; body: any } = await fetchTimed(url, auth);
          ttfbs.push(page.ttfb);
          total += page.total;
          events += page.body.events.length;
          gc();
          heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
          url = page.body.links.next ? page.body.links.next.replace(/^https?:\/\/[^/]+/, base) : null;
        }
        return {
          'one hour ms': median(hour),
          'window ms per 1,000 events': (total / Math.max(1, events)) * 1000,
          'window page TTFB median ms': median(ttfbs),
          // p90, not the max: the 14-day window has ~14× the pages, and the max of more samples is larger by itself
          'window page TTFB p90 ms': quantile(ttfbs, 0.9),
          'window heap kept after a page, MB (API in this process)': Math.max(0.01, (heapPeak - heapBefore) / 1048576),
        };
      });
    },
  },
];

function median(xs: number[]): number {
  return quantile(xs, 0.5);
}

function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
}

/** Median ms of `n` runs after one unmeasured warm-up run (caches, plans). */
async function timed(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  await fn(n);
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/** One day of the fleet: bulkHistory's trips and events plus telemetry points along each trip. */
async function simulateDay(ctx: AppContext, zone: string, day: Date): Promise<void> {
  await ensurePartitions(ctx, day, day);
  await bulkHistory(ctx.db, zone, day, 24, TRIPS_PER_VEHICLE);
  await ctx.db.query(
    `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id)
     SELECT t.device_id, t.zone_id, t.start_time + (t.end_time - t.start_time) * k / $3::int,
            ST_SetSRID(ST_MakePoint(13.40 + k * 0.0005, 52.51 + k * 0.0005), 4326), 80 - k, t.trip_id
       FROM trips t CROSS JOIN generate_series(1, $3::int) k
      WHERE t.zone_id = $1 AND t.end_time >= $2 AND t.end_time < $2::timestamptz + interval '1 day'`,
    [zone, day, TELEMETRY_PER_TRIP],
  );
}

async function publishCost(ctx: AppContext, zone: string): Promise<number> {
  return timed(7, async () => {
    const rs = await publishHourSet(ctx, zone, HOUR, { force: true });
    const failed = rs.find((r) => r.outcome === 'failed');
    if (failed && failed.outcome === 'failed') throw failed.error;
  });
}

/** Postgres-side ms of the hour's two source queries (EXPLAIN ANALYZE execution time, median of 7). */
async function sourceQueryCost(ctx: AppContext, zone: string): Promise<number> {
  const runs: number[] = [];
  for (let i = 0; i < 8; i++) {
    let ms = 0;
    for (const name of ['MdsTripsOfHour', 'MdsEventsOfHour'] as const) {
      const text = sql(name)
        .text.replace('$1', `'${zone}'`)
        .replaceAll('$2', `'${hourParam(HOUR)}'`);
      const res = await ctx.db.many(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`);
      ms += (res[0] as any)['QUERY PLAN'][0]['Execution Time'] as number;
    }
    if (i > 0) runs.push(ms);
  }
  return median(runs);
}

async function tableBytes(db: Db): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const r of await db.many(sql('HistoryPartitions'))) out[r.parent] = (out[r.parent] ?? 0) + Number(r.bytes);
  return out;
}

/** Publication rows for `days` days back from LAST_DAY for every zone and file (already published). */
async function fillPublications(db: Db, days: number): Promise<void> {
  await db.query(
    `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes, published_at)
     SELECT f.feed, f.version, z.id, h, 'published', 'k', 's', 0, 0, now()
       FROM zones z
      CROSS JOIN unnest($1::text[], $2::text[]) AS f (feed, version)
      CROSS JOIN generate_series($3::timestamp - make_interval(days => $4::int), $3::timestamp + interval '23 hours', interval '1 hour') AS h
     ON CONFLICT DO NOTHING`,
    [HOURLY_FEEDS.map((f) => f.feed), HOURLY_FEEDS.map((f) => f.version), hourParam(LAST_DAY), days],
  );
  await db.query('ANALYZE feed_publications');
}

/** Median ms of the missing-hours scan, the republish sweep and a single-row event insert (trigger). */
async function sweepCosts(ctx: AppContext, zone: string, device: string): Promise<{ missing: number; republish: number; insert: number }> {
  const feeds = [HOURLY_FEEDS.map((f) => f.feed), HOURLY_FEEDS.map((f) => f.version)] as const;
  const to = addHours(LAST_DAY, 23);
  const from = addHours(to, -47);
  const missing = await timed(50, () => ctx.db.many(sql('PubMissingHours'), [...feeds, hourParam(from), hourParam(to), 5000]));
  const republish = await timed(50, () => ctx.db.many(sql('PubNeedsRepublish'), [ctx.clock.now(), 5000]));
  // each insert lands in another published hour of the last days, so the trigger updates rows each time
  const insert = await timed(200, (i) =>
    ctx.db.query(
      `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location) VALUES ($1, $2, '{comms_lost}', 'non_contactable', $3, ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326))`,
      [device, zone, new Date(LAST_DAY.getTime() - i * 3_600_000 + 60_000)],
    ),
  );
  await ctx.db.query(`UPDATE feed_publications SET dirty = false WHERE dirty`);
  return { missing, republish, insert };
}

export async function run(): Promise<BenchResult> {
  const database = await cloneDatabase();
  const storeDir = mkdtempSync(join(tmpdir(), 'bench-store-'));
  const config = testConfig({ DATABASE_URL: database.url, STORE_URL: `file://${storeDir}`, LOG_LEVEL: 'silent' });
  const log = createLogger(config.logLevel);
  const ctx: AppContext = {
    config,
    log,
    db: new Db(config.databaseUrl, log, { max: 10, statementTimeoutMs: 1_800_000 }),
    store: await openStore(config),
    clock: new ManualClock(new Date(LAST_DAY.getTime() + DAY_MS + 3_600_000)),
    gateway: new SimulatedGateway({}),
  };
  const metrics: Record<string, number | null> = {};
  const notes: string[] = [];
  const ratio = (name: string, one: number, many: number) => {
    metrics[`${name} 1 day`] = Math.round(one * 100) / 100;
    metrics[`${name} ${DAYS} days`] = Math.round(many * 100) / 100;
    metrics[`${name} ratio`] = Math.round((many / one) * 100) / 100;
  };
  try {
    const zone = await feedZone(ctx.db, { id: 'scale', createdAt: new Date(LAST_DAY.getTime() - 400 * DAY_MS) });
    await bulkVehicles(ctx.db, zone, VEHICLES, 'S');
    const device = (await ctx.db.one<{ id: string }>(`SELECT id FROM vehicles WHERE zone_id = $1 LIMIT 1`, [zone])).id;

    // 1 day of history
    await simulateDay(ctx, zone, LAST_DAY);
    await ctx.db.query('ANALYZE');
    const bytes1 = await tableBytes(ctx.db);
    const publish1 = await publishCost(ctx, zone);
    const source1 = await sourceQueryCost(ctx, zone);
    const probes1 = new Map<string, Record<string, number>>();
    for (const p of PROBES) probes1.set(p.name, await p.measure(ctx, zone));

    // N days of history (the measured hour stays the last day's)
    const genStart = performance.now();
    for (let d = 1; d < DAYS; d++) await simulateDay(ctx, zone, new Date(LAST_DAY.getTime() - d * DAY_MS));
    await ctx.db.query('ANALYZE');
    notes.push(
      `history generated: ${DAYS} days × ${VEHICLES} vehicles × ${TRIPS_PER_VEHICLE} trips (+2 events, ${TELEMETRY_PER_TRIP} telemetry points each) in ${Math.round((performance.now() - genStart) / 1000)} s`,
    );
    const bytesN = await tableBytes(ctx.db);
    ratio('hourly publish ms', publish1, await publishCost(ctx, zone));
    ratio('hour source queries ms (Postgres execution)', source1, await sourceQueryCost(ctx, zone));
    for (const p of PROBES) {
      const many = await p.measure(ctx, zone);
      for (const [k, v] of Object.entries(many)) ratio(`${p.name}: ${k}`, probes1.get(p.name)![k], v);
    }

    // bytes per day and the steady state under the default retention
    let steady = 0;
    for (const table of HISTORY_TABLES) {
      const perDay = ((bytesN[table] ?? 0) - (bytes1[table] ?? 0)) / (DAYS - 1);
      metrics[`${table} MB per day`] = Math.round(perDay / 10485.76) / 100;
      steady += perDay * retentionDays(ctx, table);
    }
    metrics['database MB per day'] = HISTORY_TABLES.reduce((n, t) => n + (metrics[`${t} MB per day`] ?? 0), 0);
    metrics['steady-state history MB under default retention'] = Math.round(steady / 1048576);
    notes.push(
      `default retention: telemetry ${config.retention.telemetryDays} d, events ${config.retention.eventsDays} d, trips ${config.retention.tripsDays} d; the steady state is bounded by it whatever the years of operation`,
    );

    // publication rows of PUB_ZONES zones: 14 days vs PUB_DAYS days
    for (let i = 1; i < PUB_ZONES; i++) await feedZone(ctx.db, { id: `scale${i}`, createdAt: new Date(LAST_DAY.getTime() - 400 * DAY_MS) });
    await fillPublications(ctx.db, 14);
    const small = await sweepCosts(ctx, zone, device);
    await fillPublications(ctx.db, PUB_DAYS);
    const rows = (await ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM feed_publications`)).n;
    const big = await sweepCosts(ctx, zone, device);
    notes.push(`publication rows: ${PUB_ZONES} zones × 7 files × 14 days, then ${PUB_DAYS} days (${rows.toLocaleString('en-US')} rows)`);
    for (const [k, label] of [
      ['missing', 'missing-hours scan ms'],
      ['republish', 'republish sweep ms'],
      ['insert', 'event insert with trigger ms'],
    ] as const) {
      metrics[`${label} 14 days`] = Math.round(small[k] * 100) / 100;
      metrics[`${label} ${PUB_DAYS} days`] = Math.round(big[k] * 100) / 100;
      metrics[`${label} ratio`] = Math.round((big[k] / small[k]) * 100) / 100;
    }
  } finally {
    await ctx.db.close();
    await ctx.store.close();
    await database.drop();
    rmSync(storeDir, { recursive: true, force: true });
  }
  const ratios = Object.keys(metrics).filter((k) => k.endsWith(' ratio'));
  return {
    name: `scale (${VEHICLES} vehicles, 1 vs ${DAYS} days; publications of ${PUB_ZONES} zones, 14 vs ${PUB_DAYS} days)`,
    metrics,
    goals: ratios.map((m) => ({ metric: m, goal: '≤ 1.2', met: metrics[m] === null ? null : metrics[m] <= 1.2 })),
    notes,
  };
}
