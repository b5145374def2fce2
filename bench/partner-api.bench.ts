/**
 * Partner rental API benchmark: a mixed load of vehicle list, pricing, rental start and rental end
 * with the keys of 20 partners, through the whole stack (auth cache, rate limiter upsert, PostGIS,
 * the engine's transactions, receipts into the fs store).
 *
 * The API runs in a child process on a loopback port (so the load generator does not share its event
 * loop) against a fresh database cloned from the migrated template, seeded like a small city: one
 * zone, 60 available vehicles in the list, 20 partners with a key and a user per connection.
 * Each autocannon connection loops: list, pricing, start, list, pricing, end (1/3 writes).
 * Goals: ≥ 1500 req/s and p99 < 50 ms on the 2-core reference machine.
 *
 * `npx tsx bench/partner-api.bench.ts` runs it directly; `run()` is for bench/run.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { buildApp } from '../api/app.js';
import { systemClock } from '../lib/clock.js';
import { testConfig } from '../lib/config.js';
import type { AppContext } from '../lib/context.js';
import { Db } from '../lib/db.js';
import { SimulatedGateway } from '../lib/gateway.js';
import { createLogger } from '../lib/log.js';
import { openStore } from '../lib/store/index.js';
import { cloneDatabase } from '../test/support/db.js';
import { insertPartner, insertUser, insertVehicle, insertZone } from '../test/support/partner-fixtures.js';


export interface BenchResult {
  name: string;
  metrics: Record<string, number | null>;
  goals: Array<{ metric: string; goal: string; met: boolean | null }>;
  notes: string[];
}

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 40);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const PARTNERS = 20;
const LISTED_VEHICLES = 60;

function benchConfig(databaseUrl: string, storeDir: string) {
  return testConfig({
    NODE_ENV: 'production',
    SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef',
    DATABASE_URL: databaseUrl,
    STORE_URL: `file://${storeDir}`,
    LOG_LEVEL: 'silent',
  });
}

/** Child-process mode: serve the API on a loopback port, print it, run until killed. */
async function serve(databaseUrl: string, storeDir: string): Promise<void> {
  const config = benchConfig(databaseUrl, storeDir);
  const log = createLogger('silent');
  const ctx: AppContext = { config, db: new Db(config.databaseUrl, log, { max: 20 }), store: await openStore(config), log, clock: systemClock, gateway: new SimulatedGateway() };
  const server = buildApp(ctx).listen(0, '127.0.0.1');
  await once(server, 'listening');
  // a normal exit on SIGTERM, so that --cpu-prof (BENCH_CPU_PROF=dir) writes its profile
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
}

async function startServer(databaseUrl: string, storeDir: string): Promise<{ port: number; proc: ChildProcess }> {
  const self = fileURLToPath(import.meta.url);
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const proc = spawn(process.execPath, [...prof, '--import', 'tsx', self, '--serve', databaseUrl, storeDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  for await (const chunk of proc.stdout!) {
    out += String(chunk);
    const m = /listening (\d+)/.exec(out);
    if (m) return { port: Number(m[1]), proc };
  }
  throw new Error('bench server did not start');
}

interface Slot {
  key: string;
  userId: string;
  vehicleId: string;
}

export async function run(): Promise<BenchResult> {
  const notes: string[] = [];
  const metrics: BenchResult['metrics'] = {};
  const database = await cloneDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'partner-bench-'));
  const log = createLogger('silent');
  const db = new Db(database.url, log, { max: 5 });
  let proc: ChildProcess | undefined;
  try {
    const zone = await insertZone(db, { unlockDistanceM: 500 });
    const partners = [];
    for (let i = 0; i < PARTNERS; i++) partners.push(await insertPartner(db, { rateLimitPerMinute: 1_000_000 }));
    // the listed fleet plus one vehicle per connection that the start/end loop rents over and over
    const listed: string[] = [];
    for (let i = 0; i < LISTED_VEHICLES; i++) listed.push((await insertVehicle(db, zone, { eastM: (i % 10) * 40, northM: Math.floor(i / 10) * 40 })).id);
    const slots: Slot[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const partner = partners[i % PARTNERS]!;
      const v = await insertVehicle(db, zone, { eastM: -200 - (i % 10) * 30, northM: Math.floor(i / 10) * 30 });
      slots.push({ key: partner.key, userId: await insertUser(db, partner.id), vehicleId: v.id });
    }
    await db.query('ANALYZE');

    const server = await startServer(database.url, join(dir, 'store'));
    proc = server.proc;
    // autocannon clears a connection's context at every pass through the request list, so a rental
    // slot (user + vehicle) is taken at start and given back when its end answers
    const free = [...slots];
    const refusals = new Map<string, number>();
    const refuse = (what: string) => refusals.set(what, (refusals.get(what) ?? 0) + 1);
    let rr = 0;
    type Ctx = { slot?: Slot; rentalId?: string; key?: string };
    const keyOf = (c: Ctx) => (c.key ??= slots[rr++ % slots.length]!.key);
    const authed = (c: Ctx, req: autocannon.Request) => ({ ...req, headers: { ...req.headers, 'X-Auth-Token': c.slot?.key ?? keyOf(c), 'Content-Type': 'application/json' } });
    const list: autocannon.Request = { method: 'GET', path: `/v1/vehicles?zoneID=${zone.id}`, setupRequest: (req, c) => authed(c as Ctx, req) };
    const pricing: autocannon.Request = {
      method: 'GET',
      setupRequest: (req, c) => authed(c as Ctx, { ...req, path: `/v1/pricing/vehicle/${listed[rr++ % listed.length]}` }),
    };
    const start: autocannon.Request = {
      method: 'POST',
      path: '/v1/rental/start',
      setupRequest: (req, c) => {
        const s = ((c as Ctx).slot = free.pop()!);
        return authed(c as Ctx, { ...req, body: JSON.stringify({ userId: s.userId, vehicleId: s.vehicleId }) });
      },
      onResponse: (status, body, c) => {
        (c as Ctx).rentalId = status === 200 ? JSON.parse(body).data[0].id : undefined;
        if (status !== 200) refuse(`start ${status} ${body.slice(0, 120)}`);
      },
    };
    const end: autocannon.Request = {
      method: 'POST',
      setupRequest: (req, c) => authed(c as Ctx, { ...req, path: `/v1/rental/${(c as Ctx).rentalId ?? 'none'}/end`, body: '{}' }),
      onResponse: (status, body, c) => {
        if ((c as Ctx).slot) free.push((c as Ctx).slot!);
        if (status !== 200) refuse(`end ${status} ${body.slice(0, 120)}`);
      },
    };
    // BENCH_MIX=read|write isolates one side when looking for a bottleneck
    const mix = process.env.BENCH_MIX;
    const result = await autocannon({
      url: `http://127.0.0.1:${server.port}`,
      connections: CONNECTIONS,
      duration: DURATION_S,
      requests: mix === 'read' ? [list, pricing] : mix === 'write' ? [start, end] : [list, pricing, start, list, pricing, end],
    });
    metrics.requests_per_s = Math.round(result.requests.average);
    metrics.latency_p50_ms = result.latency.p50;
    metrics.latency_p99_ms = result.latency.p99;
    metrics.requests_total = result.requests.total;
    metrics.non_2xx = result.non2xx;
    metrics.errors = result.errors;
    const ended = await db.one(`SELECT count(*)::int AS n FROM rentals WHERE state = 'ENDED'`);
    metrics.rentals_ended = ended.n;
    if (result.non2xx) notes.push(`${result.non2xx} non-2xx answers (a start refused leaves its end answering 400)`);
    for (const [what, n] of refusals) notes.push(`${n} × ${what}`);
    notes.push(`${CONNECTIONS} connections, ${DURATION_S} s, ${PARTNERS} partner keys, loop: list, pricing, start, list, pricing, end`);
  } finally {
    proc?.kill('SIGTERM');
    if (proc) await once(proc, 'exit').catch(() => undefined);
    await db.close();
    await database.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    name: 'partner-api',
    metrics,
    goals: [
      { metric: 'requests_per_s', goal: '>= 1500', met: (metrics.requests_per_s ?? 0) >= 1500 },
      { metric: 'latency_p99_ms', goal: '< 50', met: (metrics.latency_p99_ms ?? Infinity) < 50 },
    ],
    notes,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--serve') {
    serve(process.argv[3]!, process.argv[4]!).catch((err) => {
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
