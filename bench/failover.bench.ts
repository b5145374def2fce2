/**
 * BENCH=failover: three failovers of the primary under the partner bench's load at 0.7 × C, on the HA
 * cluster of scripts/ha.sh (etcd, two Patroni nodes with synchronous replication, HAProxy; its own
 * directory .data/ha-bench and ports from BENCH_HA_BASE_PORT, 24480).
 *
 * The real API process (dist/api.mjs) connects through HAProxy's read-write port, its replica pool
 * through the read-only one. C is the API's own saturated throughput for the partner bench's mix
 * (list, pricing, start, list, pricing, end; closed loop, 20 connections) on this cluster, measured
 * first in the same run; then an open loop offers 0.7 × C (each request due at its instant whatever
 * the answers do, latency from the due instant, as BENCH=partner-api's) while the primary's
 * postmaster is killed (SIGKILL) three times, each once the old primary has rejoined as the
 * synchronous standby and a window of calm has passed. A session whose write is refused (503) sends it
 * again with the same Idempotency-Key at its next due instant, as a partner following Retry-After's
 * advice early would.
 *
 * Printed: the time from each kill to the first acknowledged write (median, worst), the requests
 * refused, the acknowledged writes missing from the new primary afterwards (goal: 0), and the API's
 * p99 in the window after each failover (from its first success) against the window before the kill.
 *
 *   BENCH=failover make bench      (BENCH_FAILOVER_WINDOW_S, default 60: the windows before and after)
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../lib/core/log.js';
import { Db } from '../lib/core/db.js';
import { migrate } from '../lib/core/migrate.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { startApiProcess } from '../test/support/api-process.js';
import { startHaCluster, type HaCluster } from '../test/support/ha.js';
import { insertPartner, insertUser, insertVehicle, insertZone } from '../test/support/partner-fixtures.js';
import { percentile } from './breadth-probes.js';
import type { BenchResult } from './types.js';

const FAILOVERS = 3;
const WINDOW_S = Number(process.env.BENCH_FAILOVER_WINDOW_S ?? 60);
const SATURATE_S = 10;
const CONNECTIONS = 20;
const SESSIONS = 200;
const PARTNERS = 20;
const LISTED = 60;

interface Slot {
  key: string;
  userId: string;
  vehicleId: string;
}

interface Sample {
  /** due instant and answer instant (performance.now()) */
  due: number;
  at: number;
  status: number;
  write: boolean;
}

function send(
  agent: http.Agent,
  port: number,
  method: string,
  path: string,
  key: string,
  body?: string,
  idem?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { 'X-Auth-Token': key, 'Content-Type': 'application/json' };
    if (body) headers['Content-Length'] = Buffer.byteLength(body);
    if (idem) headers['Idempotency-Key'] = idem;
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end(body);
  });
}

/** One session: a partner's user renting its own vehicle over and over (list, pricing, start, list, pricing, end). */
class Session {
  step: number;
  rentalId?: string;
  /** the key of the write this session is sending (kept across its retries) */
  idem?: string;
  constructor(
    readonly slot: Slot,
    first: number,
  ) {
    this.step = first;
  }
}

interface Ledger {
  started: Set<string>;
  ended: Set<string>;
}

/** The request of a session's step, and what its answer means for the session and the ledger. */
async function stepOf(
  s: Session,
  agent: http.Agent,
  port: number,
  zoneId: string,
  listed: string[],
  ledger: Ledger,
  n: number,
): Promise<{ status: number; write: boolean }> {
  const key = s.slot.key;
  switch (s.step) {
    case 0:
    case 3: {
      const r = await send(agent, port, 'GET', `/v1/vehicles?zoneID=${zoneId}`, key);
      if (r.status === 200) s.step++;
      return { status: r.status, write: false };
    }
    case 1:
    case 4: {
      const r = await send(agent, port, 'GET', `/v1/pricing/vehicle/${listed[n % listed.length]}`, key);
      if (r.status === 200) s.step++;
      return { status: r.status, write: false };
    }
    case 2: {
      s.idem ??= `bench-${Math.random().toString(36).slice(2)}`;
      const r = await send(agent, port, 'POST', '/v1/rental/start', key, JSON.stringify({ userId: s.slot.userId, vehicleId: s.slot.vehicleId }), s.idem);
      if (r.status === 200) {
        s.rentalId = JSON.parse(r.body).data[0].id;
        ledger.started.add(s.rentalId!);
      }
      // a refusal or a key still in use is sent again with the same key; anything else moves on
      if (r.status !== 503 && r.status !== 409 && r.status !== 0) {
        s.idem = undefined;
        s.step = r.status === 200 ? 3 : 0;
      } else if (r.status === 409 && !r.body.includes('IdempotencyKeyInUse')) {
        s.idem = undefined;
        s.step = 0;
      }
      return { status: r.status, write: true };
    }
    default: {
      s.idem ??= `bench-${Math.random().toString(36).slice(2)}`;
      const r = await send(agent, port, 'POST', `/v1/rental/${s.rentalId}/end`, key, '{}', s.idem);
      if (r.status === 200) ledger.ended.add(s.rentalId!);
      if (r.status !== 503 && r.status !== 0 && !(r.status === 409 && r.body.includes('IdempotencyKeyInUse'))) {
        s.idem = undefined;
        s.step = 0;
      }
      return { status: r.status, write: true };
    }
  }
}

/** The open loop at `rate` until `stop()`: every due request goes to an idle session or waits for one. */
function openLoop(port: number, zoneId: string, listed: string[], sessions: Session[], rate: number, ledger: Ledger) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sessions.length });
  const idle = [...sessions];
  const due: number[] = [];
  const samples: Sample[] = [];
  const t0 = performance.now();
  let scheduled = 0;
  let stopping = false;
  let inFlight = 0;
  let drained!: () => void;
  const done = new Promise<void>((r) => (drained = r));
  let n = 0;
  const pump = () => {
    const now = performance.now();
    while (!stopping && t0 + (scheduled * 1000) / rate <= now) due.push(t0 + (scheduled++ * 1000) / rate);
    while (due.length && idle.length) {
      const s = idle.shift()!;
      const at = due.shift()!;
      inFlight++;
      void stepOf(s, agent, port, zoneId, listed, ledger, n++).then((r) => {
        samples.push({ due: at, at: performance.now(), status: r.status, write: r.write });
        inFlight--;
        idle.push(s);
        if (stopping && inFlight === 0) drained();
        pump();
      });
    }
  };
  const timer = setInterval(pump, 2);
  return {
    samples,
    async stop() {
      stopping = true;
      clearInterval(timer);
      due.length = 0;
      if (inFlight > 0) await done;
      agent.destroy();
    },
  };
}

/** Closed loop of CONNECTIONS sessions for SATURATE_S: answered requests per second. */
async function saturate(port: number, zoneId: string, listed: string[], sessions: Session[], ledger: Ledger): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sessions.length });
  const until = performance.now() + SATURATE_S * 1000;
  let ok = 0;
  let n = 0;
  await Promise.all(
    sessions.map(async (s) => {
      while (performance.now() < until) if ((await stepOf(s, agent, port, zoneId, listed, ledger, n++)).status < 300) ok++;
    }),
  );
  agent.destroy();
  return ok / SATURATE_S;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(): Promise<BenchResult> {
  const notes: string[] = [];
  const metrics: BenchResult['metrics'] = {};
  const store = mkdtempSync(join(tmpdir(), 'failover-bench-'));
  let cluster: HaCluster | undefined;
  let api: Awaited<ReturnType<typeof startApiProcess>> | undefined;
  let db: Db | undefined;
  try {
    cluster = await startHaCluster('ha-bench', Number(process.env.BENCH_HA_BASE_PORT ?? 24480));
    await migrate(cluster.rw, HOURLY_FEEDS);
    db = new Db(cluster.rw, createLogger('silent'), { max: 4 });
    const zone = await insertZone(db, { unlockDistanceM: 500 });
    const rentZone = await insertZone(db, { unlockDistanceM: 500 });
    const partners: Array<{ id: string; key: string }> = [];
    for (let i = 0; i < PARTNERS; i++) partners.push(await insertPartner(db, { rateLimitPerMinute: 1_000_000 }));
    const listed: string[] = [];
    for (let i = 0; i < LISTED; i++) listed.push((await insertVehicle(db, zone, { eastM: (i % 10) * 40, northM: Math.floor(i / 10) * 40 })).id);
    const slots = async (count: number) => {
      const out: Session[] = [];
      for (let i = 0; i < count; i++) {
        const p = partners[i % PARTNERS];
        const v = await insertVehicle(db!, rentZone, { eastM: -200 - (i % 10) * 20, northM: -300 + Math.floor(i / 10) * 15 });
        out.push(new Session({ key: p.key, userId: await insertUser(db!, p.id), vehicleId: v.id }, i % 3));
      }
      return out;
    };
    const closed = await slots(CONNECTIONS);
    const open = await slots(SESSIONS);
    await db.query('ANALYZE');
    api = await startApiProcess({ url: cluster.rw } as never, store, { DATABASE_REPLICA_URL: cluster.ro, LOG_LEVEL: 'silent' });

    const ledger: Ledger = { started: new Set(), ended: new Set() };
    await saturate(api.port, zone.id, listed, closed, ledger); // warm-up
    const capacity = await saturate(api.port, zone.id, listed, closed, ledger);
    const rate = Math.round(0.7 * capacity);
    metrics.capacity_requests_per_s = Math.round(capacity);
    metrics.offered_requests_per_s = rate;

    const loop = openLoop(api.port, zone.id, listed, open, rate, ledger);
    const recoveries: number[] = [];
    const before: number[] = [];
    const after: number[] = [];
    let refused = 0;
    for (let f = 0; f < FAILOVERS; f++) {
      // a calm window with a synchronous standby Patroni may promote
      await cluster.ha('ready');
      const calmFrom = performance.now();
      await sleep(WINDOW_S * 1000);
      const calmTo = performance.now();
      await cluster.ha('kill-primary');
      // from the signal (the script returns right after it): a write due before it could still succeed
      const killAt = performance.now();
      let first: number | undefined;
      while (first === undefined) {
        await sleep(20);
        first = loop.samples.find((s) => s.due > killAt && s.write && s.status === 200)?.at;
        if (performance.now() - killAt > 120_000) throw new Error('no acknowledged write within 120 s of the kill');
      }
      await sleep(WINDOW_S * 1000);
      const windowEnd = first + WINDOW_S * 1000;
      const answered = (from: number, to: number) =>
        loop.samples.filter((s) => s.due >= from && s.due < to && s.status !== 503 && s.status !== 0).map((s) => s.at - s.due);
      recoveries.push(first - killAt);
      before.push(percentile(answered(calmFrom, calmTo), 99) ?? NaN);
      after.push(percentile(answered(first, windowEnd), 99) ?? NaN);
      refused += loop.samples.filter((s) => s.due >= killAt && s.due < first && (s.status === 503 || s.status === 0)).length;
    }
    await loop.stop();

    // what the clients were told is on the new primary
    const rows = await db.many<{ id: string; state: string }>(`SELECT id, state FROM rentals WHERE id = ANY ($1::uuid[])`, [[...ledger.started]]);
    const state = new Map(rows.map((r) => [r.id, r.state]));
    const lost = [...ledger.started].filter((id) => !state.has(id)).length + [...ledger.ended].filter((id) => state.get(id) === 'RUNNING').length;
    const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
    metrics.first_success_median_ms = Math.round(median(recoveries));
    metrics.first_success_worst_ms = Math.round(Math.max(...recoveries));
    metrics.requests_refused = refused;
    metrics.acknowledged_writes = ledger.started.size + ledger.ended.size;
    metrics.acknowledged_writes_lost = lost;
    metrics.p99_before_ms = Math.round(median(before));
    metrics.p99_after_ms = Math.round(median(after));
    metrics.p99_after_over_before = Math.round((median(after) / median(before)) * 100) / 100;
    notes.push(
      `C: the API's saturated throughput for the partner mix on the HA cluster (closed loop, ${CONNECTIONS} connections, ${SATURATE_S} s); 0.7 × C offered open loop to ${SESSIONS} sessions`,
      `each failover: SIGKILL of the primary's postmaster; windows of ${WINDOW_S} s before the kill and after the first acknowledged write`,
      `per failover: first success ${recoveries.map((r) => Math.round(r)).join(' / ')} ms; p99 before ${before.map(Math.round).join(' / ')} ms, after ${after.map(Math.round).join(' / ')} ms`,
      'refused: requests answered after a kill and due before the first acknowledged write, answered 503 (or not at all within 10 s)',
    );
    return {
      name: 'failover',
      metrics,
      goals: [{ metric: 'acknowledged_writes_lost', goal: '= 0 over 3 failovers', met: lost === 0 }],
      notes,
    };
  } finally {
    api?.stop();
    await db?.close();
    await cluster?.destroy().catch(() => undefined);
    rmSync(store, { recursive: true, force: true });
  }
}
