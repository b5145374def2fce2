/**
 * BENCH=ingest (issue 41): the largest operator's evening peak through the real vehicle path on this
 * machine. 250,000 vehicles in 10 zones (BENCH_INGEST_VEHICLES), 15 % riding and reporting every
 * 10 s, the rest every 5 minutes: about 4,460 reports a second, published by simulated vehicles
 * multiplexed over 4 connections (the demo fleet's bridge identity), through the real Mosquitto, into
 * Postgres by 2 ingest processes (dist/ingest.mjs, each its own INGEST_ID), for BENCH_INGEST_SECONDS
 * (300). The broker, the ingest processes, an API process and Postgres share the machine's cores with
 * this process, which generates the load.
 *
 * It prints:
 * - reports/s sustained: those stored over the window, and the backlog left at its end (how long the
 *   ingest took to store what had been sent);
 * - publish-to-visible latency: a probe every 250 ms publishes a report of a vehicle that reports
 *   nothing else and polls the partner API (GET /v1/vehicles/id/{id}) every 20 ms until the report's
 *   battery shows: p50 and p99;
 * - lost: reports the broker acknowledged minus reports stored (each report is a distinct vehicle
 *   and ts, so the unique index cannot fold two);
 * - CPU per report of the ingest processes, the broker and Postgres over a measured stretch of the
 *   window, against a floor measured in the same run after it: a bare subscriber of the same stream
 *   (bench/ingest-floor-subscriber.ts: receive, acknowledge, parse) plus a COPY of as many rows into
 *   a table of telemetry's shape (its client's CPU, and the COPY's CPU in Postgres);
 * - the split between the 2 ingest processes;
 * - the partner API's p99 under a fixed load (GET /v1/vehicles/id/{id}, 50 requests/s, autocannon in a
 *   process of its own, the probes paused) while the ingest runs, against the same load before the
 *   ingest starts.
 *
 * Goals: the peak rate sustained (stored ≥ 98 % of the offered rate and a backlog under 2 s), visible
 * p99 < 2 s, 0 lost, ingest CPU per report ≤ 2× the floor's, each ingest process within 40–60 % of the
 * load, the partner API's p99 with the ingest ≤ 1.5× without. The unlock's cost is BENCH=unlock's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { from as copyFrom } from 'pg-copy-streams';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { testConfig } from '../lib/core/config.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { ROOT } from '../lib/core/paths.js';
import { QOS, telemetryTopic } from '../lib/domain/vehicles/protocol.js';
import { startApiProcess, type ApiProcess } from '../test/support/api-process.js';
import { cloneDatabase, type TestDatabase } from '../test/support/db.js';
import { entry } from '../test/support/entries.js';
import { freePort, waitFor } from '../test/support/faults.js';
import { bulkVehicles, feedZone } from '../test/support/feed-fixtures.js';
import { startBroker, type TestBroker } from '../test/support/mqtt.js';
import { insertPartner } from '../test/support/partner-fixtures.js';
import { percentile } from './breadth-probes.js';
import { postgresPids, processCpuSeconds } from './cpu.js';
import { runIfMain } from './main.js';
import type { BenchResult } from './types.js';

const VEHICLES = Number(process.env.BENCH_INGEST_VEHICLES ?? 250_000);
const SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 300);
const ZONES = 10;
const RIDING_SHARE = 0.15;
const RIDING_EVERY_S = 10;
const PARKED_EVERY_S = 300;
const CONNECTIONS = 4;
const TICK_MS = 100;
/** vehicles kept out of the schedule for the latency probes */
const PROBES = 2000;
const API_RATE = 50;
const API_SECONDS = 30;

const round = (v: number, d = 2) => Math.round(v * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A percentile of the probes' latencies (bench/breadth-probes.ts: nearest rank); NaN for none. */
const quantile = (values: number[], q: number) => percentile(values, q * 100) ?? NaN;

interface Vehicle {
  id: string;
  lat: number;
  lng: number;
}

/** The scheduled publishers: every vehicle reports at its interval, spread evenly over it. */
class Fleet {
  sent = 0;
  acked = 0;
  failed = 0;
  private timer?: NodeJS.Timeout;
  private riding: Vehicle[];
  private parked: Vehicle[];
  private ridingAt = 0;
  private parkedAt = 0;
  private carry = { riding: 0, parked: 0 };
  private next = 0;
  private lastTs = new Map<string, number>();

  constructor(
    private readonly clients: MqttClient[],
    vehicles: Vehicle[],
  ) {
    const nRiding = Math.round(vehicles.length * RIDING_SHARE);
    this.riding = vehicles.slice(0, nRiding);
    this.parked = vehicles.slice(nRiding);
  }

  get offeredPerSecond(): number {
    return this.riding.length / RIDING_EVERY_S + this.parked.length / PARKED_EVERY_S;
  }

  start(): void {
    const tick = () => {
      const perTick = { riding: (this.riding.length * TICK_MS) / (RIDING_EVERY_S * 1000), parked: (this.parked.length * TICK_MS) / (PARKED_EVERY_S * 1000) };
      this.carry.riding += perTick.riding;
      this.carry.parked += perTick.parked;
      for (; this.carry.riding >= 1; this.carry.riding--) this.publish(this.riding[this.ridingAt++ % this.riding.length], true);
      for (; this.carry.parked >= 1; this.carry.parked--) this.publish(this.parked[this.parkedAt++ % this.parked.length], false);
    };
    this.timer = setInterval(tick, TICK_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One report of `v` (a distinct ts per vehicle: the unique (vehicle, ts) never folds two). */
  publish(v: Vehicle, moving: boolean, battery = 20 + Math.floor(Math.random() * 80)): number {
    let ts = Date.now();
    const last = this.lastTs.get(v.id) ?? 0;
    if (ts <= last) ts = last + 1;
    this.lastTs.set(v.id, ts);
    if (moving) {
      v.lat += (Math.random() - 0.5) * 0.0004;
      v.lng += (Math.random() - 0.5) * 0.0004;
    }
    const body = JSON.stringify({ ts, lat: v.lat, lng: v.lng, battery_percent: battery, ...(moving ? { speed_kph: 15, heading: 90 } : {}) });
    this.sent++;
    this.clients[this.next++ % this.clients.length].publish(telemetryTopic(v.id), body, { qos: QOS }, (err) => {
      if (err) this.failed++;
      else this.acked++;
    });
    return ts;
  }
}

async function connectFleet(broker: TestBroker): Promise<MqttClient[]> {
  return Promise.all(
    Array.from({ length: CONNECTIONS }, (_, i) =>
      mqtt.connectAsync(broker.url, { protocolVersion: 5, ...broker.demoFleet, clientId: `bench-fleet-${i}`, reconnectPeriod: 0 }),
    ),
  );
}

function spawnIngest(database: TestDatabase, broker: TestBroker, id: string, metricsPort: number): ChildProcess {
  const proc = spawn(process.execPath, [entry('ingest')], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: database.url,
      MQTT_URL: broker.url,
      MQTT_USERNAME: broker.platform.username,
      MQTT_PASSWORD: broker.platform.password,
      INGEST_ID: id,
      INGEST_METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return proc;
}

/** ingest_reports_total of one ingest process, summed over channels and outcomes. */
async function reportsOf(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('ingest_reports_total{'))
    .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** CPU seconds of the Postgres cluster's processes now (the postmaster and every child). */
async function clusterCpu(db: Db): Promise<Map<number, number>> {
  const pids = await postgresPids(db);
  return new Map(pids.map((p) => [p, processCpuSeconds(p) || 0]));
}
const cpuSince = (before: Map<number, number>, after: Map<number, number>) => {
  let s = 0;
  // a process that started in between counts whole: all its CPU is in the stretch
  for (const [pid, t] of after) s += t - (before.get(pid) ?? 0);
  return s;
};

/**
 * The partner API's latencies under a fixed rate of vehicle lookups, measured by autocannon in a
 * process of its own: this process's event loop also publishes the fleet's reports, and a client
 * that shares it would add its own waits to every latency it measures.
 */
async function apiLoad(
  api: ApiProcess,
  key: string,
  vehicleId: string,
  seconds = API_SECONDS,
): Promise<{ p50: number; p99: number; requests: number; errors: number; stealPct: number }> {
  const s0 = cpuTimes();
  const proc = spawn(
    join(ROOT, 'node_modules', '.bin', 'autocannon'),
    ['-j', '-c', '10', '-R', String(API_RATE), '-d', String(seconds), '-H', `X-Auth-Token=${key}`, `${api.base}/v1/vehicles/id/${vehicleId}`],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  proc.stdout.on('data', (d) => (out += String(d)));
  await new Promise((r) => proc.once('exit', r));
  const r = JSON.parse(out) as { latency: { p50: number; p99: number }; requests: { total: number }; errors: number; non2xx: number };
  const s1 = cpuTimes();
  const stealPct = ((s1.steal - s0.steal) / Math.max(1, s1.total - s0.total)) * 100;
  return { p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total, errors: r.errors + r.non2xx, stealPct };
}

/** The machine's CPU time in jiffies (/proc/stat), and the part the hypervisor gave to other guests (steal). */
function cpuTimes(): { total: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  return { total: fields.reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
}

export async function run(): Promise<BenchResult> {
  const database = await cloneDatabase();
  const log = createLogger('silent');
  const config = testConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
  const db = new Db(config.databaseUrl, log, { max: 4, statementTimeoutMs: 3_600_000 });
  const storeDir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  let broker: TestBroker | undefined;
  let api: ApiProcess | undefined;
  const ingests: ChildProcess[] = [];
  let clients: MqttClient[] = [];
  const notes: string[] = [];
  try {
    // the fleet: ZONES zones, priced, a partner that sees them
    const perZone = Math.ceil(VEHICLES / ZONES);
    const zones: string[] = [];
    for (let z = 0; z < ZONES; z++) {
      const zone = await feedZone(db, { id: `ingest-${z}` });
      await bulkVehicles(db, zone, perZone, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[z]);
      await db.query(
        `INSERT INTO pricing (zone_id, vehicle_type_id, start_price, price_per_minute) VALUES ($1, 'feed-scooter', 100, 25), ($1, 'feed-bike', 100, 25)`,
        [zone],
      );
      zones.push(zone);
    }
    await db.query('ANALYZE');
    const partner = await insertPartner(db);
    const all = await db.many<Vehicle>(`SELECT id, ST_Y(location) AS lat, ST_X(location) AS lng FROM vehicles ORDER BY md5(id::text)`);
    // the probes' vehicles (the API's load reads probes[1], which no probe reports: probeAt starts at 0 and skips it)
    const probes = all.slice(0, PROBES);
    const scheduled = all.slice(PROBES);

    broker = await startBroker();
    api = await startApiProcess(database, storeDir, { LOG_LEVEL: 'error' });
    clients = await connectFleet(broker);
    const fleet = new Fleet(clients, scheduled);

    // the partner API without the ingest (nothing published yet), after a warm-up of its own
    await apiLoad(api, partner.key, probes[1].id, 5);
    const without = await apiLoad(api, partner.key, probes[1].id);

    const ports = [await freePort(), await freePort()];
    ingests.push(spawnIngest(database, broker, 'bench-a', ports[0]), spawnIngest(database, broker, 'bench-b', ports[1]));
    // BENCH_INGEST_NICE=n: the ingest processes and the broker at a lower CPU priority than the API (a diagnosis: how much of the API's tail is the CPU they take)
    if (process.env.BENCH_INGEST_NICE) for (const pid of [...ingests.map((p) => p.pid!), broker.pid]) setPriority(pid, Number(process.env.BENCH_INGEST_NICE));
    await waitFor(
      'both ingest processes subscribed',
      async () =>
        (
          await Promise.all(
            ports.map((p) =>
              reportsOf(p).then(
                () => true,
                () => false,
              ),
            ),
          )
        ).every(Boolean),
      60_000,
      200,
    );
    // both are in the group before the load starts: a report sent before the second subscribed would all go to the first
    await sleep(1000);

    const started = Date.now();
    const countStored = async () =>
      (await db.one<{ n: number }>(`SELECT count(*)::int AS n FROM telemetry WHERE recorded_at >= $1`, [new Date(started - 1000)])).n;
    fleet.start();

    // the probes: a report of a vehicle that reports nothing else, until the API shows its battery
    const visible: number[] = [];
    let probing = true;
    let probesPaused = false;
    let probeAt = 0;
    const probeLoop = (async () => {
      while (probing) {
        if (probesPaused) {
          await sleep(100);
          continue;
        }
        if (probeAt % probes.length === 1) probeAt++;
        const v = probes[probeAt++ % probes.length];
        const battery = 1 + (probeAt % 99);
        const sentAt = performance.now();
        fleet.publish(v, false, battery);
        for (;;) {
          const res = await fetch(`${api.base}/v1/vehicles/id/${v.id}`, { headers: { 'X-Auth-Token': partner.key } });
          const body = (await res.json()) as { data?: Array<{ attributes: { batteryLevel: number } }> };
          if (body.data?.[0]?.attributes.batteryLevel === battery) break;
          if (performance.now() - sentAt > 30_000) break;
          await sleep(20);
        }
        visible.push(performance.now() - sentAt);
        await sleep(250);
      }
    })();

    // warm up, then a measured stretch for CPU, then the API's load, then the rest of the window
    const warmup = Math.min(20, SECONDS * 0.1);
    const measured = Math.max(30, SECONDS - warmup - API_SECONDS - 20);
    await sleep(warmup * 1000);
    const c0 = {
      self: process.cpuUsage(),
      ingest: ingests.map((p) => processCpuSeconds(p.pid!)),
      broker: processCpuSeconds(broker.pid),
      pg: await clusterCpu(db),
      stored: await countStored(),
    };
    await sleep(measured * 1000);
    const c1 = {
      self: process.cpuUsage(c0.self),
      ingest: ingests.map((p) => processCpuSeconds(p.pid!)),
      broker: processCpuSeconds(broker.pid),
      pg: await clusterCpu(db),
      stored: await countStored(),
    };
    // the probes pause meanwhile: the API's load is the same as without the ingest
    probesPaused = true;
    const withIngest = await apiLoad(api, partner.key, probes[1].id);
    probesPaused = false;
    const rest = SECONDS - warmup - measured - API_SECONDS;
    if (rest > 0) await sleep(rest * 1000);
    fleet.stop();
    const windowS = (Date.now() - started) / 1000;
    const storedInWindow = await countStored();
    probing = false;
    await probeLoop;
    // every acknowledgement back from the broker, then the ingest's backlog
    await waitFor('the broker acknowledged every report', () => fleet.acked + fleet.failed >= fleet.sent, 60_000, 50);
    const stopAt = Date.now();
    let stored = await countStored();
    for (let last = -1; stored !== last || stored < fleet.acked;) {
      if (Date.now() - stopAt > 120_000) break;
      last = stored;
      await sleep(stored < fleet.acked ? 100 : 1000);
      stored = await countStored();
    }
    const backlogS = (Date.now() - stopAt) / 1000;
    const finalReports = await Promise.all(ports.map(reportsOf));
    // before the floor's reports add to the fleet's counts
    const lost = fleet.acked - stored;
    const sentInRun = fleet.sent;
    const ackedInRun = fleet.acked;

    const window = c1.stored - c0.stored;
    const perReport = (s: number) => (window > 0 ? (s / window) * 1e6 : NaN);
    const ingestCpu = c1.ingest.reduce((s, v, i) => s + v - c0.ingest[i], 0);
    const brokerCpu = c1.broker - c0.broker;
    const pgCpu = cpuSince(c0.pg, c1.pg);

    // the floor: a bare subscriber of the same stream, and a COPY of as many rows
    for (const p of ingests) p.kill('SIGTERM');
    await Promise.all(ingests.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))));
    ingests.length = 0;
    const floorSeconds = Math.min(60, Math.max(20, measured / 3));
    const sub = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench', 'ingest-floor-subscriber.ts'), broker.url, broker.platform.username, broker.platform.password],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let subOut = '';
    sub.stdout.on('data', (d) => (subOut += String(d)));
    await waitFor('the floor subscriber', () => subOut.includes('ready'), 30_000, 50);
    const s0 = processCpuSeconds(sub.pid!);
    fleet.start();
    await sleep(floorSeconds * 1000);
    fleet.stop();
    await sleep(1000);
    const subCpu = processCpuSeconds(sub.pid!) - s0;
    sub.kill('SIGTERM');
    await new Promise((r) => sub.once('exit', r));
    const subReceived = (JSON.parse(subOut.trim().split('\n').pop()!) as { received: number }).received;

    await db.query(
      `CREATE TABLE floor_telemetry (device_id uuid NOT NULL, zone_id text NOT NULL, ts timestamptz NOT NULL, location geometry(Point, 4326) NOT NULL, battery_percent int, recorded_at timestamptz NOT NULL DEFAULT now())`,
    );
    const rows = Math.max(1, window);
    const client = await db.pool.connect();
    let copyClientCpu = 0;
    let copyPgCpu = 0;
    try {
      const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0];
      const p0 = processCpuSeconds(pid);
      const u0 = process.cpuUsage();
      let k = 0;
      const source = Readable.from(
        (function* () {
          for (; k < rows; k++) {
            const v = scheduled[k % scheduled.length];
            yield `${v.id}\tingest-0\t${new Date(Date.now() + k).toISOString()}\tSRID=4326;POINT(${v.lng} ${v.lat})\t${k % 100}\n`;
          }
        })(),
      );
      await pipeline(source, client.query(copyFrom('COPY floor_telemetry (device_id, zone_id, ts, location, battery_percent) FROM STDIN')));
      const u1 = process.cpuUsage(u0);
      copyClientCpu = (u1.user + u1.system) / 1e6;
      copyPgCpu = processCpuSeconds(pid) - p0;
    } finally {
      client.release();
    }
    // the control: burners taking the CPU the ingest's side took in the measured stretch (the ingest
    // processes, the broker, Postgres and this process's publishing), and the API's load beside them
    const sideCores = (ingestCpu + brokerCpu + pgCpu + (c1.self.user + c1.self.system) / 1e6) / measured;
    const burners = Array.from({ length: Math.ceil(sideCores) }, () =>
      spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'cpu-burner.ts'), String(sideCores / Math.ceil(sideCores))], {
        cwd: ROOT,
        stdio: 'ignore',
      }),
    );
    let withBurner: Awaited<ReturnType<typeof apiLoad>>;
    try {
      await sleep(2000);
      withBurner = await apiLoad(api, partner.key, probes[1].id);
    } finally {
      for (const b of burners) b.kill('SIGKILL');
    }

    const floorSubPerReport = subReceived > 0 ? (subCpu / subReceived) * 1e6 : NaN;
    const floorCopyClient = (copyClientCpu / rows) * 1e6;
    const floorCopyPg = (copyPgCpu / rows) * 1e6;
    const floor = floorSubPerReport + floorCopyClient;

    const offered = fleet.offeredPerSecond;
    const sustained = storedInWindow / windowS;
    // each process's share of every report it handled over the run
    const total = finalReports.reduce((s, v) => s + v, 0);
    const split = finalReports.map((v) => (total > 0 ? v / total : NaN));

    const metrics: BenchResult['metrics'] = {
      vehicles: VEHICLES,
      window_s: round(windowS, 1),
      offered_reports_per_s: round(offered, 0),
      sustained_reports_per_s: round(sustained, 0),
      backlog_after_window_s: round(backlogS, 1),
      reports_sent: sentInRun,
      reports_acked_by_broker: ackedInRun,
      reports_stored: stored,
      reports_lost: lost,
      visible_p50_ms: round(quantile(visible, 0.5), 0),
      visible_p99_ms: round(quantile(visible, 0.99), 0),
      visible_probes: visible.length,
      ingest_cpu_us_per_report: round(perReport(ingestCpu), 1),
      broker_cpu_us_per_report: round(perReport(brokerCpu), 1),
      postgres_cpu_us_per_report: round(perReport(pgCpu), 1),
      floor_subscriber_cpu_us_per_report: round(floorSubPerReport, 1),
      floor_copy_client_cpu_us_per_row: round(floorCopyClient, 1),
      floor_copy_postgres_cpu_us_per_row: round(floorCopyPg, 1),
      ingest_cpu_vs_floor: round(perReport(ingestCpu) / floor, 2),
      postgres_cpu_vs_copy: round(perReport(pgCpu) / floorCopyPg, 2),
      ingest_a_share: round(split[0], 3),
      ingest_b_share: round(split[1], 3),
      api_p99_without_ingest_ms: without.p99,
      api_p99_with_ingest_ms: withIngest.p99,
      api_p99_ratio: round(withIngest.p99 / Math.max(1, without.p99), 2),
      api_p50_without_ingest_ms: without.p50,
      api_p50_with_ingest_ms: withIngest.p50,
      api_p99_with_cpu_burner_ms: withBurner.p99,
      api_p99_burner_ratio: round(withBurner.p99 / Math.max(1, without.p99), 2),
      side_cores: round(sideCores, 2),
      steal_pct_without_ingest: round(without.stealPct, 0),
      steal_pct_with_ingest: round(withIngest.stealPct, 0),
      steal_pct_with_cpu_burner: round(withBurner.stealPct, 0),
      api_errors: without.errors + withIngest.errors + withBurner.errors,
    };
    notes.push(
      `${VEHICLES.toLocaleString('en-US')} vehicles in ${ZONES} zones, ${RIDING_SHARE * 100} % riding (every ${RIDING_EVERY_S} s), the rest every ${PARKED_EVERY_S} s, over ${CONNECTIONS} connections; ${windowS.toFixed(0)} s`,
      `CPU per report over a measured ${measured.toFixed(0)} s stretch (${window.toLocaleString('en-US')} reports stored in it); Postgres: every process of the cluster`,
      `floor: a bare subscriber (${subReceived.toLocaleString('en-US')} reports in ${floorSeconds.toFixed(0)} s) + a COPY of ${rows.toLocaleString('en-US')} rows of telemetry's shape`,
      `partner API: GET /v1/vehicles/id at ${API_RATE}/s for ${API_SECONDS} s, before the ingest starts and while it runs (${without.requests} and ${withIngest.requests} requests)`,
      `control: the same load beside ${burners.length} CPU burner(s) taking ${round(sideCores, 2)} cores, what the ingest's side (ingest processes, broker, Postgres, the load generator) took while it ran`,
    );
    return {
      name: 'ingest',
      metrics,
      goals: [
        {
          metric: 'sustained_reports_per_s',
          goal: `≥ 98 % of the offered ${round(offered, 0)}/s, backlog < 2 s`,
          met: sustained >= 0.98 * offered && backlogS < 2,
        },
        { metric: 'visible_p99_ms', goal: '< 2000', met: visible.length > 0 ? quantile(visible, 0.99) < 2000 : null },
        { metric: 'reports_lost', goal: '0', met: lost === 0 },
        { metric: 'ingest_cpu_vs_floor', goal: '≤ 2', met: Number.isFinite(perReport(ingestCpu) / floor) ? perReport(ingestCpu) / floor <= 2 : null },
        { metric: 'ingest_a_share', goal: 'each process 40–60 %', met: split.every((x) => x >= 0.4 && x <= 0.6) },
        { metric: 'api_p99_ratio', goal: '≤ 1.5', met: withIngest.p99 / Math.max(1, without.p99) <= 1.5 },
      ],
      notes,
    };
  } finally {
    for (const p of ingests) p.kill('SIGKILL');
    await Promise.all(clients.map((c) => c.endAsync(true)));
    api?.stop();
    await broker?.close();
    await db.close();
    await database.drop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, run);
