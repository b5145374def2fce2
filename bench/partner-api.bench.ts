/**
 * Partner rental API benchmark: a mixed load of vehicle list, pricing, rental start and rental end
 * with the keys of 20 partners, through the whole stack (auth cache, rate limiter upsert, PostGIS,
 * the engine's transactions, receipts into the fs store).
 *
 * The API runs in a child process on a loopback port (so the load generator does not share its event
 * loop) against a fresh database cloned from the migrated template, seeded like a small city: one
 * zone, 60 available vehicles in the list, 20 partners with a key and a user per connection.
 * Each autocannon connection loops: list, pricing, start, list, pricing, end (1/3 writes).
 *
 * The goals are relative to this machine, measured in the same run (issue 25): first the floor
 * (bench/partner-floor.ts) is driven to saturation, which gives the machine's capacity C for this
 * mix; then the API is offered, open loop:
 * - (a) 0.7 × C: every request answered, p99 < 50 ms, nothing refused;
 * - (b) 2 × C: every request answered or refused within the admission deadline (2 s), refusals
 *   (503 + Retry-After) p99 < 50 ms, answered p99 < 1 s.
 * Requests are scheduled evenly at the offered rate (openLoop below; autocannon's overallRate sends
 * each second's quota in a burst at the top of the second and "corrects" latencies for a 1 ms
 * interval, which measures its own bursts); latency counts from the scheduled instant, so a request
 * that waits for a free session is counted with its wait (no coordinated omission). The API's own
 * saturated throughput (closed loop, BENCH_CONNECTIONS connections) is reported as a ratio to the
 * floor's.
 * Partners have the production limit (4000/min), so the rate limiter runs its real path.
 * The floor is offered (a) too (a_floor_*): what of the tail is the machine's rather than the API's.
 * The load generator runs on CPU 0 and the server and Postgres on the rest (BENCH_PIN=0: shared); its
 * own CPU per request is printed (*_generator_cpu_ms_per_request). BENCH_A_SHARE sets (a)'s share of
 * C (default 0.7); BENCH_TRACE=prefix writes each open-loop request's due time, latency and step (or `refused`) to
 * prefix-<port>-<rate>.txt, to see whether a tail is spread or comes in waves.
 *
 * BENCH_API_WORKERS=n runs the API as n node:cluster workers sharing one port, as bin/api.ts runs
 * it with API_WORKERS in production (Node answers on one core per process; the design scales the API
 * by processes, DESIGN.md). Default 1: Postgres shares the same two cores and needs about as much
 * CPU per request as the API, so a second API process did not measurably help on this machine.
 * Cost per request (API and Postgres CPU ms) is reported too: it holds better than req/s on a
 * machine other work shares (load_average_1m says how shared it was).
 *
 * `npx tsx bench/partner-api.bench.ts` runs it directly; `run()` is for bench/run.ts.
 */
import { pgCpuSeconds, pinCpus, postgresPids } from './cpu.js';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import cluster from 'node:cluster';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { buildApp } from '../api/app.js';
import { systemClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import { cloneDatabase } from '../test/support/db.js';
import { insertPartner, insertUser, insertVehicle, insertZone } from '../test/support/partner-fixtures.js';

export interface BenchResult {
  name: string;
  metrics: Record<string, number | null>;
  goals: Array<{ metric: string; goal: string; met: boolean | null }>;
  notes: string[];
}

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const LIST_DURATION_S = Number(process.env.BENCH_LIST_DURATION_S ?? 5);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 3);
const WORKERS = Number(process.env.BENCH_API_WORKERS ?? 1);
const PARTNERS = 20;
/** high enough that the offered loads (up to 2 × capacity) are never bound by it: the limiter still runs its real path */
const PARTNER_LIMIT_PER_MINUTE = 1_000_000;
/** sessions of the open loop at 0.7 × capacity, and at 2 × (answers may take up to the overload budget there) */
const OPEN_CONNECTIONS = Number(process.env.BENCH_OPEN_CONNECTIONS ?? 200);
const OVERLOAD_CONNECTIONS = Number(process.env.BENCH_OVERLOAD_CONNECTIONS ?? 1200);
/** the admission deadline of the API under test (API_QUEUE_DEADLINE_MS default) */
const DEADLINE_MS = 2000;
const LISTED_VEHICLES = 60;
/** the share of the floor's capacity offered in (a) (the issue's 0.7; other shares to see where the tail begins) */
const A_SHARE = Number(process.env.BENCH_A_SHARE ?? 0.7);
/**
 * The load generator on CPU 0, what it measures (the API or the floor, and Postgres) on the others,
 * so that neither's scheduling is in the other's figures (BENCH_PIN=0: all share every core). The
 * capacity C is measured under the same split, so the goals stay relative to what the server side
 * has.
 */
const SERVER_CPUS = cpus().length >= 2 && process.env.BENCH_PIN !== '0' ? `1-${cpus().length - 1}` : undefined;

function benchConfig(databaseUrl: string, storeDir: string) {
  return testConfig({
    NODE_ENV: 'production',
    // no vehicle broker here: the simulated vehicles accept every command
    MODE: 'staging',
    DATABASE_URL: databaseUrl,
    STORE_URL: `file://${storeDir}`,
    LOG_LEVEL: 'silent',
  });
}

/** Child-process mode: serve the API on a loopback port, print it, run until killed. */
async function serve(databaseUrl: string, storeDir: string): Promise<void> {
  // a normal exit on SIGTERM, so that --cpu-prof (BENCH_CPU_PROF=dir) writes its profile
  if (cluster.isPrimary && WORKERS > 1) {
    // workers inherit execArgv (tsx, --cpu-prof) and share the port the first listen(0) picked
    for (let i = 0; i < WORKERS; i++) cluster.fork();
    let listening = 0;
    cluster.on('listening', (_w, address) => {
      if (++listening === WORKERS) process.stdout.write(`listening ${address.port}\n`);
    });
    process.on('SIGTERM', () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      cluster.on('exit', () => {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      });
    });
    return;
  }
  const config = benchConfig(databaseUrl, storeDir);
  const log = createLogger('silent');
  const ctx: AppContext = {
    config,
    db: new Db(config.databaseUrl, log, { max: 20 }),
    store: await openStore(config),
    log,
    clock: systemClock,
    gateway: new SimulatedGateway(),
  };
  const server = buildApp(ctx).listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.on('SIGTERM', () => process.exit(0));
  if (cluster.isPrimary) process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
}

async function startServer(databaseUrl: string, storeDir: string): Promise<{ port: number; proc: ChildProcess }> {
  const self = fileURLToPath(import.meta.url);
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  return spawnListening([...prof, '--import', 'tsx', self, '--serve', databaseUrl, storeDir]);
}

/** The floor (bench/partner-floor.ts) in a child process of its own, like the API. */
function startFloor(databaseUrl: string): Promise<{ port: number; proc: ChildProcess }> {
  return spawnListening(['--import', 'tsx', join(dirname(fileURLToPath(import.meta.url)), 'partner-floor.ts'), databaseUrl]);
}

async function spawnListening(args: string[]): Promise<{ port: number; proc: ChildProcess }> {
  // taskset execs node in place: the pid is the server's
  const proc = SERVER_CPUS
    ? spawn('taskset', ['-c', SERVER_CPUS, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  for await (const chunk of proc.stdout) {
    out += String(chunk);
    const m = /listening (\d+)/.exec(out);
    if (m) return { port: Number(m[1]), proc };
  }
  throw new Error(`bench server ${args.join(' ')} did not start`);
}

async function stop(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null) return;
  proc.kill('SIGTERM');
  await once(proc, 'exit').catch(() => undefined);
}

interface Slot {
  key: string;
  userId: string;
  vehicleId: string;
}

type Ctx = { slot?: Slot; rentalId?: string; key?: string };

/**
 * The request loop of one phase over its own rental slots (user + vehicle). autocannon clears a
 * connection's context at every pass through the request list, so a slot is taken at start and given
 * back when its end answers; a phase that stops between the two leaves its slot rented, which is why
 * every phase has its own.
 */
function loop(zoneId: string, listed: string[], slots: Slot[], refuse: (what: string) => void, only?: 'list'): autocannon.Request[] {
  const free = [...slots];
  let rr = 0;
  const keyOf = (c: Ctx) => (c.key ??= slots[rr++ % slots.length].key);
  const authed = (c: Ctx, req: autocannon.Request) => ({
    ...req,
    headers: { ...req.headers, 'X-Auth-Token': c.slot?.key ?? keyOf(c), 'Content-Type': 'application/json' },
  });
  const list: autocannon.Request = { method: 'GET', path: `/v1/vehicles?zoneID=${zoneId}`, setupRequest: (req, c) => authed(c, req) };
  const pricing: autocannon.Request = {
    method: 'GET',
    setupRequest: (req, c) => authed(c, { ...req, path: `/v1/pricing/vehicle/${listed[rr++ % listed.length]}` }),
  };
  const start: autocannon.Request = {
    method: 'POST',
    path: '/v1/rental/start',
    setupRequest: (req, c) => {
      const s = ((c as Ctx).slot = free.pop()!);
      return authed(c, { ...req, body: JSON.stringify({ userId: s.userId, vehicleId: s.vehicleId }) });
    },
    onResponse: (status, body, c) => {
      (c as Ctx).rentalId = status === 200 ? JSON.parse(body).data[0].id : undefined;
      if (status !== 200) refuse(`start ${status} ${body.slice(0, 120)}`);
    },
  };
  const end: autocannon.Request = {
    method: 'POST',
    setupRequest: (req, c) => authed(c, { ...req, path: `/v1/rental/${(c as Ctx).rentalId ?? 'none'}/end`, body: '{}' }),
    onResponse: (status, body, c) => {
      if ((c as Ctx).slot) free.push((c as Ctx).slot!);
      if (status !== 200) refuse(`end ${status} ${body.slice(0, 120)}`);
    },
  };
  // BENCH_MIX=read|write isolates one side when looking for a bottleneck
  const mix = only ?? process.env.BENCH_MIX;
  return mix === 'list' ? [list] : mix === 'read' ? [list, pricing] : mix === 'write' ? [start, end] : [list, pricing, start, list, pricing, end];
}

/**
 * CPU seconds (user + system) used so far by the API: the child process and its cluster workers.
 * Contention-proof cost per request, unlike throughput on a machine others share (Linux /proc).
 */
function apiCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return own + children.reduce((sum, c) => sum + apiCpuSeconds(c), 0);
  } catch {
    return NaN;
  }
}

function withSocket(url: string, dir: string): string {
  const u = new URL(url);
  return `postgres://${u.username}@${encodeURIComponent(dir)}:${u.port}${u.pathname}`;
}

/** One session of the open loop: a partner's user renting its own vehicle over and over. */
interface Session {
  slot: Slot;
  step: number;
  rentalId?: string;
}

function send(agent: http.Agent, port: number, method: string, path: string, key: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: { 'X-Auth-Token': key, 'Content-Type': 'application/json', ...(body ? { 'Content-Length': Buffer.byteLength(body) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Open loop: the i-th request is due at t0 + i/rate whatever the answers do; a due request goes to an
 * idle session (its next step of list, pricing, start, list, pricing, end) or waits in a backlog.
 * Latency counts from the due instant.
 */
async function openLoop(port: number, zoneId: string, listed: string[], slots: Slot[], rate: number, durationS: number, refuse: (what: string) => void) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: slots.length });
  // sessions begin at list, pricing or start in turn: begun in step with each other, every session
  // would send its start in the same fraction of a second (200 starts in a row, then 200 lists, …),
  // waves of writes at the whole offered rate rather than the mix's third of it
  const idle: Session[] = slots.map((slot, i) => ({ slot, step: i % 3 }));
  const latencies: number[] = [];
  /** answered latencies of the writes (start, end) and of the reads (list, pricing), apart */
  const writeLatencies: number[] = [];
  const readLatencies: number[] = [];
  const shedLatencies: number[] = [];
  let non2xx = 0;
  let shed = 0;
  let errors = 0;
  let rr = 0;
  const total = Math.round(rate * durationS);
  const due: number[] = [];
  let scheduled = 0;
  let answered = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const trace: string[] | undefined = process.env.BENCH_TRACE ? [] : undefined;
  const step = async (s: Session, at: number) => {
    const key = s.slot.key;
    try {
      let res;
      switch (s.step) {
        case 0:
        case 3:
          res = await send(agent, port, 'GET', `/v1/vehicles?zoneID=${zoneId}`, key);
          break;
        case 1:
        case 4:
          res = await send(agent, port, 'GET', `/v1/pricing/vehicle/${listed[rr++ % listed.length]}`, key);
          break;
        case 2:
          res = await send(agent, port, 'POST', '/v1/rental/start', key, JSON.stringify({ userId: s.slot.userId, vehicleId: s.slot.vehicleId }));
          if (res.status !== 503) s.rentalId = res.status === 200 ? JSON.parse(res.body).data[0].id : undefined;
          if (res.status !== 200 && res.status !== 503) refuse(`start ${res.status} ${res.body.slice(0, 120)}`);
          break;
        default:
          res = await send(agent, port, 'POST', `/v1/rental/${s.rentalId ?? 'none'}/end`, key, '{}');
          if (res.status !== 200 && res.status !== 503) refuse(`end ${res.status} ${res.body.slice(0, 120)}`);
      }
      // a request shed by the API (503 + Retry-After) is counted apart; the session retries its step
      if (res.status === 503) {
        shed++;
        shedLatencies.push(performance.now() - at);
        trace?.push(`${Math.round(at - t0)} ${(performance.now() - at).toFixed(1)} refused`);
      } else {
        if (res.status >= 300) non2xx++;
        const took = performance.now() - at;
        latencies.push(took);
        trace?.push(`${Math.round(at - t0)} ${took.toFixed(1)} ${s.step}`);
        (s.step === 2 || s.step === 5 ? writeLatencies : readLatencies).push(took);
        s.step = (s.step + 1) % 6;
      }
    } catch {
      errors++;
      s.step = (s.step + 1) % 6;
    }
    answered++;
    idle.push(s);
    pump();
  };
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  let timer: NodeJS.Timeout | undefined;
  function pump() {
    const now = performance.now();
    while (scheduled < total && t0 + (scheduled * 1000) / rate <= now) due.push(t0 + (scheduled++ * 1000) / rate);
    while (due.length && idle.length) void step(idle.shift()!, due.shift()!);
    if (answered === total) finish();
    else if (scheduled < total && !timer) {
      timer = setTimeout(
        () => {
          timer = undefined;
          pump();
        },
        Math.max(0, t0 + (scheduled * 1000) / rate - performance.now()),
      );
    }
  }
  pump();
  await done;
  const elapsedS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  if (trace) writeFileSync(`${process.env.BENCH_TRACE}-${port}-${rate}.txt`, trace.join('\n'));
  for (const l of [latencies, shedLatencies, writeLatencies, readLatencies]) l.sort((a, b) => a - b);
  const pct = (l: number[], p: number) => (l.length ? Math.round(l[Math.min(l.length - 1, Math.floor((p / 100) * l.length))] * 10) / 10 : null);
  return {
    total,
    perSecond: Math.round((total - shed) / elapsedS),
    p50: pct(latencies, 50),
    p90: pct(latencies, 90),
    p99: pct(latencies, 99),
    readP99: pct(readLatencies, 99),
    writeP99: pct(writeLatencies, 99),
    max: Math.round(latencies[latencies.length - 1] ?? 0),
    non2xx,
    shed,
    shedP99: pct(shedLatencies, 99),
    shedMax: Math.round(shedLatencies[shedLatencies.length - 1] ?? 0),
    errors,
    /** the generator's own CPU per request sent (ms): it shares the machine with what it measures */
    generatorCpuMs: Math.round(((cpu.user + cpu.system) / 1000 / answered) * 100) / 100,
  };
}

export async function run(): Promise<BenchResult> {
  const notes: string[] = [];
  const metrics: BenchResult['metrics'] = {};
  const database = await cloneDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'partner-bench-'));
  const log = createLogger('silent');
  const db = new Db(database.url, log, { max: 5 });
  let proc: ChildProcess | undefined;
  let floorProc: ChildProcess | undefined;
  const refusals = new Map<string, number>();
  const refuse = (what: string) => refusals.set(what, (refusals.get(what) ?? 0) + 1);
  let pgPids: number[] = [];
  let pinned = false;
  try {
    const zone = await insertZone(db, { unlockDistanceM: 500 });
    // the vehicles the sessions rent stand in a zone of their own, so that the listed zone keeps its
    // 60 vehicles however many sessions a phase has
    const rentZone = await insertZone(db, { unlockDistanceM: 500 });
    const partners: Array<{ id: string; key: string }> = [];
    for (let i = 0; i < PARTNERS; i++) partners.push(await insertPartner(db, { rateLimitPerMinute: PARTNER_LIMIT_PER_MINUTE }));
    // the listed fleet plus, per phase, one vehicle per connection that the start/end loop rents over and over
    const listed: string[] = [];
    for (let i = 0; i < LISTED_VEHICLES; i++) listed.push((await insertVehicle(db, zone, { eastM: (i % 10) * 40, northM: Math.floor(i / 10) * 40 })).id);
    let placed = 0;
    const slotsFor = async (n: number): Promise<Slot[]> => {
      const slots: Slot[] = [];
      for (let i = 0; i < n; i++, placed++) {
        const partner = partners[i % PARTNERS];
        const v = await insertVehicle(db, rentZone, { eastM: -200 - (placed % 10) * 20, northM: -300 + Math.floor(placed / 10) * 15 });
        slots.push({ key: partner.key, userId: await insertUser(db, partner.id), vehicleId: v.id });
      }
      return slots;
    };
    const floorWarmSlots = await slotsFor(CONNECTIONS);
    const floorSlots = await slotsFor(CONNECTIONS);
    const warmSlots = await slotsFor(CONNECTIONS);
    const closedSlots = await slotsFor(CONNECTIONS);
    const floorOpenSlots = await slotsFor(OPEN_CONNECTIONS);
    const openSlots = await slotsFor(OPEN_CONNECTIONS);
    const overloadSlots = await slotsFor(OVERLOAD_CONNECTIONS);
    await db.query('ANALYZE');
    if (SERVER_CPUS) {
      pgPids = await postgresPids(db);
      pinned = pinCpus(process.pid, '0') && pgPids.every((pid) => pinCpus(pid, SERVER_CPUS));
      notes.push(
        pinned
          ? `CPUs: the load generator on CPU 0, the server and Postgres on CPUs ${SERVER_CPUS} (BENCH_PIN=0: shared)`
          : 'CPUs: pinning failed, all share every core',
      );
    }
    const datname = new URL(database.url).pathname.slice(1);

    /** A closed loop at saturation: throughput, latency and CPU per request of the server and of Postgres. */
    const saturate = async (port: number, pid: number, slots: Slot[], only?: 'list') => {
      const cpu0 = apiCpuSeconds(pid);
      const pg0 = await pgCpuSeconds(db, datname).catch(() => NaN);
      const gen0 = process.cpuUsage();
      const r = await autocannon({
        url: `http://127.0.0.1:${port}`,
        connections: CONNECTIONS,
        duration: only ? LIST_DURATION_S : DURATION_S,
        requests: loop(zone.id, listed, slots, refuse, only),
      });
      const per = (seconds: number) => Math.round((seconds * 1000 * 100) / r['2xx']) / 100;
      return {
        // answered requests only: a 503 of admission control is not work done
        rps: Math.round(r['2xx'] / r.duration),
        shed: r.statusCodeStats?.['503']?.count ?? 0,
        p50: r.latency.p50,
        p99: r.latency.p99,
        total: r.requests.total,
        non2xx: r.non2xx,
        errors: r.errors,
        cpu: per(apiCpuSeconds(pid) - cpu0),
        pg: per((await pgCpuSeconds(db, datname).catch(() => NaN)) - pg0),
        gen: per((process.cpuUsage(gen0).user + process.cpuUsage(gen0).system) / 1e6),
      };
    };
    const warm = (port: number, slots: Slot[]) =>
      WARMUP_S > 0
        ? autocannon({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: WARMUP_S, requests: loop(zone.id, listed, slots, () => undefined) })
        : undefined;

    // BENCH_PG_SOCKET=dir: the API reaches Postgres over its Unix socket instead of loopback TCP
    const apiDbUrl = process.env.BENCH_PG_SOCKET ? withSocket(database.url, process.env.BENCH_PG_SOCKET) : database.url;

    // first the floor, on the same database and cores, under the same load generator: its saturated
    // throughput is this machine's capacity C for the mix, which sets the loads offered to the API
    const floorServer = await startFloor(apiDbUrl);
    floorProc = floorServer.proc;
    await warm(floorServer.port, floorWarmSlots);
    const floor = await saturate(floorServer.port, floorProc.pid!, floorSlots);
    const floorList = await saturate(floorServer.port, floorProc.pid!, floorSlots, 'list');
    // the floor offered (a) too: what of the tail at 0.7 × C is the machine's (the generator, Postgres,
    // the disk's WAL flushes) rather than the API's
    const floorA = await openLoop(floorServer.port, zone.id, listed, floorOpenSlots, Math.round(A_SHARE * floor.rps), DURATION_S, refuse);
    await stop(floorProc);

    const server = await startServer(apiDbUrl, join(dir, 'store'));
    proc = server.proc;
    await warm(server.port, warmSlots);
    const closed = await saturate(server.port, proc.pid!, closedSlots);
    const apiList = await saturate(server.port, proc.pid!, closedSlots, 'list');
    metrics.requests_per_s = closed.rps;
    metrics.saturated_latency_p50_ms = closed.p50;
    metrics.saturated_latency_p99_ms = closed.p99;
    metrics.api_cpu_ms_per_request = closed.cpu;
    metrics.postgres_cpu_ms_per_request = closed.pg;
    metrics.list_requests_per_s = apiList.rps;
    metrics.saturated_shed_503 = closed.shed + apiList.shed;
    metrics.load_average_1m = Math.round(loadavg()[0] * 10) / 10;

    // (a) 70 % of the machine's capacity: everything answered, promptly
    const rateA = Math.round(A_SHARE * floor.rps);
    const a = await openLoop(server.port, zone.id, listed, openSlots, rateA, DURATION_S, refuse);
    metrics.a_offered_requests_per_s = rateA;
    metrics.a_answered_requests_per_s = a.perSecond;
    metrics.a_latency_p50_ms = a.p50;
    metrics.a_latency_p99_ms = a.p99;
    metrics.a_read_p99_ms = a.readP99;
    metrics.a_write_p99_ms = a.writeP99;
    metrics.a_generator_cpu_ms_per_request = a.generatorCpuMs;
    metrics.a_floor_p50_ms = floorA.p50;
    metrics.a_floor_p99_ms = floorA.p99;
    metrics.a_floor_read_p99_ms = floorA.readP99;
    metrics.a_floor_write_p99_ms = floorA.writeP99;
    metrics.a_latency_max_ms = a.max;
    metrics.a_refused_503 = a.shed;
    // (b) twice the capacity: what cannot be served in time is refused at once
    const rateB = Math.round(2 * floor.rps);
    const b = await openLoop(server.port, zone.id, listed, overloadSlots, rateB, DURATION_S, refuse);
    metrics.b_offered_requests_per_s = rateB;
    metrics.b_answered_requests_per_s = b.perSecond;
    metrics.b_answered_p50_ms = b.p50;
    metrics.b_answered_p99_ms = b.p99;
    metrics.b_refused_503 = b.shed;
    metrics.b_refused_share = Math.round((b.shed / b.total) * 100) / 100;
    metrics.b_refused_p99_ms = b.shedP99;
    metrics.b_slowest_ms = Math.max(b.max, b.shedMax);
    metrics.b_errors = b.errors;
    await stop(proc);

    metrics.floor_requests_per_s = floor.rps;
    metrics.floor_generator_cpu_ms_per_request = floor.gen;
    metrics.floor_list_requests_per_s = floorList.rps;
    metrics.floor_api_cpu_ms_per_request = floor.cpu;
    metrics.floor_postgres_cpu_ms_per_request = floor.pg;
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    metrics.mixed_throughput_ratio = ratio(closed.rps, floor.rps);
    metrics.list_throughput_ratio = ratio(apiList.rps, floorList.rps);
    metrics.api_cpu_ratio = ratio(closed.cpu, floor.cpu);
    metrics.postgres_cpu_ratio = ratio(closed.pg, floor.pg);
    metrics.cpu_ms_per_request = Math.round((closed.cpu + closed.pg) * 100) / 100;
    if (floor.non2xx || floorList.non2xx) notes.push(`floor: ${floor.non2xx + floorList.non2xx} non-2xx answers`);

    metrics.requests_total = closed.total + apiList.total + a.total + b.total;
    metrics.non_2xx = closed.non2xx - closed.shed + apiList.non2xx - apiList.shed + a.non2xx + b.non2xx;
    metrics.errors = closed.errors + apiList.errors + a.errors + b.errors;
    const ended = await db.one<{ n: number }>(`SELECT count(*)::int AS n FROM rentals WHERE state = 'ENDED'`);
    metrics.rentals_ended = ended.n;
    if (metrics.non_2xx) notes.push(`${metrics.non_2xx} non-2xx answers (a start refused leaves its end answering 400)`);
    for (const [what, n] of refusals) notes.push(`${n} × ${what}`);
    notes.push(
      `API: ${WORKERS > 1 ? `${WORKERS} node:cluster worker processes on one port (bin/api.ts API_WORKERS=${WORKERS})` : 'one process (BENCH_API_WORKERS=n for n cluster workers)'}, pool 20 each, Postgres on the same ${cpus().length} cores`,
      `saturated: closed loop, ${CONNECTIONS} connections, ${DURATION_S} s → requests_per_s, saturated_latency_p50/p99_ms`,
      `offered: open loop, requests due evenly at 0.7 × and 2 × the floor's saturated req/s (same run) over ${OPEN_CONNECTIONS} / ${OVERLOAD_CONNECTIONS} sessions, ${DURATION_S} s each, latency from the due instant; a refused request (503) is retried by its session at its next due instant`,
      `warm-up ${WARMUP_S} s closed loop first (not counted); loop per connection: list, pricing, start, list, pricing, end (1/3 writes); ${PARTNERS} partners with a limit of ${PARTNER_LIMIT_PER_MINUTE}/min each (the limiter runs its real path; the offered loads are not bound by it)`,
    );
  } finally {
    // the cluster is shared with everything else on the machine: give it every core back
    if (pinned) for (const pid of [process.pid, ...pgPids]) pinCpus(pid, `0-${cpus().length - 1}`);
    await stop(proc);
    await stop(floorProc);
    await db.close();
    await database.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    name: 'partner-api',
    metrics,
    goals: [
      { metric: 'a_latency_p99_ms', goal: "< 50 at 0.7 × the floor's capacity", met: (metrics.a_latency_p99_ms ?? Infinity) < 50 },
      { metric: 'a_refused_503', goal: "= 0 at 0.7 × the floor's capacity", met: metrics.a_refused_503 === 0 },
      {
        metric: 'b_slowest_ms',
        goal: `<= ${DEADLINE_MS} at 2 × (every request answered or refused within the deadline)`,
        met: (metrics.b_slowest_ms ?? Infinity) <= DEADLINE_MS,
      },
      { metric: 'b_refused_p99_ms', goal: '< 50 at 2 × (a refusal is fast)', met: (metrics.b_refused_p99_ms ?? 0) < 50 },
      { metric: 'b_answered_p99_ms', goal: '< 1000 at 2 ×', met: (metrics.b_answered_p99_ms ?? Infinity) < 1000 },
      { metric: 'mixed_throughput_ratio', goal: '>= 0.5 (saturated mixed req/s, API / floor, same run)', met: (metrics.mixed_throughput_ratio ?? 0) >= 0.5 },
      {
        metric: 'list_throughput_ratio',
        goal: '>= 0.7 (saturated vehicle list req/s, API / floor, same run)',
        met: (metrics.list_throughput_ratio ?? 0) >= 0.7,
      },
    ],
    notes,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--serve') {
    serve(process.argv[3], process.argv[4]).catch((err) => {
      console.error(err);
      process.exit(1);
    });
  } else {
    run().then(
      (r) => {
        console.log(`\npartner API bench`);
        for (const [k, v] of Object.entries(r.metrics)) console.log(`  ${k.padEnd(20)} ${v ?? 'n/a'}`);
        for (const g of r.goals) console.log(`  goal ${g.metric} ${g.goal}: ${g.met === null ? 'not measured' : g.met ? 'met' : 'NOT met'}`);
        for (const n of r.notes) console.log(`  note: ${n}`);
        process.exit(0);
      },
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
  }
}
