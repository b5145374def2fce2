/**
 * `/vehicles/status` for a large zone (issue 26): GET /v1/partner-apis/mds/{zone}/vehicles/status
 * end to end through the real app (hot path + Koa, as bin/api.ts listens) over loopback, for a zone
 * of BENCH_VS_VEHICLES vehicles (default 10,000) that each have a last event and a last telemetry
 * (test/support/feed-fixtures.ts: bulkVehicles, one trip per vehicle, its telemetry and hourly
 * heartbeats). Goal: median ≤ 100 ms.
 *
 * Requests are sequential, one connection, after BENCH_VS_WARMUP (3) warm-up requests; each round
 * asks once without compression (Accept-Encoding: identity) and once with gzip (what fetch and
 * browsers send), so the two figures come from the same minutes of a shared machine. The goal is
 * judged on the identity figure; the gzip one adds the realtime gzip level 1 of the ~6 MB answer.
 * For context: the query's execution time in Postgres (EXPLAIN ANALYZE, median of 5), CPU per
 * request of this process (API + client) and of the database's backends (figures that other load on
 * a shared machine moves far less than latency), and whether JIT is on for the pool's connections.
 * BENCH_VS_CPUPROF=file writes a V8 CPU profile of the requests that measure this process's CPU.
 *
 *   BENCH=vehicles-status make bench      or      node --import tsx bench/vehicles-status.bench.ts
 */
import http from 'node:http';
import { once } from 'node:events';
import { pgCpuSeconds, startProfile } from './cpu.js';
import { runIfMain } from './main.js';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, withHotPath } from '../api/app.js';
import { systemClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { vehicleStatusRecordsQuery } from '../lib/feeds/mds/sources.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import { cloneDatabase } from '../test/support/db.js';
import { tokenFor } from '../test/support/feed-auth.js';
import { bulkHistory, bulkTelemetry, bulkVehicles, feedZone } from '../test/support/feed-fixtures.js';
import type { BenchResult } from './types.js';

const env = (name: string, def: number) => Number(process.env[name] ?? def);
const VEHICLES = env('BENCH_VS_VEHICLES', 10_000);
const REQUESTS = env('BENCH_VS_REQUESTS', 21);
const WARMUP = env('BENCH_VS_WARMUP', 3);
const GOAL_MS = 100;
const ZONE = 'vsbench';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const round1 = (x: number) => Math.round(x * 10) / 10;

/**
 * One request, the whole body read: time to last byte and the bytes on the wire. The client shares
 * this process with the API, so it only counts the bytes unless asked to `keep` the body.
 */
function get(port: number, path: string, headers: Record<string, string>, keep = false): Promise<{ ms: number; status: number; bytes: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: keepAlive }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (keep) chunks.push(c);
      });
      res.on('end', () => resolve({ ms: performance.now() - t0, status: res.statusCode ?? 0, bytes, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

export async function run(): Promise<BenchResult> {
  const notes: string[] = [];
  const metrics: BenchResult['metrics'] = {};
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ');
  notes.push(`load average (1/5/15 min) at start: ${load()}`);
  const database = await cloneDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'vs-bench-'));
  const config = testConfig({
    NODE_ENV: 'production',
    MODE: 'staging',
    DATABASE_URL: database.url,
    STORE_URL: `file://${join(dir, 'store')}`,
    LOG_LEVEL: 'silent',
  });
  const log = createLogger('silent');
  const ctx: AppContext = {
    config,
    db: new Db(config.databaseUrl, log, { max: 10 }),
    store: await openStore(config),
    log,
    clock: systemClock,
    gateway: new SimulatedGateway(),
  };
  let server: http.Server | undefined;
  try {
    const t0 = performance.now();
    await feedZone(ctx.db, { id: ZONE });
    await bulkVehicles(ctx.db, ZONE, VEHICLES, 'V');
    // one trip per vehicle in the last three hours (trip_start + trip_end events), its telemetry and
    // an hourly heartbeat per vehicle: every vehicle has a last event and a last telemetry
    const from = new Date(Date.now() - 3 * 3600_000);
    await bulkHistory(ctx.db, ZONE, from, 2, 1);
    await bulkTelemetry(ctx.db, ZONE, from, 2);
    await ctx.db.query('ANALYZE');
    notes.push(`seeded ${VEHICLES} vehicles with history in ${Math.round((performance.now() - t0) / 1000)} s`);
    metrics.vehicles = VEHICLES;
    metrics.jit_on = (await ctx.db.one<{ jit: string }>('SHOW jit')).jit === 'on' ? 1 : 0;

    const token = await tokenFor(ctx, 'vs-bench', 'city', [ZONE]);
    server = http.createServer(withHotPath(buildApp(ctx))).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const path = `/v1/partner-apis/mds/${ZONE}/vehicles/status`;
    const auth = { Authorization: `Bearer ${token}` };
    const identity = { ...auth, 'Accept-Encoding': 'identity' };
    const gzip = { ...auth, 'Accept-Encoding': 'gzip' };

    for (let i = 0; i < WARMUP; i++) {
      await get(port, path, identity);
      await get(port, path, gzip);
    }
    const first = await get(port, path, identity, true);
    if (first.status !== 200) throw new Error(`vehicles/status answered ${first.status}: ${first.body.toString().slice(0, 300)}`);
    const parsed = JSON.parse(first.body.toString()) as { vehicles_status: unknown[] };
    metrics.vehicles_status_count = parsed.vehicles_status.length;
    metrics.response_bytes = first.bytes;

    const plain: number[] = [];
    const zipped: number[] = [];
    let gzBytes = 0;
    for (let i = 0; i < REQUESTS; i++) {
      plain.push((await get(port, path, identity)).ms);
      const z = await get(port, path, gzip);
      zipped.push(z.ms);
      gzBytes = z.bytes;
    }
    metrics.vehicles_status_median_ms = round1(median(plain));
    metrics.vehicles_status_p90_ms = round1(pct(plain, 0.9));
    metrics.vehicles_status_gzip_median_ms = round1(median(zipped));
    metrics.vehicles_status_gzip_p90_ms = round1(pct(zipped, 0.9));
    metrics.response_gzip_bytes = gzBytes;

    // CPU per request (identity), robust to other load: this process (the API and the client that
    // reads the answer) and the database's backends; /proc counts in 10 ms ticks, hence many requests
    const datname = new URL(database.url).pathname.slice(1);
    const CPU_REQUESTS = env('BENCH_VS_CPU_REQUESTS', 20);
    // the backends are listed from a connection of their own: pgCpuSeconds leaves out the one it
    // asks on, which in the app's pool is the very backend that served the sequential requests
    const probe = new Db(database.url, log, { max: 1 });
    const pg0 = await pgCpuSeconds(probe, datname);
    const profile = process.env.BENCH_VS_CPUPROF ? await startProfile() : undefined;
    const node0 = process.cpuUsage();
    for (let i = 0; i < CPU_REQUESTS; i++) await get(port, path, identity);
    const node = process.cpuUsage(node0);
    if (profile) await profile(process.env.BENCH_VS_CPUPROF!);
    const pg1 = await pgCpuSeconds(probe, datname);
    await probe.close();
    metrics.node_cpu_ms_per_request = round1((node.user + node.system) / 1000 / CPU_REQUESTS);
    metrics.pg_cpu_ms_per_request = Number.isFinite(pg1 - pg0) ? round1(((pg1 - pg0) * 1000) / CPU_REQUESTS) : null;

    // the named query alone, in Postgres (what the driver and the app add is the rest)
    const { text } = vehicleStatusRecordsQuery();
    const exec: number[] = [];
    for (let i = 0; i < 5; i++) {
      const plan = await ctx.db.many<{ 'QUERY PLAN': Array<{ 'Execution Time': number }> }>(`EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ${text}`, [
        ZONE,
        null,
        null,
        new Date(),
        JSON.stringify(config.providerId),
      ]);
      exec.push(plan[0]['QUERY PLAN'][0]['Execution Time']);
    }
    metrics.query_execution_median_ms = round1(median(exec));
    notes.push(`identity ms by request: ${plain.map((x) => Math.round(x)).join(' ')}`);
    notes.push(`gzip ms by request: ${zipped.map((x) => Math.round(x)).join(' ')}`);
    notes.push(
      `${REQUESTS} sequential requests per encoding on one keep-alive connection after ${WARMUP} warm-up each; load average at end: ${load()} (2 shared CPUs: figures move with other work)`,
    );
  } finally {
    keepAlive.destroy();
    if (server) await new Promise((r) => server!.close(r));
    await ctx.db.close();
    await ctx.store.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    name: 'vehicles-status',
    metrics,
    goals: [
      {
        metric: 'vehicles_status_median_ms',
        goal: `<= ${GOAL_MS}`,
        met: metrics.vehicles_status_median_ms == null ? null : metrics.vehicles_status_median_ms <= GOAL_MS,
      },
      { metric: 'jit_on', goal: '= 0', met: metrics.jit_on === 0 },
    ],
    notes,
  };
}

runIfMain(import.meta.url, run);
