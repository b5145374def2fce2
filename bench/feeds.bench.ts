/**
 * Feed serving benchmark.
 *
 *  1. A ~2 MB (uncompressed) hourly trips file, stored gzip, served through the authenticating route
 *     (token check, publication lookup, store read, gzip passthrough) with 32 connections, and the
 *     same bytes from nginx (`nginx-light`, gzip_static on, one worker, loopback) in the same run.
 *     Goal: our throughput ≥ 80 % of nginx's (`api_vs_nginx`, the median over the rounds of the
 *     ratio measured in each round). For context it also measures a bare node:http server
 *     answering the same bytes with `res.end(buffer)` (the most one Node process can do here),
 *     nginx with two workers, and — when bin/api.ts exists — the API with API_WORKERS=2; and the
 *     CPU time each single-process server spends per answer (`*_cpu_us_per_req`, from
 *     process.cpuUsage and /proc), which moves far less with the machine's load than req/s.
 *  2. Peak RSS of this process (API in-process).
 *  3. Signed feeds (issue 40): every answer of the route carries an RFC 9421 signature over an RFC
 *     9530 Content-Digest (api/feeds/signatures.ts), so `api_vs_nginx` is the signed route's ratio;
 *     the bench checks one answer with the independent verifier the tests use (`signed_verified`)
 *     and measures one Ed25519 signature of a feed answer's signature base (`ed25519_sign_us`), the
 *     cost the route would pay per answer without its per-second reuse, and the hot path's signing
 *     step itself (`signing_reused_ns` within a second, `signing_made_us` for a new one).
 *     `signedFileRouteVsNginx()`
 *     measures only the route and nginx, for another bench to print (BENCH=policy).
 *
 * `/vehicles/status` of a 10,000-vehicle zone (issue 26: median ≤ 100 ms) is measured by
 * bench/vehicles-status.bench.ts alone: an earlier copy here timed the client's gunzip and JSON.parse
 * in this process too (~150 ms of a ~250 ms figure), against an older goal of 250 ms.
 *
 * Runs against a fresh database cloned from the migrated template (DATABASE_URL or the embedded
 * cluster). `npx tsx bench/feeds.bench.ts` runs it directly; `run()` is for bench/run.ts.
 *
 * Tools: nginx (`nginx-light`) and wrk are Debian packages; when missing, the bench installs them
 * with apt-get unless BENCH_APT=0 (then nginx is not compared and autocannon, a Node client that can
 * saturate its own core first, generates the load; the notes say so). BENCH_ROUNDS (default 3) and
 * BENCH_DURATION_S (default 5) size the file-route measurement.
 */
import type { BenchResult } from './types.js';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createHash, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { httpbis, createVerifier } from 'http-message-signatures';
import { buildApp, withHotPath } from '../api/app.js';
import { issueFeedToken } from '../api/feeds/access-tokens.js';
import { feedSignerOf } from '../api/feeds/signatures.js';
import { systemClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import { ROOT } from '../lib/core/paths.js';
import { cloneDatabase } from '../test/support/db.js';

const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon/autocannon.js');
const CONNECTIONS = 32;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
/**
 * Targets are measured in rounds (each target once per round, back to back) and each figure is the
 * median over the rounds: on a shared machine the available CPU moves by 2× within a minute, and a
 * ratio of two runs taken a minute apart measures that, not the servers.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ZONE = 'bench';
const HOUR = '2026-11-20T08';

function tripsFile(targetBytes: number): Buffer {
  const trips: object[] = [];
  let size = 0;
  const provider = randomUUID();
  for (let i = 0; size < targetBytes; i++) {
    const t = {
      provider_id: provider,
      device_id: randomUUID(),
      trip_id: randomUUID(),
      distance: 500 + ((i * 37) % 4000),
      duration: 120 + ((i * 13) % 1500),
      start_location: { lat: 52.5 + ((i * 7) % 1000) / 1e5, lng: 13.4 + ((i * 11) % 1000) / 1e5 },
      end_location: { lat: 52.5 + ((i * 5) % 1000) / 1e5, lng: 13.4 + ((i * 3) % 1000) / 1e5 },
      start_time: 1_763_625_600_000 + i * 1000,
      end_time: 1_763_625_600_000 + i * 1000 + 600_000,
      accessibility_attributes: [],
      trip_type: ['rider'],
    };
    size += JSON.stringify(t).length + 1;
    trips.push(t);
  }
  return Buffer.from(JSON.stringify({ version: '2.0.0', last_updated: { last_updated: Date.now() }, ttl: { ttl: 0 }, trips }));
}

/** BENCH_APT=0: never install nginx or wrk (compare with what the machine has). */
const APT = process.env.BENCH_APT !== '0';

function ensureNginx(notes: string[]): string | undefined {
  const find = () => ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
  let bin = find();
  if (bin) return bin;
  if (!APT) {
    notes.push('nginx not found and BENCH_APT=0: nginx comparison skipped');
    return undefined;
  }
  notes.push('nginx not found: installing nginx-light with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 180_000 });
  const r = spawnSync('apt-get', ['install', '-y', '-qq', 'nginx-light'], { stdio: 'ignore', env, timeout: 300_000 });
  bin = find();
  if (!bin) notes.push(`nginx-light could not be installed (apt-get exit ${r.status}): nginx comparison skipped`);
  return bin;
}

async function startNginx(
  bin: string,
  dir: string,
  body: Buffer,
  gz: Buffer,
  workers = 1,
): Promise<{ port: number; pid: number; stop: () => Promise<void> } | undefined> {
  const root = join(dir, 'www');
  spawnSync('mkdir', ['-p', join(root, 'trips')]);
  // nginx workers drop root privileges (user nobody): the temp dir must be readable to them
  chmodSync(dir, 0o755);
  writeFileSync(join(root, 'trips', `${HOUR}.json`), body);
  writeFileSync(join(root, 'trips', `${HOUR}.json.gz`), gz);
  // a free port: bind 0 in node, release, hand to nginx
  const port = await freePort();
  const conf = join(dir, `nginx${workers}.conf`);
  writeFileSync(
    conf,
    `worker_processes ${workers};
daemon off;
pid ${join(dir, `nginx${workers}.pid`)};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  default_type application/json;
  sendfile on; tcp_nopush on; keepalive_requests 100000;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    gzip_static on;
    etag on;
  }
}
`,
  );
  const proc = spawn(bin, ['-c', conf, '-p', dir], { stdio: 'ignore' });
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    }
  };
  if (await waitUp(`http://127.0.0.1:${port}/trips/${HOUR}.json`, {}, 5000)) return { port, pid: proc.pid!, stop };
  await stop();
  return undefined;
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU time (user + system, µs) of process `pid` and its children (nginx: master + workers), from /proc. */
function procCpuUs(pid: number): number {
  let ticks = 0;
  const pids = [pid];
  try {
    pids.push(...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    // no children list: the master's own time only
  }
  for (const p of pids) {
    try {
      // fields after the command (which may hold spaces): state is field 3, utime 14, stime 15
      const f = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone
    }
  }
  return (ticks * 1e6) / CLK_TCK;
}

/** CPU time (user + system, µs) of this process: the in-process API and bare server. */
const selfCpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Polls `url` until it answers 200 (true) or `ms` pass (false). */
async function waitUp(url: string, headers: Record<string, string>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      const res = await fetch(url, { headers: { 'Accept-Encoding': 'gzip', ...headers } });
      await res.arrayBuffer();
      if (res.ok) return true;
    } catch {
      // not up yet
    }
  }
  return false;
}

async function freePort(): Promise<number> {
  const probe = (await import('node:net')).createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  return port;
}

/**
 * The API as its own process tree with `API_WORKERS=n` (bin/api.ts, node:cluster), against the same
 * database and store. Undefined when bin/api.ts does not exist or does not come up.
 */
async function startApiWorkers(
  n: number,
  env: Record<string, string>,
  token: string,
  notes: string[],
): Promise<{ port: number; stop: () => Promise<void> } | undefined> {
  const entry = join(ROOT, 'bin', 'api.ts');
  if (!existsSync(entry)) {
    notes.push(`bin/api.ts not present: API_WORKERS=${n} not measured`);
    return undefined;
  }
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LEGACY_PORT: String(await freePort()), API_WORKERS: String(n) },
    stdio: 'ignore',
    detached: true, // its own process group, so that stop() reaches the workers too
  });
  const stop = async () => {
    if (proc.exitCode !== null) return;
    try {
      process.kill(-proc.pid!, 'SIGTERM');
    } catch {
      return;
    }
    await once(proc, 'exit');
  };
  if (await waitUp(`http://127.0.0.1:${port}/v1/partner-apis/mds/${ZONE}/trips?end_time=${HOUR}`, { Authorization: `Bearer ${token}` }, 30_000))
    return { port, stop };
  notes.push(`bin/api.ts with API_WORKERS=${n} did not come up on port ${port}: not measured`);
  await stop();
  return undefined;
}

/** The ceiling of one Node process on this machine: node:http answering the same bytes, nothing else. */
async function startBareNode(gz: Buffer): Promise<{ port: number; server: Server }> {
  const { createServer } = await import('node:http');
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'Content-Length': gz.length, ETag: '"bare"' });
    res.end(gz);
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, server };
}

/**
 * The load generator runs in its own process (in-process it would share the event loop with the API
 * under test). wrk (Debian's package, C, two threads) is preferred: a Node client saturates before a
 * fast server does when every answer is ~400 KB, which would flatter the ratio. autocannon is the
 * fallback when wrk cannot be installed.
 */
async function cannon(
  url: string,
  headers: Record<string, string>,
  notes: string[],
): Promise<{ rps: number; requests: number; bytesPerSec: number; errors: number; non2xx: number; tool: string }> {
  const wrk = ensureWrk(notes);
  if (wrk) {
    const args = ['-t', '2', '-c', String(CONNECTIONS), '-d', `${DURATION_S}s`];
    for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
    args.push(url);
    const child = spawn(wrk, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await once(child, 'close');
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
    const tr = /Transfer\/sec:\s+([\d.]+)([KMG]?B)/.exec(out);
    const unit = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[tr?.[2] ?? 'B'] ?? 1;
    const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
    const errors = (/Socket errors:[^\n]*/.exec(out)?.[0].match(/\d+/g) ?? []).reduce((a, b) => a + Number(b), 0);
    const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
    return { rps, requests, bytesPerSec: Number(tr?.[1] ?? 0) * unit, errors, non2xx, tool: 'wrk' };
  }
  const args = [AUTOCANNON, '-j', '-c', String(CONNECTIONS), '-d', String(DURATION_S)];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await once(child, 'close');
  const r = JSON.parse(out) as { requests: { average: number; total: number }; throughput: { average: number }; errors: number; non2xx: number };
  return { rps: r.requests.average, requests: r.requests.total, bytesPerSec: r.throughput.average, errors: r.errors, non2xx: r.non2xx, tool: 'autocannon' };
}

let wrkPath: string | null | undefined;
function ensureWrk(notes: string[]): string | undefined {
  if (wrkPath !== undefined) return wrkPath ?? undefined;
  if (!existsSync('/usr/bin/wrk') && APT) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: 'ignore', env, timeout: 300_000 });
  }
  wrkPath = existsSync('/usr/bin/wrk') ? '/usr/bin/wrk' : null;
  if (!wrkPath)
    notes.push(`wrk ${APT ? 'could not be installed' : 'not found and BENCH_APT=0'}: autocannon (a Node client) generated the load, which can saturate first`);
  return wrkPath ?? undefined;
}

/** One answer of the route checked as a city would: Content-Digest of the bytes, signature by a key of the JWKS. */
async function verifiedAnswer(base: string, route: string, headers: Record<string, string>): Promise<boolean> {
  const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string; kty: string; crv: string; x: string }> };
  // node:http, not fetch: the digest is of the gzip bytes as sent, which fetch would decode
  const { request } = await import('node:http');
  const res = await new Promise<{ status: number; headers: Record<string, string>; body: Buffer }>((resolve, reject) => {
    const req = request(`${base}${route}`, { headers }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers as Record<string, string>, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
  const digestOk = res.headers['content-digest'] === `sha-256=:${createHash('sha256').update(res.body).digest('base64')}:`;
  const ok = await httpbis.verifyMessage(
    {
      keyLookup: (p) => {
        const jwk = jwks.keys.find((k) => k.kid === p.keyid);
        return Promise.resolve(
          jwk ? { id: jwk.kid, algs: ['ed25519'], verify: createVerifier(createPublicKey({ key: jwk, format: 'jwk' }), 'ed25519') } : null,
        );
      },
      requiredFields: ['@status', 'content-type', 'content-digest', '@path'],
    },
    { status: res.status, headers: res.headers },
    { method: 'GET', url: `${base}${route}`, headers },
  );
  return digestOk && ok === true;
}

/** µs per Ed25519 signature of a signature base the size of a feed answer's (what a signature costs without reuse). */
function ed25519SignUs(): number {
  const { privateKey } = generateKeyPairSync('ed25519');
  const base = Buffer.from(`"@status": 200\n"content-type": application/vnd.mds+json;version=2.0\n"content-digest": sha-256=:${'A'.repeat(43)}=:\n`.repeat(3));
  for (let i = 0; i < 200; i++) sign(null, base, privateKey);
  const n = 3000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) sign(null, base, privateKey);
  return Math.round(((performance.now() - t0) * 1000) / n);
}

/**
 * What the hot path's signing costs per answer, on the bench's own signer and key: a signature
 * reused within its second (the route's usual case: `signing_reused_ns`), and one made anew (the
 * first answer of each second and request line: `signing_made_us`).
 */
async function signerCostNs(ctx: AppContext, route: string): Promise<{ signing_reused_ns: number; signing_made_us: number }> {
  const signer = feedSignerOf(ctx);
  const keys = await signer.ring.current();
  const parts = () => ({ status: 200, contentType: 'application/json', contentDigest: `sha-256=:${'A'.repeat(43)}=:`, etag: '"x"', method: 'GET', url: route });
  const answer = {};
  const now = Date.now();
  const n = 200_000;
  let t0 = performance.now();
  for (let i = 0; i < n; i++) signer.reused(keys, answer, route, parts, now);
  const reused = ((performance.now() - t0) * 1e6) / n;
  const m = 2000;
  t0 = performance.now();
  for (let i = 0; i < m; i++) signer.reused(keys, answer, route, parts, now + (i + 1) * 1000);
  const made = ((performance.now() - t0) * 1000) / m;
  return { signing_reused_ns: Math.round(reused), signing_made_us: Math.round(made) };
}

export interface FeedsBenchOptions {
  /** only the route and nginx (one worker), not the bare Node server nor the two-worker targets */
  routeAndNginxOnly?: boolean;
}

/**
 * The signed hourly-file route against nginx, measured as `run` measures it (same file, load,
 * rounds): for BENCH=policy to print the feed route's ratio with signatures. `ratio` is the median
 * over the rounds of route ÷ nginx; null when nginx could not be run.
 */
export async function signedFileRouteVsNginx(): Promise<{
  ratio: number | null;
  signedVerified: boolean;
  apiRps: number | null;
  nginxRps: number | null;
  notes: string[];
}> {
  const r = await run({ routeAndNginxOnly: true });
  return {
    ratio: r.metrics.api_vs_nginx ?? null,
    signedVerified: r.metrics.signed_verified === 1,
    apiRps: r.metrics.api_rps ?? null,
    nginxRps: r.metrics.nginx_rps ?? null,
    notes: r.notes,
  };
}

export async function run(opts: FeedsBenchOptions = {}): Promise<BenchResult> {
  const notes: string[] = [];
  const metrics: BenchResult['metrics'] = {};
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ');
  notes.push(`load average (1/5/15 min) at start: ${load()}`);
  const database = await cloneDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'feeds-bench-'));
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
    db: new Db(config.databaseUrl, log, { max: 20 }),
    store: await openStore(config),
    log,
    clock: systemClock,
    gateway: new SimulatedGateway(),
  };
  let server: Server | undefined;
  const stops: Array<() => Promise<void>> = [];
  try {
    await ctx.db.query(
      `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary, created_at)
       VALUES ($1, 'Bench', 'Berlin', 'DE', 'Europe/Berlin', 'EUR', 0.19, 'free-floating',
               ST_GeomFromText('MULTIPOLYGON(((13.2 52.4,13.6 52.4,13.6 52.7,13.2 52.7,13.2 52.4)))', 4326), '2020-01-01')`,
      [ZONE],
    );
    const body = tripsFile(2 * 1024 * 1024);
    const gz = gzipSync(body, { level: 9 });
    const key = `mds/2.0/${ZONE}/trips/${HOUR}.json.gz`;
    await ctx.store.put(key, gz, { contentType: 'application/json', contentEncoding: 'gzip' });
    await ctx.db.query(
      `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes, last_updated, published_at)
       VALUES ('mds_trips', '2.0', $1, $2::timestamp, 'published', $3, 'x', 1, $4, now(), now())`,
      [ZONE, `${HOUR}:00:00`, key, gz.length],
    );
    metrics.file_bytes = body.length;
    metrics.file_gzip_bytes = gz.length;
    const { accessToken } = await issueFeedToken(config, systemClock, { clientId: 'bench', role: 'city', zones: null });
    await ctx.db.query(`INSERT INTO feed_clients (client_id, secret_hash, role) VALUES ('bench', 'scrypt$x', 'city')`);

    // as the hosts listen (bin/api.ts): the hot path before Koa
    server = createServer(withHotPath(buildApp(ctx))).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const apiPort = (server.address() as AddressInfo).port;
    {
      const t0 = performance.now();
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${apiPort}/v1/partner-apis/mds/${ZONE}/trips?end_time=${HOUR}`, {
          headers: { Authorization: `Bearer ${accessToken}`, 'Accept-Encoding': 'gzip' },
        });
        await res.arrayBuffer();
      }
      metrics.api_sequential_ms = Math.round(((performance.now() - t0) / 20) * 10) / 10;
    }
    const route = `/v1/partner-apis/mds/${ZONE}/trips?end_time=${HOUR}`;
    const auth = { Authorization: `Bearer ${accessToken}`, 'Accept-Encoding': 'gzip' };
    // the answers measured are signed answers (the caches are warm: this one is the hot path's)
    metrics.signed_verified = (await verifiedAnswer(`http://127.0.0.1:${apiPort}`, route, auth)) ? 1 : 0;
    metrics.ed25519_sign_us = ed25519SignUs();
    Object.assign(metrics, await signerCostNs(ctx, route));
    const gzOnly = { 'Accept-Encoding': 'gzip' };

    // Every server up first, idle until its turn.
    const bare = opts.routeAndNginxOnly ? undefined : await startBareNode(gz);
    if (bare) stops.push(() => new Promise((r) => bare.server.close(() => r())));
    // Several API processes (DESIGN.md: how the API scales), when bin/api.ts provides API_WORKERS.
    const workers = opts.routeAndNginxOnly
      ? undefined
      : await startApiWorkers(
          2,
          {
            NODE_ENV: 'production',
            MODE: 'staging',
            SIGNING_SECRET: config.signingSecret,
            DATABASE_URL: database.url,
            STORE_URL: config.storeUrl,
            LOG_LEVEL: 'silent',
          },
          accessToken,
          notes,
        );
    if (workers) stops.push(workers.stop);
    const bin = ensureNginx(notes);
    const nginx1 = bin ? await startNginx(bin, dir, body, gz, 1) : undefined;
    const nginx2 = bin && !opts.routeAndNginxOnly ? await startNginx(bin, dir, body, gz, 2) : undefined;
    for (const n of [nginx1, nginx2]) if (n) stops.push(n.stop);
    if (bin && !nginx1) notes.push('nginx did not start: comparison skipped');

    // cpu: the server's CPU time (µs) so far, for the single-process targets
    const targets: Array<{ name: string; url: string; headers: Record<string, string>; cpu?: () => number }> = [
      { name: 'api', url: `http://127.0.0.1:${apiPort}${route}`, headers: auth, cpu: selfCpuUs },
      ...(nginx1 ? [{ name: 'nginx', url: `http://127.0.0.1:${nginx1.port}/trips/${HOUR}.json`, headers: gzOnly, cpu: () => procCpuUs(nginx1.pid) }] : []),
      ...(bare ? [{ name: 'bare_node', url: `http://127.0.0.1:${bare.port}/`, headers: gzOnly, cpu: selfCpuUs }] : []),
      ...(workers ? [{ name: 'api_2_workers', url: `http://127.0.0.1:${workers.port}${route}`, headers: auth }] : []),
      ...(nginx2 ? [{ name: 'nginx_2_workers', url: `http://127.0.0.1:${nginx2.port}/trips/${HOUR}.json`, headers: gzOnly }] : []),
    ];
    const rps = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const mbps = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const cpuPerReq = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    let tool = '';
    for (let round = 0; round < ROUNDS; round++) {
      // every other round in reverse order: a drift of the machine's load within a round favours no target
      for (const t of round % 2 ? [...targets].reverse() : targets) {
        const cpu0 = t.cpu?.();
        const r = await cannon(t.url, t.headers, notes);
        if (t.cpu && r.requests > 0) cpuPerReq.get(t.name)!.push((t.cpu() - cpu0!) / r.requests);
        tool = r.tool;
        rps.get(t.name)!.push(r.rps);
        mbps.get(t.name)!.push(r.bytesPerSec / 1e6);
        if (r.errors || r.non2xx) notes.push(`${t.name} round ${round + 1}: ${r.errors} errors, ${r.non2xx} non-2xx`);
      }
    }
    notes.push(
      `load generator: ${tool} (2 threads), ${CONNECTIONS} connections, ${ROUNDS} rounds × ${DURATION_S} s per target (every other round in reverse order), medians; on the same machine as the servers (${availableParallelism()} CPUs): every figure is "server + load generator sharing these CPUs"`,
    );
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    /** median over rounds of a/b measured in the same round */
    const ratio = (a: string, b: string) => {
      const xs = rps.get(a),
        ys = rps.get(b);
      return xs?.length && ys?.length ? Math.round(median(xs.map((x, i) => x / ys[i])) * 100) / 100 : null;
    };
    for (const t of targets) {
      metrics[`${t.name}_rps`] = Math.round(median(rps.get(t.name)!));
      if (t.name === 'api' || t.name === 'nginx') metrics[`${t.name}_mb_per_s`] = Math.round(median(mbps.get(t.name)!) * 10) / 10;
      const cpu = cpuPerReq.get(t.name)!;
      if (cpu.length) metrics[`${t.name}_cpu_us_per_req`] = Math.round(median(cpu));
    }
    notes.push(`rps by round: ${targets.map((t) => `${t.name} ${rps.get(t.name)!.map(Math.round).join('/')}`).join('; ')}`);
    notes.push(
      `server CPU µs per answer by round: ${targets
        .filter((t) => t.cpu)
        .map((t) => `${t.name} ${cpuPerReq.get(t.name)!.map(Math.round).join('/')}`)
        .join('; ')}`,
    );
    metrics.api_vs_nginx = ratio('api', 'nginx');
    metrics.api_vs_bare_node = ratio('api', 'bare_node');
    metrics.bare_node_vs_nginx = ratio('bare_node', 'nginx');
    // the ceiling of the goal: what one Node process answering the same bytes from memory and doing
    // nothing else reaches in the same rounds (Node has no sendfile: every answer is copied into the socket)
    if (metrics.bare_node_vs_nginx != null && metrics.api_vs_bare_node != null)
      notes.push(
        `one Node process answering the same bytes from memory with nothing else (bare_node) reached ${metrics.bare_node_vs_nginx} of nginx in these rounds; the route reached ${metrics.api_vs_bare_node} of that`,
      );
    if (!workers) metrics.api_2_workers_rps = null;
    metrics.api_2_workers_vs_nginx = ratio('api_2_workers', 'nginx');
    metrics.api_2_workers_vs_nginx_2_workers = ratio('api_2_workers', 'nginx_2_workers');
    while (stops.length) await stops.pop()!();

    metrics.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024);
    notes.push(`load average at end: ${load()}; peak_rss_mb is this process (bench + in-process API, FEED_CACHE_BYTES=${config.feedCacheBytes})`);
  } finally {
    while (stops.length) await stops.pop()!().catch(() => undefined);
    if (server) await new Promise((r) => server!.close(r));
    await ctx.db.close();
    await ctx.store.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    name: 'feeds',
    metrics,
    goals: [
      { metric: 'api_vs_nginx', goal: '>= 0.80', met: metrics.api_vs_nginx == null ? null : metrics.api_vs_nginx >= 0.8 },
      { metric: 'signed_verified', goal: '= 1 (the answers measured are signed, and verify)', met: metrics.signed_verified === 1 },
    ],
    notes,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(
    (r) => {
      console.log(`\nfeeds bench (${CONNECTIONS} connections, ${DURATION_S} s each)`);
      for (const [k, v] of Object.entries(r.metrics)) console.log(`  ${k.padEnd(28)} ${v ?? 'n/a'}`);
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
