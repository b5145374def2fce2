/**
 * Breadth (issue 26): the largest operator on one host. For each Z of BENCH_BREADTH_ZONES, on a
 * fresh database, the ops tools' own code builds Z zones × V vehicles × the feed clients
 * (bench/breadth-fleet.ts: zone file import, clients file import, a partner key, `ops simulate`'s
 * history: a day, then the last closed hour with the whole fleet); then the real processes run side
 * by side on this host: one API process (bin/api.ts, NODE_ENV=production, its /metrics on a
 * loopback port) and one publisher process (bin/publisher.ts, NODE_ENV=production, its /metrics on
 * PUBLISHER_METRICS_PORT, a loopback port), and the bench measures:
 *   - catch-up: from the publisher's start (its /metrics answering: its pool open, its pg-boss and
 *     workers starting) until the day and the last closed hour of every zone's hourly files are
 *     published and every zone's GBFS is built: wall time, publisher and Postgres CPU, the API's
 *     event-loop delay meanwhile;
 *   - steady state, BENCH_BREADTH_MINUTES each, idle (nothing moves) and moving (bench/breadth-fleet.ts
 *     Driver: BENCH_BREADTH_MOVING of the fleet starts a ride every 15 s through the rental engine,
 *     each ending 15 s later): per minute the publisher's CPU, the Postgres CPU of the publisher's
 *     and the API's backends, files and bytes the publisher wrote (GBFS, hourly, other: reports;
 *     its store_objects_written_total and store_bytes_written_total between the phase's first and
 *     last scrape of its /metrics); the GBFS runs (a tick's jobs, from pg-boss's rows) against the
 *     tick interval and the status ttl; the oldest GBFS status file seen against its ttl (sampled
 *     every 2 s); the API's and the publisher's event-loop delay (p99, max: each one's
 *     nodejs_eventloop_lag_* over the phase); the zone-scoped reads, probed one every 250 ms in
 *     turn over up to 10 zones: partner vehicle list, MDS 2.0 vehicles/status, GBFS 3.0
 *     vehicle_status (p50, p99); peak RSS of the publisher over the two phases (VmHWM reset before
 *     them);
 *   - the hour: a forced republish of the last closed hour of every zone (the console's
 *     queueRepublish), from the send until every file is written;
 *   - peak RSS of the API (whole run) and of the publisher (catch-up, steady, hour).
 * Then, with every size measured, the same zone-scoped reads of all sizes alternated in 10 s slots
 * (`interleaved`: each size's API and database kept, publishers stopped, nothing moving), so that
 * the sizes' latencies are compared under the same host load at the same time; then each size's
 * moving phase again in turn (`alternated`: its publisher and its rides running, the others'
 * stopped), so that the reads under each size's own load are compared within minutes of each other
 * rather than across the runs' drift.
 * Then ratios per zone between the largest and the smallest Z (a figure ÷ Z against the same at the
 * smaller Z; zone-scoped latencies unscaled): goal ≤ 1.2 each. Goals at the largest Z (the issue's
 * are set for 100 zones × 1,000 vehicles): publisher ≤ 10 % of one core and ≤ 500 MiB in steady
 * state, every GBFS file within its ttl, API event-loop delay p99 < 50 ms, GBFS runs within the
 * 15 s tick.
 *
 * Sizes by environment:
 *   BENCH_BREADTH_ZONES            "10,100"  zone counts, each on its own database
 *   BENCH_BREADTH_VEHICLES         1000      vehicles per zone
 *   BENCH_BREADTH_HISTORY_VEHICLES 100       vehicles per zone in the history before the last hour
 *                                            (a day of 100 × 1,000 takes ~4 min to simulate alone)
 *   BENCH_BREADTH_HISTORY_HOURS    24        hours of that history (the day the catch-up publishes)
 *   BENCH_BREADTH_CLIENTS          1         feed clients per zone (a city client; more: data clients
 *                                            of that zone and the next ones), plus an aggregator and an insurer
 *   BENCH_BREADTH_MINUTES          1         measured minutes per steady phase
 *   BENCH_BREADTH_MOVING           0.001     share of the fleet starting a ride per 15 s tick (a busy
 *                                            hour of a fleet doing ~2 rides per vehicle a day)
 *   BENCH_BREADTH_WARMUP_S         20        after the catch-up, before the first phase
 *   BENCH_BREADTH_INTERLEAVED_S    60        seconds of interleaved probes per size (0: none)
 *   BENCH_BREADTH_ALTERNATED_ROUNDS 2        rounds of alternated moving phases (0: none)
 *   BENCH_BREADTH_ALTERNATED_S     40        seconds of probes per size and round (after 20 s of warm-up)
 *   BENCH_BREADTH_KEEP             (unset)   1: keep each size's database (its URL printed) to look into
 *   BENCH_CPU_PROF                 (unset)   a directory: the publisher writes its V8 CPU profile there
 * The run's length is mostly the catch-up's: every (zone, hour) is one job of the hourly-file queue;
 * a publisher's workers drain it (publisher/work.ts: ~17 jobs a second here, where pg-boss's
 * polling wait after every fetch held them to 4), and the minute tick queues at most 20,000 files
 * (2,500 zone-hours), so the day of 100 zones (2,500 jobs) takes about 3 minutes.
 *
 *   BENCH=breadth make bench      or      node --import tsx bench/breadth.bench.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { floorHour } from '../lib/feeds/hours.js';
import { GBFS_RUN_SECONDS, STATUS_TTL } from '../lib/feeds/gbfs/files.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { systemClock } from '../lib/core/clock.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import type { StoreKind } from '../lib/core/metrics.js';
import { ROOT } from '../lib/core/paths.js';
import { publicationQueue, queueRepublish } from '../lib/publication/queue.js';
import { openStore } from '../lib/core/store/index.js';
import { startApiProcess, type ApiProcess } from '../test/support/api-process.js';
import { cloneDatabase } from '../test/support/db.js';
import { freePort, waitFor } from '../test/support/faults.js';
import { buildOperator, Driver, type Operator } from './breadth-fleet.js';
import {
  BENCH_APP,
  feedToken,
  freshness,
  gbfsRuns,
  loopDelay,
  memoryMiB,
  percentile,
  PgCpu,
  Prober,
  resetPeak,
  sampleFreshness,
  scrapeMetrics,
  storeWrites,
  type Freshness,
} from './breadth-probes.js';
import { processCpuSeconds, processCpuTimes } from './cpu.js';
import { runIfMain } from './main.js';
import type { BenchResult } from './types.js';

const num = (name: string, dflt: number) => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
};
const ZONES = (process.env.BENCH_BREADTH_ZONES ?? '10,100')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const VEHICLES = num('BENCH_BREADTH_VEHICLES', 1000);
const HISTORY_VEHICLES = Math.min(VEHICLES, num('BENCH_BREADTH_HISTORY_VEHICLES', 100));
const HISTORY_HOURS = Math.max(1, Math.round(num('BENCH_BREADTH_HISTORY_HOURS', 24)));
const CLIENTS = Math.max(1, num('BENCH_BREADTH_CLIENTS', 1));
const MINUTES = num('BENCH_BREADTH_MINUTES', 1);
const MOVING = num('BENCH_BREADTH_MOVING', 0.001);
const WARMUP_S = num('BENCH_BREADTH_WARMUP_S', 20);
const CATCHUP_TIMEOUT_S = 1800;
/** BENCH_BREADTH_KEEP=1: each size's database is kept (its URL printed) to look into afterwards (EXPLAIN, pg_stat_*) */
const KEEP = process.env.BENCH_BREADTH_KEEP === '1';
const PROBE_MS = 250;
/** the interleaved probes (`interleaved`): seconds per size, in slots of INTERLEAVED_SLOT_S */
const INTERLEAVED_S = num('BENCH_BREADTH_INTERLEAVED_S', 60);
const INTERLEAVED_SLOT_S = 10;
/** the alternated moving phases (`alternated`): rounds (0: none), warm-up and probing of each size's turn */
const ALTERNATED_ROUNDS = Math.round(num('BENCH_BREADTH_ALTERNATED_ROUNDS', 2));
const ALTERNATED_WARM_S = 20;
const ALTERNATED_PROBE_S = num('BENCH_BREADTH_ALTERNATED_S', 40);
const PROBE_ZONES = 10;
const SAMPLE_MS = 2000;
const SEED = 26;

const r2 = (x: number | null) => (x === null || !Number.isFinite(x) ? null : Math.round(x * 100) / 100);
const MiB = 1048576;

/** The publisher process: bin/publisher.ts, its /metrics on a loopback port. */
interface PublisherProcess {
  proc: ChildProcess;
  out: () => string;
  metricsUrl: string;
}

/** Starts bin/publisher.ts; resolves once its /metrics answers (right before its workers start). */
async function startPublisherProcess(databaseUrl: string, storeDir: string): Promise<PublisherProcess> {
  const port = await freePort();
  // BENCH_CPU_PROF=dir: the publisher writes a V8 CPU profile there when it exits (node --cpu-prof)
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const proc = spawn(process.execPath, [...prof, '--import', 'tsx', join(ROOT, 'bin', 'publisher.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      // no vehicle broker here: the simulated vehicles accept every command
      MODE: 'staging',
      DATABASE_URL: databaseUrl,
      STORE_URL: `file://${storeDir}`,
      LOG_LEVEL: 'warn',
      PUBLISHER_METRICS_PORT: String(port),
      // the last closed hour is due at once (the default waits 5 minutes for late data)
      PUBLISH_LATENESS_SECONDS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (c) => (out = (out + String(c)).slice(-20000)));
  proc.stderr.on('data', (c) => (out = (out + String(c)).slice(-20000)));
  const metricsUrl = `http://127.0.0.1:${port}/metrics`;
  const exited = () => proc.exitCode !== null || proc.signalCode !== null;
  // the first scrape also resets its event-loop delay histogram
  await waitFor('the publisher to serve /metrics', async () => exited() || (await fetch(metricsUrl).catch(() => undefined))?.ok, 60_000, 50);
  if (exited()) throw new Error(`publisher exited (${proc.exitCode}) before it was ready: ${out}`);
  return { proc, out: () => out, metricsUrl };
}

async function stopProcess(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, 'exit');
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
  await exited.catch(() => undefined);
  clearTimeout(timer);
}

interface PhaseFigures {
  publisher_cpu_s_per_min: number;
  publisher_core_percent: number;
  /** the kernel's share of it (stime: syscalls, the store's file writes and fsyncs, socket writes) */
  publisher_system_share: number | null;
  api_cpu_s_per_min: number;
  pg_publisher_cpu_s_per_min: number;
  pg_api_cpu_s_per_min: number;
  pg_bench_cpu_s_per_min: number;
  pg_other_cpu_s_per_min: number;
  gbfs_files_per_min: number;
  gbfs_mib_per_min: number;
  hourly_files_per_min: number;
  hourly_mib_per_min: number;
  other_files_per_min: number;
  gbfs_status_age_max_s: number;
  gbfs_files_over_ttl_max: number;
  gbfs_samples_over_ttl: number;
  api_lag_p99_ms: number;
  api_lag_max_ms: number;
  publisher_lag_p99_ms: number;
  publisher_lag_max_ms: number;
  vehicle_list_p50_ms: number | null;
  vehicle_list_p99_ms: number | null;
  mds_vehicles_status_p50_ms: number | null;
  mds_vehicles_status_p99_ms: number | null;
  gbfs_vehicle_status_p50_ms: number | null;
  gbfs_vehicle_status_p99_ms: number | null;
  probe_failures: number;
  rides_started_per_min: number;
}

/**
 * A size's processes and database, kept after its own measurement for the probes of every size in
 * turn (`interleaved`, `alternated`): its API, and its publisher stopped (SIGSTOP: no CPU, its state
 * kept) until `resume` lets it go on and starts the size's rides again (its moving phase's driver),
 * `pause` ends them and stops it again; `close` ends its processes and drops the database.
 */
interface Kept {
  zones: number;
  prober: () => Prober;
  refreshTokens: () => Promise<void>;
  resume: () => void;
  /** stops the rides (ending the running ones) and the publisher; the rides started since `resume` */
  pause: () => Promise<number>;
  close: () => Promise<void>;
}

async function measure(zones: number, notes: string[]): Promise<{ figures: Record<string, number | null>; kept: Kept }> {
  const database = await cloneDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'breadth-bench-'));
  const storeDir = join(dir, 'store');
  const config = testConfig({ DATABASE_URL: database.url, STORE_URL: `file://${storeDir}`, LOG_LEVEL: 'silent' });
  const log = createLogger('silent');
  const ctx: AppContext = {
    config,
    log,
    db: new Db(config.databaseUrl, log, { max: 10, applicationName: BENCH_APP }),
    store: await openStore(config),
    clock: systemClock,
    gateway: new SimulatedGateway({}),
  };
  const f: Record<string, number | null> = {};
  let api: ApiProcess | undefined;
  let pub: PublisherProcess | undefined;
  let sampler: NodeJS.Timeout | undefined;
  let driver: Driver | undefined;
  let kept: Kept | undefined;
  try {
    const end = floorHour(new Date());
    const op: Operator = await buildOperator(ctx, dir, {
      zones,
      vehicles: VEHICLES,
      historyVehicles: HISTORY_VEHICLES,
      historyHours: HISTORY_HOURS,
      clientsPerZone: CLIENTS,
      end,
      seed: SEED,
    });
    Object.assign(f, {
      setup_zone_import_s: r2(op.zoneImportS),
      setup_clients_import_s: r2(op.clientsImportS),
      setup_history_s: r2(op.historyS),
      history_rows: op.historyRows,
      vehicles: op.vehicles,
      feed_clients: op.clients,
    });

    const pg = new PgCpu(ctx.db, database.name);
    let fresh: Freshness | undefined;
    let sampling = Promise.resolve();
    sampler = setInterval(() => {
      sampling = sampling
        .then(async () => {
          await pg.sample();
          if (fresh) await sampleFreshness(ctx.db, fresh);
        })
        .catch(() => undefined);
    }, SAMPLE_MS);

    const metricsPort = await freePort();
    api = await startApiProcess(database, storeDir, { NODE_ENV: 'production', MODE: 'staging', METRICS_PORT: String(metricsPort), LOG_LEVEL: 'warn' });
    const apiPid = api.proc.pid!;
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const apiLag = async () => loopDelay(await scrapeMetrics(metricsUrl));
    await apiLag();

    // catch-up: the history's hours and the last closed hour of every zone's hourly files, and every zone's first GBFS build
    await pg.sample();
    const pg0 = pg.totals();
    pub = await startPublisherProcess(database.url, storeDir);
    const pubPid = pub.proc.pid!;
    const t0 = performance.now();
    const pubCpu0 = processCpuSeconds(pubPid);
    const expected = zones * (HISTORY_HOURS + 1) * HOURLY_FEEDS.length;
    const deadline = Date.now() + CATCHUP_TIMEOUT_S * 1000;
    let published = 0;
    for (;;) {
      const r = await ctx.db.one<{ files: number; built: number }>(
        `SELECT (SELECT count(*)::int FROM feed_publications WHERE status = 'published' AND hour BETWEEN $1 AND $2) AS files,
                (SELECT count(*)::int FROM gbfs_zone_builds) AS built`,
        [hourParam(op.firstHour), hourParam(op.lastHour)],
      );
      published = r.files;
      if (r.files >= expected && r.built >= zones) break;
      if (Date.now() > deadline) break;
      await sleep(1000);
    }
    const catchUpS = (performance.now() - t0) / 1000;
    await pg.sample();
    const pg1 = pg.totals();
    const catchUpLag = await apiLag();
    Object.assign(f, {
      catch_up_s: published >= expected ? r2(catchUpS) : null,
      catch_up_zone_hours: zones * (HISTORY_HOURS + 1),
      catch_up_files: published,
      catch_up_publisher_cpu_s: r2(processCpuSeconds(pubPid) - pubCpu0),
      catch_up_pg_publisher_cpu_s: r2(pg1.publisher - pg0.publisher),
      catch_up_api_lag_p99_ms: r2(catchUpLag.p99Ms),
      catch_up_api_lag_max_ms: r2(catchUpLag.maxMs),
      publisher_peak_catch_up_mib: memoryMiB(pubPid, 'VmHWM'),
    });
    if (published < expected) notes.push(`z${zones}: the catch-up had published ${published} of ${expected} files after ${CATCHUP_TIMEOUT_S} s`);

    await sleep(WARMUP_S * 1000);

    // the zone-scoped reads, over up to PROBE_ZONES zones spread over the list, with each zone's city client
    const probeZones = Array.from({ length: Math.min(PROBE_ZONES, zones) }, (_, i) => op.zones[Math.floor((i * zones) / Math.min(PROBE_ZONES, zones))]);
    const tokens = new Map<string, string>();
    const refreshTokens = async () => {
      for (const z of probeZones) {
        const c = op.cityClients.get(z)!;
        tokens.set(z, await feedToken(api!.base, c.client_id, c.secret));
      }
    };
    const zoneOf = (i: number) => probeZones[i % probeZones.length];
    const bearer = (z: string) => ({ Authorization: `Bearer ${tokens.get(z)}` });
    const apiBase = api.base;
    const newProber = () =>
      new Prober(
        apiBase,
        [
          { name: 'vehicle_list', request: (i) => ({ path: `/v1/vehicles?zoneID=${zoneOf(i)}`, headers: { 'X-Auth-Token': op.partnerKey } }) },
          { name: 'mds_vehicles_status', request: (i) => ({ path: `/v1/partner-apis/mds/${zoneOf(i)}/vehicles/status`, headers: bearer(zoneOf(i)) }) },
          { name: 'gbfs_vehicle_status', request: (i) => ({ path: `/v1/partner-apis/gbfs/${zoneOf(i)}/vehicle_status.json`, headers: bearer(zoneOf(i)) }) },
        ],
        PROBE_MS,
      );
    const prober = newProber();
    driver = new Driver(ctx, MOVING, GBFS_RUN_SECONDS, SEED);
    await driver.load(op.vehicles);

    const windows: Array<{ name: string; from: Date; to: Date }> = [];
    const phase = async (name: 'idle' | 'moving'): Promise<PhaseFigures> => {
      await refreshTokens();
      await pg.sample();
      const p0 = pg.totals();
      const s0 = storeWrites(await scrapeMetrics(pub!.metricsUrl));
      await apiLag();
      const cpu0 = { pub: processCpuSeconds(pubPid), pubSys: processCpuTimes(pubPid).system, api: processCpuSeconds(apiPid) };
      const rides0 = driver!.counts.started;
      fresh = freshness();
      prober.start();
      if (name === 'moving') driver!.start();
      const from = new Date();
      const started = performance.now();
      await sleep(MINUTES * 60_000);
      const minutes = (performance.now() - started) / 60_000;
      const to = new Date();
      const cpu1 = { pub: processCpuSeconds(pubPid), pubSys: processCpuTimes(pubPid).system, api: processCpuSeconds(apiPid) };
      const pubScrape = await scrapeMetrics(pub!.metricsUrl);
      const s1 = storeWrites(pubScrape);
      const pubLag = loopDelay(pubScrape);
      const lag = await apiLag();
      await sampling;
      await pg.sample();
      const p1 = pg.totals();
      const lat = await prober.stop();
      const seen = fresh;
      fresh = undefined;
      if (name === 'moving') await driver!.stop();
      windows.push({ name, from, to });
      const perMin = (x: number) => r2(x / minutes)!;
      const files = (k: StoreKind) => perMin(s1.files[k] - s0.files[k]);
      const mib = (k: StoreKind) => perMin((s1.bytes[k] - s0.bytes[k]) / MiB);
      const pct = (k: string, p: number) => r2(percentile(lat.get(k) ?? [], p));
      for (const [k, why] of prober.failures) notes.push(`z${zones} ${name}: ${k} probe failed: ${why}`);
      return {
        publisher_cpu_s_per_min: perMin(cpu1.pub - cpu0.pub),
        publisher_core_percent: r2(((cpu1.pub - cpu0.pub) / (minutes * 60)) * 100)!,
        publisher_system_share: r2((cpu1.pubSys - cpu0.pubSys) / (cpu1.pub - cpu0.pub)),
        api_cpu_s_per_min: perMin(cpu1.api - cpu0.api),
        pg_publisher_cpu_s_per_min: perMin(p1.publisher - p0.publisher),
        pg_api_cpu_s_per_min: perMin(p1.api - p0.api),
        pg_bench_cpu_s_per_min: perMin(p1.bench - p0.bench),
        pg_other_cpu_s_per_min: perMin(p1.other - p0.other),
        gbfs_files_per_min: files('gbfs'),
        gbfs_mib_per_min: mib('gbfs'),
        hourly_files_per_min: files('hourly'),
        hourly_mib_per_min: mib('hourly'),
        other_files_per_min: files('report'),
        gbfs_status_age_max_s: r2(seen.statusAgeMaxS)!,
        gbfs_files_over_ttl_max: seen.overTtlMax,
        gbfs_samples_over_ttl: seen.samplesOverTtl,
        api_lag_p99_ms: r2(lag.p99Ms)!,
        api_lag_max_ms: r2(lag.maxMs)!,
        publisher_lag_p99_ms: r2(pubLag.p99Ms)!,
        publisher_lag_max_ms: r2(pubLag.maxMs)!,
        vehicle_list_p50_ms: pct('vehicle_list', 50),
        vehicle_list_p99_ms: pct('vehicle_list', 99),
        mds_vehicles_status_p50_ms: pct('mds_vehicles_status', 50),
        mds_vehicles_status_p99_ms: pct('mds_vehicles_status', 99),
        gbfs_vehicle_status_p50_ms: pct('gbfs_vehicle_status', 50),
        gbfs_vehicle_status_p99_ms: pct('gbfs_vehicle_status', 99),
        probe_failures: prober.failures.size,
        rides_started_per_min: perMin(driver!.counts.started - rides0),
      };
    };

    resetPeak(pubPid);
    for (const name of ['idle', 'moving'] as const) for (const [k, v] of Object.entries(await phase(name))) f[`${name}_${k}`] = v;
    f.publisher_peak_steady_mib = memoryMiB(pubPid, 'VmHWM');
    f.rides_refused = driver.counts.refused;
    if (floorHour(new Date()).getTime() !== end.getTime())
      notes.push(`z${zones}: an hour closed during the run: its hourly files were published in it (hourly_files_per_min)`);

    // the hour: the last closed hour of every zone republished (forced), as the console asks for it
    resetPeak(pubPid);
    const boss = await publicationQueue(ctx);
    const h0 = new Date();
    const hourCpu0 = processCpuSeconds(pubPid);
    for (const z of op.zones)
      await queueRepublish(
        ctx,
        boss,
        z,
        HOURLY_FEEDS.map((feed) => ({ feed: feed.id, hour: op.lastHour })),
      );
    const hourFiles = zones * HOURLY_FEEDS.length;
    let written = { n: 0, last: null as Date | null };
    const hourDeadline = Date.now() + 600_000;
    do {
      await sleep(250);
      written = await ctx.db.one(`SELECT count(*)::int AS n, max(published_at) AS last FROM feed_publication_log WHERE hour = $1 AND published_at >= $2`, [
        hourParam(op.lastHour),
        h0,
      ]);
    } while (written.n < hourFiles && Date.now() < hourDeadline);
    await boss.stop({ graceful: false, close: false });
    Object.assign(f, {
      hour_publish_s: written.n >= hourFiles && written.last ? r2((written.last.getTime() - h0.getTime()) / 1000) : null,
      hour_files: written.n,
      hour_publisher_cpu_s: r2(processCpuSeconds(pubPid) - hourCpu0),
      publisher_peak_hour_mib: memoryMiB(pubPid, 'VmHWM'),
      api_peak_mib: memoryMiB(apiPid, 'VmHWM'),
    });

    // the GBFS runs of each phase, now that their last jobs are done
    for (const w of windows) {
      const runs = await gbfsRuns(ctx.db, w.from, w.to, GBFS_RUN_SECONDS);
      f[`${w.name}_gbfs_runs`] = runs.length;
      f[`${w.name}_gbfs_run_p50_s`] = r2(percentile(runs, 50));
      f[`${w.name}_gbfs_run_max_s`] = r2(runs.length ? Math.max(...runs) : null);
    }
    if (pub.proc.exitCode !== null) notes.push(`z${zones}: the publisher exited early: ${pub.out().slice(-500)}`);
    const errors = pub.out().trim();
    if (errors) notes.push(`z${zones}: publisher output (warnings and errors): ${errors.slice(-300).replace(/\s+/g, ' ')}`);
    const [keptApi, keptPub, keptDriver] = [api, pub, driver];
    // the publisher waits, stopped, while the other sizes run (it would add its idle work to theirs)
    keptPub.proc.kill('SIGSTOP');
    let ridesAtResume = 0;
    kept = {
      zones,
      prober: newProber,
      refreshTokens,
      resume: () => {
        keptPub.proc.kill('SIGCONT');
        ridesAtResume = keptDriver.counts.started;
        keptDriver.start();
      },
      pause: async () => {
        await keptDriver.stop();
        keptPub.proc.kill('SIGSTOP');
        return keptDriver.counts.started - ridesAtResume;
      },
      close: async () => {
        await keptDriver.stop().catch(() => undefined);
        keptPub.proc.kill('SIGCONT');
        await stopProcess(keptPub.proc);
        await stopProcess(keptApi.proc);
        await ctx.db.close();
        await ctx.store.close();
        await dropOrKeep();
      },
    };
    return { figures: f, kept };
  } finally {
    if (sampler) clearInterval(sampler);
    // kept: the processes, the driver's pool and the database stay for the probes of every size in
    // turn (Kept.close ends them)
    if (!kept) {
      await driver?.stop().catch(() => undefined);
      await stopProcess(pub?.proc);
      await ctx.db.close();
      await ctx.store.close();
      if (api) await stopProcess(api.proc);
      await dropOrKeep();
    }
  }

  async function dropOrKeep() {
    if (KEEP) console.error(`kept the database of ${zones} zones: ${database.url}`);
    else await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The zone-scoped reads of every size, alternated: each size's own API process and database (kept
 * after its measurement; its publisher stopped, nothing moving), probed as in the steady phases,
 * in turn for INTERLEAVED_SLOT_S at a time until each had INTERLEAVED_S. What the sizes' steady
 * phases compare includes their host's load (at 100 zones, ten times the rides and the publisher's
 * work on the same cores, minutes after the other size's run); this compares what a read costs at
 * each size under the same load, at the same time.
 */
async function interleaved(kept: Kept[]): Promise<Map<number, Map<string, number[]>>> {
  const out = new Map<number, Map<string, number[]>>();
  for (const k of kept) {
    await k.refreshTokens();
    out.set(k.zones, new Map());
  }
  const slots = Math.max(1, Math.round(INTERLEAVED_S / INTERLEAVED_SLOT_S));
  for (let slot = 0; slot < slots; slot++) for (const k of inTurn(kept, slot)) await probeFor(k, INTERLEAVED_SLOT_S, out.get(k.zones)!, 'interleaved');
  return out;
}

/** The sizes in turn for round `i`: the order reversed every other round, so that neither size always follows the other. */
const inTurn = (kept: Kept[], i: number): Kept[] => (i % 2 ? [...kept].reverse() : kept);

/** `k`'s probes for `seconds`, their latencies added to `into`; throws when a probe failed. */
async function probeFor(k: Kept, seconds: number, into: Map<string, number[]>, what: string): Promise<void> {
  const prober = k.prober();
  prober.start();
  try {
    await sleep(seconds * 1000);
  } finally {
    for (const [name, xs] of await prober.stop()) into.set(name, [...(into.get(name) ?? []), ...xs]);
  }
  if (prober.failures.size) throw new Error(`${what} probes of z${k.zones} failed: ${[...prober.failures.values()].join('; ')}`);
}

/**
 * The moving phase of every size, alternated: each size in turn has its publisher resumed and its
 * rides started (as in its moving phase: its own rate of movement, ten times the rides at 100 zones
 * as at 10), ALTERNATED_WARM_S to reach its steady state (a ride lasts a tick, 15 s), then its
 * zone-scoped reads probed for ALTERNATED_PROBE_S, then its rides ended and its publisher stopped
 * again; ALTERNATED_ROUNDS rounds, the order reversed every other one. Each size's reads carry its
 * own load, as in its moving phase, but the sizes are measured within a minute or two of each other:
 * the machine's drift between runs minutes apart (idle ratios of 1.2 to 1.5 where nothing per zone
 * differs, docs/benchmarks-history.md stop 37) is no longer in their ratio.
 */
async function alternated(kept: Kept[]): Promise<Map<number, { latencies: Map<string, number[]>; ridesPerMin: number }>> {
  const out = new Map<number, { latencies: Map<string, number[]>; rides: number }>();
  for (const k of kept) out.set(k.zones, { latencies: new Map(), rides: 0 });
  for (let round = 0; round < ALTERNATED_ROUNDS; round++) {
    for (const k of inTurn(kept, round)) {
      await k.refreshTokens();
      k.resume();
      const mine = out.get(k.zones)!;
      try {
        await sleep(ALTERNATED_WARM_S * 1000);
        await probeFor(k, ALTERNATED_PROBE_S, mine.latencies, 'alternated');
      } finally {
        mine.rides += await k.pause();
      }
    }
  }
  // rides per minute of each size's whole turns (warm-up included), as a check of its load
  const turnMinutes = (ALTERNATED_ROUNDS * (ALTERNATED_WARM_S + ALTERNATED_PROBE_S)) / 60;
  return new Map([...out].map(([z, o]) => [z, { latencies: o.latencies, ridesPerMin: o.rides / turnMinutes }]));
}

/** Figures divided by Z whose ratio per zone the issue asks for (goal ≤ 1.2). */
const PER_ZONE = [
  'idle_publisher_cpu_s_per_min',
  'moving_publisher_cpu_s_per_min',
  'idle_pg_publisher_cpu_s_per_min',
  'moving_pg_publisher_cpu_s_per_min',
  'idle_gbfs_files_per_min',
  'moving_gbfs_files_per_min',
  'idle_gbfs_mib_per_min',
  'moving_gbfs_mib_per_min',
  'catch_up_s',
  'catch_up_publisher_cpu_s',
  'hour_publish_s',
  'hour_publisher_cpu_s',
];
/**
 * The zone-scoped reads of each size's moving phase: their ratio is printed, and judged only
 * without the alternated phases (`alternated`), which measure the same reads under the same loads
 * without the minutes between the sizes' runs.
 */
const MOVING_LATENCIES = ['moving_vehicle_list_p50_ms', 'moving_mds_vehicles_status_p50_ms', 'moving_gbfs_vehicle_status_p50_ms'];
/** Zone-scoped figures: the same at any Z (ratio unscaled). */
const FLAT = [
  'alternated_vehicle_list_p50_ms',
  'alternated_mds_vehicles_status_p50_ms',
  'alternated_gbfs_vehicle_status_p50_ms',
  'interleaved_vehicle_list_p50_ms',
  'interleaved_mds_vehicles_status_p50_ms',
  'interleaved_gbfs_vehicle_status_p50_ms',
];

export async function run(): Promise<BenchResult> {
  const notes: string[] = [
    `load average (1/5/15 min) at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}, ${cpus().length} cores`,
    `${VEHICLES} vehicles per zone (${HISTORY_VEHICLES} in ${HISTORY_HOURS} simulated hours of history, all of them in the last closed hour); ${CLIENTS} feed client(s) per zone plus an aggregator and an insurer; ${MINUTES} min per steady phase; moving: ${MOVING} of the fleet starts a ride every ${GBFS_RUN_SECONDS} s, each ending ${GBFS_RUN_SECONDS} s later`,
  ];
  const metrics: BenchResult['metrics'] = {};
  const goals: BenchResult['goals'] = [];
  const byZones = new Map<number, Record<string, number | null>>();
  const kept: Kept[] = [];
  try {
    for (const z of ZONES) {
      const m = await measure(z, notes);
      kept.push(m.kept);
      byZones.set(z, m.figures);
      for (const [k, v] of Object.entries(m.figures)) metrics[`z${z}_${k}`] = v;
    }
    // a size's figures of the probes in turn, under `prefix`, in its figures and the metrics
    const record = (z: number, prefix: string, more: Record<string, number | null>, latencies: Map<string, number[]>) => {
      const f = byZones.get(z)!;
      for (const [name, xs] of latencies) f[`${prefix}_${name}_p50_ms`] = r2(percentile(xs, 50));
      for (const [k, v] of Object.entries(more)) f[`${prefix}_${k}`] = v;
      for (const [k, v] of Object.entries(f)) if (k.startsWith(`${prefix}_`)) metrics[`z${z}_${k}`] = v;
    };
    if (kept.length > 1 && INTERLEAVED_S > 0) for (const [z, lat] of await interleaved(kept)) record(z, 'interleaved', {}, lat);
    if (kept.length > 1 && ALTERNATED_ROUNDS > 0)
      for (const [z, { latencies, ridesPerMin }] of await alternated(kept)) record(z, 'alternated', { rides_started_per_min: r2(ridesPerMin) }, latencies);
  } finally {
    for (const k of kept) await k.close().catch(() => undefined);
  }
  metrics.bench_peak_mib = Math.round((process.resourceUsage().maxRSS * 1024) / MiB);

  const small = Math.min(...ZONES);
  const large = Math.max(...ZONES);
  if (small !== large) {
    const a = byZones.get(small)!;
    const b = byZones.get(large)!;
    const ratio = (k: string, scale: number) => {
      const [x, y] = [a[k], b[k]];
      if (x === null || y === null || x === undefined || y === undefined) return null;
      // nothing at either size (idle GBFS writes): no cost per zone to grow
      if (x === 0 && y === 0) return 0;
      return x === 0 ? null : r2(y / scale / x);
    };
    for (const k of PER_ZONE) metrics[`${k}_per_zone_ratio`] = ratio(k, large / small);
    for (const k of [...FLAT, ...MOVING_LATENCIES]) metrics[`${k}_ratio`] = ratio(k, 1);
    // the moving phases' own latency ratios are judged only when no alternated phase measured the same reads under the same loads without the drift between runs
    const flat = b.alternated_vehicle_list_p50_ms != null ? FLAT : [...FLAT.filter((k) => !k.startsWith('alternated_')), ...MOVING_LATENCIES];
    for (const k of [...PER_ZONE.map((p) => `${p}_per_zone_ratio`), ...flat.map((p) => `${p}_ratio`)]) {
      const v = metrics[k];
      goals.push({ metric: k, goal: `<= 1.2 (z${large} against z${small})`, met: v === null || v === undefined ? null : v <= 1.2 });
    }
  }

  const at = (k: string) => metrics[`z${large}_${k}`] ?? null;
  const issueSize = `(the issue's goal at 100 zones × 1,000 vehicles; here ${large} × ${VEHICLES})`;
  const goal = (k: string, text: string, ok: (v: number) => boolean) => {
    const v = at(k);
    goals.push({ metric: `z${large}_${k}`, goal: `${text} ${issueSize}`, met: v === null ? null : ok(v) });
  };
  for (const p of ['idle', 'moving']) {
    goal(`${p}_publisher_core_percent`, '<= 10 % of one core', (v) => v <= 10);
    goal(`${p}_gbfs_files_over_ttl_max`, '= 0 (every GBFS file within its ttl, sampled every 2 s)', (v) => v === 0);
    goal(`${p}_api_lag_p99_ms`, '< 50', (v) => v < 50);
    goal(`${p}_gbfs_run_max_s`, `<= ${GBFS_RUN_SECONDS} (a tick's work within its interval; the status ttl is ${STATUS_TTL} s)`, (v) => v <= GBFS_RUN_SECONDS);
  }
  goal('publisher_peak_steady_mib', '<= 500 (peak RSS over the two steady phases)', (v) => v <= 500);

  notes.push(
    'processes: one API (bin/api.ts, NODE_ENV=production) and one publisher (bin/publisher.ts, NODE_ENV=production, PUBLISH_LATENESS_SECONDS=0), each with its /metrics on a loopback port, the bench process (setup, driver, probes, samplers) and Postgres, all on these cores',
    'CPU: utime + stime from /proc of each process; *_core_percent = CPU seconds / wall seconds of the phase × 100',
    "pg_*: CPU of the Postgres backends of this run's database by application_name, sampled every 2 s (a backend that closed keeps its last sample): publisher (its pool and pg-boss), api, bench (the driver's rides, the samplers, the probes' token requests are the API's); WAL writer, checkpointer and autovacuum launcher are not counted, nor other databases of the cluster",
    "files and MiB: objects the publisher wrote to its store, by kind: gbfs (snapshots), hourly (MDS and insurance files), other (monthly reports); from its /metrics (store_objects_written_total, store_bytes_written_total: counted in the publication sink, once per object put, none for unchanged bytes), the phase's last scrape less its first",
    `gbfs_run_*: per 15 s tick, the tick job's creation to the completion of the last zone or scope job created before the next tick (pg-boss's rows); gbfs_status_age_max_s: the oldest status file (ttl ${STATUS_TTL} s) seen, now − last_updated, sampled every 2 s; gbfs_files_over_ttl_max: most files past their ttl in one sample`,
    "api_lag_* / publisher_lag_*: event-loop delay beyond the 10 ms monitoring interval (prom-client's nodejs_eventloop_lag_p99/max_seconds of each process's /metrics, whose histogram is reset at each scrape: the phase's last scrape covers the phase)",
    `latencies: one request every ${PROBE_MS} ms in turn over up to ${PROBE_ZONES} zones (partner vehicle list with a partner key, MDS 2.0 vehicles/status and GBFS 3.0 vehicle_status with the zone's city client token), the whole body read, timed in a worker thread of the bench (its main thread drives the rides and samples)`,
    `catch_up_s: from the publisher's start (its /metrics answering, right before its pg-boss and workers start) until ${HISTORY_HOURS + 1} hours (the history and the last closed hour) of every zone's ${HOURLY_FEEDS.length} hourly files are published and every zone's GBFS is built; each (zone, hour) is one job of the hourly-file queue (the minute tick queues at most 20,000 files). hour_publish_s: a forced republish of the last closed hour of every zone (the console's queueRepublish), from the send to the last file written`,
    `interleaved_*: the same probes once every size has been measured, each size's own API and database kept (publishers stopped, nothing moving; the smaller sizes' idle APIs stay up during the larger ones' runs), the sizes in turn for ${INTERLEAVED_SLOT_S} s at a time until each had ${INTERLEAVED_S} s: the read's cost at each size under the same host load, where the moving_* latencies of each size carry its own run's load (ten times the rides and the publisher's work on the same cores at 100 zones) and the machine's drift between runs minutes apart`,
    `alternated_*: once every size has been measured, each size's moving phase again in turn (its publisher resumed, its rides at its own rate: ten times as many at 100 zones as at 10), ${ALTERNATED_WARM_S} s to reach its steady state then ${ALTERNATED_PROBE_S} s of the same probes, ${ALTERNATED_ROUNDS} round(s), the order reversed every other one; the other sizes' publishers stopped (SIGSTOP) and nothing of theirs moving meanwhile: the reads under each size's own load, within minutes of each other, where the moving_* latencies of the sizes are measured minutes apart (their ratios are printed, and judged only when there is no alternated phase)`,
    'ratios: a figure at the largest Z ÷ its Z against the same at the smallest; latencies unscaled',
  );
  return { name: 'breadth', metrics, goals, notes };
}

runIfMain(import.meta.url, run);
