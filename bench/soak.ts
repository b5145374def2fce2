/**
 * `make soak`: the whole system under mixed load for SOAK_SECONDS (default 120), then consistency
 * checks. Not part of `make test`.
 *
 * A fresh database cloned from the migrated template, the demo seed and 2 hours of simulated history,
 * the API on loopback ports, the publisher (cron on), the live simulator at 10× rate, and three
 * traffic loops: partner (register users, list vehicles, start/end rentals), TOMP (book, finish) and
 * feeds (token, MDS trips/events/status, GBFS). Every 10 s one line: requests, errors by status,
 * publish lag, RSS. At the end: every ended rental has exactly one trip, every trip of the window is
 * in exactly one published MDS 2.0 trips file (after a final publication of the window), no rental is
 * left running on a vehicle that is not on a trip. Exit code 1 when a check fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../lib/core/config.js';
import { createContext, closeContext } from '../lib/domain/runtime.js';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { seedDemo } from '../ops/seed/index.js';
import { simulateHistory } from '../ops/sim/index.js';
import { startLiveSimulator } from '../ops/sim/live.js';
import { startPublisher } from '../publisher/index.js';
import { publishHour } from '../publisher/publish.js';
import { backfill } from '../publisher/ops.js';
import { latestDueHour } from '../publisher/schedule.js';
import { feedById, objectKey } from '../lib/feeds/publications.js';
import { floorHour, formatHour, hoursBetween, HOUR_MS } from '../lib/feeds/hours.js';
import { cloneDatabase } from '../test/support/db.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 120);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stats = { requests: 0, byStatus: new Map<string, number>(), failures: [] as string[] };
function tally(family: string, status: number, ok: (s: number) => boolean, what: string): void {
  stats.requests++;
  const k = `${family} ${status}`;
  stats.byStatus.set(k, (stats.byStatus.get(k) ?? 0) + 1);
  if (status === 0 || status >= 500 || !ok(status)) stats.failures.push(`${what} → ${status}`);
}

async function main(): Promise<void> {
  const db = await cloneDatabase();
  const storeDir = mkdtempSync(join(tmpdir(), 'soak-store-'));
  const config = loadConfig({
    SIGNING_SECRET: randomBytes(32).toString('hex'),
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: db.url,
    STORE_URL: `file://${storeDir}`,
    PORT: '0',
    LEGACY_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'fatal',
    MODE: 'staging',
  });
  const ctx = await createContext(config, { applicationName: 'soak' });
  const servers: Server[] = [];
  let exitCode = 0;
  try {
    const now = ctx.clock.now();
    const windowFrom = new Date(floorHour(now).getTime() - 2 * HOUR_MS);
    await seedDemo(ctx, { deployedAt: windowFrom });
    const sim = await simulateHistory(ctx, { days: (now.getTime() - windowFrom.getTime()) / 86_400_000, seed: 11, end: now });
    console.log(`soak: seeded; ${sim.trips} trips of history; running ${SECONDS} s`);

    const listen = (app: ReturnType<typeof buildApp>) =>
      new Promise<Server>((r) => {
        const s = app.listen(0, '127.0.0.1', () => r(s));
      });
    const main = await listen(buildApp(ctx));
    servers.push(main, await listen(buildLegacyApp(ctx)));
    const base = `http://127.0.0.1:${(main.address() as { port: number }).port}`;
    const publisher = await startPublisher(ctx, { cron: true, pollingIntervalSeconds: 1 });
    const live = startLiveSimulator(ctx, { rate: 10, seed: 5 });

    // GBFS answers 503 until the first snapshot exists: wait for it (bounded) before the clock starts
    const gbfsReady = Date.now() + 60_000;
    while (Date.now() < gbfsReady && !(await ctx.db.maybeOne(`SELECT 1 FROM gbfs_snapshots LIMIT 1`))) await sleep(500);
    const deadline = Date.now() + SECONDS * 1000;
    const call = async (
      family: string,
      method: string,
      path: string,
      opts: { headers?: Record<string, string>; body?: unknown; form?: string } = {},
      ok = (s: number) => s < 400,
    ) => {
      let status = 0;
      let body: any;
      try {
        const res = await fetch(base + path, {
          method,
          headers: {
            ...(opts.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
            ...(opts.form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
            ...opts.headers,
          },
          body: opts.form ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        const text = await res.text();
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      } catch {
        /* status 0: no answer */
      }
      tally(family, status, ok, `${method} ${path}`);
      return { status, body };
    };

    const partner = async (n: number) => {
      const h = { 'X-Auth-Token': 'demo-partner-key' };
      const user = await call('partner', 'POST', '/v1/user/register', {
        headers: h,
        body: { externalId: `soak-${n}-${Date.now()}`, email: `soak-${n}-${Date.now()}@example.com` },
      });
      const userId = user.body?.data?.id;
      while (Date.now() < deadline && userId) {
        const zone = Math.random() < 0.5 ? 'berlin' : 'copenhagen';
        const list = await call('partner', 'GET', `/v1/vehicles?zoneID=${zone}`, { headers: h });
        const vs = (list.body?.data ?? []) as any[];
        const v = vs[Math.floor(Math.random() * vs.length)];
        if (!v) {
          await sleep(500);
          continue;
        }
        // 409/4xx are business answers under contention (vehicle taken meanwhile, zone sleeping)
        const start = await call(
          'partner',
          'POST',
          '/v1/rental/start',
          { headers: h, body: { userId, vehicleId: v.id, userLicenseValidated: true, userStartLocation: v.attributes.location } },
          (s) => s < 500,
        );
        if (start.status !== 200) {
          await sleep(200);
          continue;
        }
        await sleep(500 + Math.random() * 1500);
        await call('partner', 'POST', `/v1/rental/${start.body.data[0].id}/end`, { headers: h, body: {} }, (s) => s < 500);
      }
    };
    const tomp = async () => {
      const h = { 'X-Access-Token': 'demo-maas-key' };
      const ph = { 'X-Auth-Token': 'demo-partner-key' };
      while (Date.now() < deadline) {
        const list = await call('partner', 'GET', '/v1/vehicles?zoneID=berlin', { headers: ph });
        const vs = (list.body?.data ?? []) as any[];
        const v = vs[Math.floor(Math.random() * vs.length)];
        if (!v) {
          await sleep(500);
          continue;
        }
        const at = { lat: v.attributes.location.latitude, lng: v.attributes.location.longitude };
        const book = await call(
          'tomp',
          'POST',
          '/edge/tomp/bookings/one-stop',
          { headers: h, body: { from: { coordinates: at }, useAssets: [v.id], customer: { externalId: `soak-${Date.now()}` } } },
          (s) => s < 500,
        );
        if (book.status !== 201) {
          await sleep(300);
          continue;
        }
        await sleep(500 + Math.random() * 1000);
        await call('tomp', 'POST', `/edge/tomp/legs/${book.body.legs[0].id}/events`, { headers: h, body: { event: 'FINISH' } }, (s) => s < 500);
      }
    };
    const feeds = async () => {
      const tok = await call('feeds', 'POST', '/v1/partner-apis/token', {
        headers: { Authorization: `Basic ${Buffer.from('demo-city:demo-city-secret').toString('base64')}` },
        form: 'grant_type=client_credentials',
      });
      const h = { Authorization: `Bearer ${tok.body?.access_token}` };
      const hour = formatHour(new Date(floorHour(new Date()).getTime() - 2 * HOUR_MS));
      while (Date.now() < deadline) {
        for (const zone of ['berlin', 'copenhagen']) {
          // 202: an hour not published yet is a documented answer
          await call('feeds', 'GET', `/v1/partner-apis/mds/${zone}/trips?end_time=${hour}`, { headers: h });
          await call('feeds', 'GET', `/v1/partner-apis/mds/${zone}/events/historical?event_time=${hour}`, { headers: h });
          await call('feeds', 'GET', `/v1/partner-apis/mds/${zone}/vehicles/status`, { headers: h });
          await call('feeds', 'GET', `/v1/partner-apis/gbfs/${zone}/gbfs.json`, { headers: h });
        }
        await sleep(200);
      }
    };

    const loops = [...Array.from({ length: 6 }, (_, i) => partner(i)), tomp(), tomp(), feeds(), feeds()];
    const t0 = Date.now();
    const sampler = (async () => {
      while (Date.now() < deadline) {
        await sleep(Math.min(10_000, Math.max(0, deadline - Date.now())));
        const due = latestDueHour(ctx.clock.now(), config.publishLatenessSeconds);
        const lag = await ctx.db.one<{ behind: number; latest: string | null }>(
          `SELECT count(*) FILTER (WHERE status <> 'published' OR dirty)::int AS behind, max(hour) FILTER (WHERE status = 'published')::text AS latest FROM feed_publications`,
        );
        const errors =
          [...stats.byStatus]
            .filter(([k]) => !/ [23]\d\d$/.test(k))
            .map(([k, v]) => `${k}:${v}`)
            .join(' ') || 'none';
        console.log(
          `t+${Math.round((Date.now() - t0) / 1000)}s requests ${stats.requests} non-2xx/3xx [${errors}] publish: latest ${lag.latest ?? '-'} (due ${formatHour(due)}), ${lag.behind} files behind; rss ${Math.round(process.memoryUsage().rss / 1048576)} MB`,
        );
      }
    })();
    await Promise.all([...loops, sampler]);
    await live.stop();
    await publisher.stop();

    // final publication of the window: closed hours through backfill, the current hour by hand
    const end = ctx.clock.now();
    await backfill(ctx, { zones: 'all', from: windowFrom, to: end, feeds: ['mds-2.0-trips'], force: false });
    const trips20 = feedById('mds-2.0-trips')!;
    const zones = (await ctx.db.many(`SELECT id FROM zones`)).map((r) => r.id as string);
    for (const z of zones) await publishHour(ctx, trips20, z, floorHour(end));

    const checks: Array<[string, boolean, string]> = [];
    const noTrip = await ctx.db.one<{ n: number }>(
      `SELECT count(*)::int AS n FROM rentals r WHERE r.state <> 'RUNNING' AND (SELECT count(*) FROM trips t WHERE t.rental_id = r.id) <> 1`,
    );
    checks.push(['every ended rental has exactly one trip', noTrip.n === 0, `${noTrip.n} without`]);
    const seen = new Map<string, number>();
    for (const z of zones) {
      for (const h of hoursBetween(windowFrom, floorHour(end))) {
        const obj = await ctx.store.get(objectKey(trips20, z, h));
        if (!obj) continue;
        const chunks: Buffer[] = [];
        for await (const c of obj.body) chunks.push(c as Buffer);
        for (const t of JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()).trips) seen.set(t.trip_id, (seen.get(t.trip_id) ?? 0) + 1);
      }
    }
    const trips = (await ctx.db.many(`SELECT trip_id FROM trips WHERE end_time >= $1`, [windowFrom])).map((r) => r.trip_id as string);
    const missing = trips.filter((id) => !seen.has(id)).length;
    const twice = [...seen.values()].filter((n) => n > 1).length;
    checks.push([
      'every trip in exactly one published trips file',
      missing === 0 && twice === 0 && seen.size === trips.length,
      `${trips.length} trips, ${missing} missing, ${twice} twice, ${seen.size} published`,
    ]);
    const orphan = await ctx.db.one<{ n: number }>(
      `SELECT count(*)::int AS n FROM rentals r JOIN vehicles v ON v.id = r.vehicle_id WHERE r.state = 'RUNNING' AND v.mds_state <> 'on_trip'`,
    );
    checks.push(['no rental running without its vehicle on a trip', orphan.n === 0, `${orphan.n} found`]);
    checks.push(['no 5xx and no unanswered request', stats.failures.length === 0, `${stats.failures.length}: ${stats.failures.slice(0, 5).join('; ')}`]);

    console.log(`\nsoak: ${stats.requests} requests in ${SECONDS} s`);
    for (const [k, v] of [...stats.byStatus].sort()) console.log(`  ${k.padEnd(14)} ${v}`);
    const distinct = [...new Set(stats.failures.map((f) => f.replace(/[0-9a-f-]{36}/g, ':id')))];
    if (distinct.length) console.log(`failing answers: ${distinct.slice(0, 10).join('; ')}`);
    for (const [name, ok, detail] of checks) {
      console.log(`${ok ? 'PASS' : 'FAIL'}  ${name} (${detail})`);
      if (!ok) exitCode = 1;
    }
  } finally {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await closeContext(ctx);
    await db.drop().catch(() => undefined);
    rmSync(storeDir, { recursive: true, force: true });
  }
  process.exit(exitCode);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
