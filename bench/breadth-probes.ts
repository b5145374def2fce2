/**
 * What the breadth bench (bench/breadth.bench.ts) reads while its processes run:
 *   - CPU and memory of a process from Linux /proc (utime + stime; VmHWM, the peak RSS, which
 *     /proc/<pid>/clear_refs can reset so that a phase gets a peak of its own);
 *   - Postgres CPU of the backends of one database by application (publisher, api, the bench),
 *     sampled every few seconds so that a backend that closes (pools close idle connections after
 *     30 s) keeps the CPU it had at its last sample;
 *   - how old the GBFS snapshots are against their ttl (gbfs_snapshots.last_updated);
 *   - the GBFS runs: per 15 s tick, from the tick job's creation to the completion of the last zone
 *     or scope job created before the next tick (pg-boss's own job rows);
 *   - from the /metrics of the API and of the publisher: each one's event-loop delay (prom-client's
 *     nodejs_eventloop_lag_*, whose histogram is reset at each scrape), and the objects the
 *     publisher wrote to its store by kind (store_objects_written_total, store_bytes_written_total,
 *     counted where every publication is written: publisher/publication/sink.ts);
 *   - timed HTTP probes of the zone-scoped reads.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Db } from '../lib/core/db.js';
import { STORE_KINDS, type StoreKind } from '../lib/core/metrics.js';
import { processCpuSeconds } from './cpu.js';

/** VmHWM (peak RSS) or VmRSS of a process in MiB; NaN when it has gone. */
export function memoryMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** Resets a process's VmHWM to its current RSS (Linux ≥ 4.0); false when not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export type PgApp = 'publisher' | 'api' | 'bench' | 'other';

const appOf = (name: string): PgApp => (name === 'publisher' ? 'publisher' : name === 'api' ? 'api' : name === BENCH_APP ? 'bench' : 'other');

/** application_name of the bench's own pool (driver, setup, samplers). */
export const BENCH_APP = 'breadth-bench';

/**
 * CPU seconds of the Postgres backends of one database, by the application that opened them: each
 * backend's utime + stime at its last sample (bench/cpu.ts processCpuSeconds). Cluster processes
 * (checkpointer, WAL writer, autovacuum launcher) and backends of other databases are not counted.
 */
export class PgCpu {
  private readonly live = new Map<number, { app: PgApp; cpu: number }>();
  private readonly gone: Record<PgApp, number> = { publisher: 0, api: 0, bench: 0, other: 0 };

  constructor(
    private readonly db: Db,
    private readonly datname: string,
  ) {}

  async sample(): Promise<void> {
    const rows = await this.db.many<{ pid: number; app: string }>(`SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = $1`, [
      this.datname,
    ]);
    const seen = new Set<number>();
    for (const r of rows) {
      const cpu = processCpuSeconds(r.pid);
      if (Number.isNaN(cpu)) continue;
      seen.add(r.pid);
      const prev = this.live.get(r.pid);
      // a pid used again by a new backend starts from less than the old one had
      if (prev && cpu < prev.cpu) this.gone[prev.app] += prev.cpu;
      this.live.set(r.pid, { app: appOf(r.app), cpu });
    }
    for (const [pid, b] of this.live) {
      if (seen.has(pid)) continue;
      this.gone[b.app] += b.cpu;
      this.live.delete(pid);
    }
  }

  totals(): Record<PgApp, number> {
    const t = { ...this.gone };
    for (const b of this.live.values()) t[b.app] += b.cpu;
    return t;
  }
}

export interface Freshness {
  samples: number;
  /** the oldest status file (ttl 30 s) seen, seconds since its last_updated */
  statusAgeMaxS: number;
  /** most files past their ttl in one sample */
  overTtlMax: number;
  /** samples in which some file was past its ttl */
  samplesOverTtl: number;
}

export const freshness = (): Freshness => ({ samples: 0, statusAgeMaxS: 0, overTtlMax: 0, samplesOverTtl: 0 });

/** One look at every GBFS snapshot's age against its ttl. */
export async function sampleFreshness(db: Db, f: Freshness): Promise<void> {
  const r = await db.one<{ over: number; status_age: number }>(
    `SELECT count(*) FILTER (WHERE now() - last_updated > make_interval(secs => ttl))::int AS over,
            coalesce(max(extract(epoch FROM now() - last_updated)) FILTER (WHERE ttl <= 60), 0)::float8 AS status_age
       FROM gbfs_snapshots`,
  );
  f.samples++;
  f.statusAgeMaxS = Math.max(f.statusAgeMaxS, r.status_age);
  f.overTtlMax = Math.max(f.overTtlMax, r.over);
  if (r.over > 0) f.samplesOverTtl++;
}

/**
 * The GBFS runs of the ticks sent in [from, to − interval]: seconds from each tick job's creation to
 * the completion of the last zone or scope job created before the next tick (the tick job's own
 * completion when it sent none). A job a zone job sends after the next tick began (a scope whose
 * zone changed) counts for that next tick.
 */
export async function gbfsRuns(db: Db, from: Date, to: Date, intervalS: number): Promise<number[]> {
  const rows = await db.many<{ name: string; created_on: Date; completed_on: Date | null }>(
    // pg-boss 12 keeps completed jobs in pgboss.job until their queue's deleteAfterSeconds (7 days)
    `SELECT name, created_on, completed_on FROM pgboss.job
      WHERE name IN ('feeds-gbfs', 'feeds-gbfs-zone', 'feeds-gbfs-scope') AND created_on >= $1 AND created_on < $2::timestamptz + interval '1 minute'`,
    [from, to],
  );
  const ticks = rows.filter((r) => r.name === 'feeds-gbfs').sort((a, b) => a.created_on.getTime() - b.created_on.getTime());
  const work = rows.filter((r) => r.name !== 'feeds-gbfs');
  const runs: number[] = [];
  ticks.forEach((t, i) => {
    const start = t.created_on.getTime();
    if (start > to.getTime() - intervalS * 1000) return;
    const next = ticks[i + 1]?.created_on.getTime() ?? start + intervalS * 1000;
    const mine = work.filter((j) => j.created_on.getTime() >= start && j.created_on.getTime() < next);
    const ends = (mine.length ? mine : [t]).map((j) => j.completed_on?.getTime() ?? Date.now());
    runs.push((Math.max(...ends) - start) / 1000);
  });
  return runs;
}

/** One scrape of a process's /metrics: each series, as printed (`name` or `name{labels}`), to its value. */
export type Scrape = Map<string, number>;

/**
 * Scrapes a process's /metrics (prom-client's text format). A scrape resets the process's
 * event-loop delay histogram: what `loopDelay` reads covers the time since the previous scrape.
 */
export async function scrapeMetrics(metricsUrl: string): Promise<Scrape> {
  const res = await fetch(metricsUrl);
  if (!res.ok) throw new Error(`${metricsUrl}: ${res.status}`);
  const series: Scrape = new Map();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    series.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return series;
}

/** A process's event-loop delay since its previous scrape, beyond the monitor's 10 ms interval (ms). */
export function loopDelay(scrape: Scrape): { p99Ms: number; maxMs: number } {
  // prom-client monitors with a 10 ms interval and reports whole intervals (an idle loop reads ~10 ms)
  const beyond = (name: string) => Math.max(0, (scrape.get(name) ?? NaN) * 1000 - 10);
  return { p99Ms: beyond('nodejs_eventloop_lag_p99_seconds'), maxMs: beyond('nodejs_eventloop_lag_max_seconds') };
}

export interface StoreWrites {
  files: Record<StoreKind, number>;
  bytes: Record<StoreKind, number>;
}

/** The objects a publisher wrote to its store since it started, and their bytes, by kind (a series not printed: 0). */
export function storeWrites(scrape: Scrape): StoreWrites {
  const of = (name: string) => Object.fromEntries(STORE_KINDS.map((k) => [k, scrape.get(`${name}{kind="${k}"}`) ?? 0])) as Record<StoreKind, number>;
  return { files: of('store_objects_written_total'), bytes: of('store_bytes_written_total') };
}

/** An OAuth access token of a feed client (client credentials, HTTP Basic), from the API's token endpoint. */
export async function feedToken(base: string, clientId: string, secret: string): Promise<string> {
  const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64');
  const res = await fetch(`${base}/v1/partner-apis/token`, {
    method: 'POST',
    headers: { Authorization: `Basic ${basic}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  if (!res.ok) throw new Error(`token for ${clientId}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

export interface ProbeTarget {
  name: string;
  /** the request of the i-th probe of this target */
  request: (i: number) => { path: string; headers: Record<string, string> };
}

/** How many probes of each target a cycle holds: the targets' requests repeat after that many (2,520: a multiple of every zone count up to 10, so each probed zone gets its share). */
const CYCLE = 2520;

/**
 * The probe loop, in a worker thread of its own: the bench's main thread drives the rides through
 * the rental engine and samples Postgres and the store, and a probe timed on that event loop would
 * count the bench's own work (at 100 zones, ten times the rides of 10) as the API's latency.
 */
const LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
const { base, cycle, everyMs } = workerData;
const latencies = {};
const failures = {};
for (const c of cycle) latencies[c.name] = [];
let stopping = false;
parentPort.on('message', () => { stopping = true; });
(async () => {
  let i = 0;
  let next = performance.now();
  while (!stopping) {
    const c = cycle[i++ % cycle.length];
    const t0 = performance.now();
    try {
      const res = await fetch(base + c.path, { headers: c.headers });
      await res.arrayBuffer();
      if (res.ok) latencies[c.name].push(performance.now() - t0);
      else failures[c.name] = res.status + ' ' + c.path;
    } catch (err) {
      failures[c.name] = err.message + ' ' + c.path;
    }
    next += everyMs;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  parentPort.postMessage({ latencies, failures });
})();
`;

/**
 * Probes the targets in turn, one request at a time, one every `everyMs`, from a worker thread;
 * latency is the request and its whole body. A non-2xx answer is counted apart (and not timed).
 * The targets' requests are taken when the prober starts (a phase's tokens).
 */
export class Prober {
  readonly latencies = new Map<string, number[]>();
  readonly failures = new Map<string, string>();
  private worker: Worker | undefined;

  constructor(
    private readonly base: string,
    private readonly targets: ProbeTarget[],
    private readonly everyMs: number,
  ) {}

  start(): void {
    const cycle: Array<{ name: string; path: string; headers: Record<string, string> }> = [];
    for (let n = 0; n < CYCLE; n++) for (const t of this.targets) cycle.push({ name: t.name, ...t.request(n) });
    this.worker = new Worker(LOOP, { eval: true, workerData: { base: this.base, cycle, everyMs: this.everyMs } });
  }

  async stop(): Promise<Map<string, number[]>> {
    const worker = this.worker;
    if (!worker) return this.latencies;
    this.worker = undefined;
    const done = new Promise<{ latencies: Record<string, number[]>; failures: Record<string, string> }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    worker.postMessage('stop');
    const r = await done;
    await worker.terminate();
    for (const [k, v] of Object.entries(r.latencies)) this.latencies.set(k, v);
    for (const [k, v] of Object.entries(r.failures)) this.failures.set(k, v);
    return this.latencies;
  }
}

/** The p-th percentile (nearest rank) of `xs`; null for none. */
export function percentile(xs: number[], p: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
