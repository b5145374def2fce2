/**
 * A publisher process serves its own Prometheus metrics (issue 26): the real bin/publisher.ts, as a
 * process of its own on a test database, answers GET /metrics on METRICS_HOST:PUBLISHER_METRICS_PORT
 * (loopback) with the default process metrics, the figures it records itself (the hourly files it
 * publishes, the objects it writes to the store: its hourly files, object for object and byte for
 * byte) and the cluster's gauges, and nothing only an API process records; any other path is
 * 404, and the listener closes with the process on SIGTERM. Under `make run` (bin/run.ts) the
 * publisher child's listener sits on the port after the API's, both printed in the banner, and a
 * configuration that puts them on one port ends the run at once with one line.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../lib/core/config.js';
import { Db } from '../lib/core/db.js';
import { HOUR_MS } from '../lib/feeds/hours.js';
import { registryWithout } from '../lib/core/metrics-listener.js';
import { createLogger } from '../lib/core/log.js';
import { API_ONLY_METRICS, registry } from '../lib/core/metrics.js';
import { ROOT } from '../lib/core/paths.js';
import { publisherRegistry } from '../publisher/index.js';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { freePort, waitFor } from './support/faults.js';
import { feedZone } from './support/feed-fixtures.js';
import { entry } from './support/entries.js';

/** A child process with its output collected and its exit awaited. */
interface Proc {
  child: ChildProcess;
  out(): string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

function start(name: 'publisher' | 'run', env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [entry(name)], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '5000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  return { child, out: () => out, exited: once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]> };
}

/** A scrape: status, content type and body; undefined while nothing listens. */
async function scrape(url: string): Promise<{ status: number; type: string; body: string } | undefined> {
  const res = await fetch(url).catch(() => undefined);
  return res && { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

/** The metric families a scrape declares (its `# TYPE` lines). */
const families = (body: string) => new Set([...body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));

/** A loopback port whose next port is free too (make run's default pair). */
async function freePair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port === 65535) continue;
    const next = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port + 1, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (next) return port;
  }
}

/** Every family of the publisher's /metrics that the process metrics and its own work must show. */
const PUBLISHER_FAMILIES = [
  // prom-client's default metrics: memory, CPU, the event loop
  'process_resident_memory_bytes',
  'process_cpu_seconds_total',
  'nodejs_eventloop_lag_seconds',
  'nodejs_heap_size_used_bytes',
  // recorded by this process
  'feed_publish_duration_seconds',
  'feed_publish_failures_total',
  'store_errors_total',
  'store_objects_written_total',
  'store_bytes_written_total',
  'store_writes_skipped_total',
  'rentals_ended_total',
  'gbfs_job_duration_seconds',
  'jobs_run_total',
  // the cluster's, read from Postgres at scrape time
  'feed_publish_lag_seconds',
  'feed_dirty_hours',
  'jobs_queue_depth',
  'jobs_failed',
  'history_partitions',
  'db_replica_replay_lag_bytes',
];

describe('publisher metrics', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let store: string;
  const procs: Proc[] = [];

  before(async function () {
    this.timeout(60_000);
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'publisher-metrics-store-'));
    // a zone three hours old: the publisher has hourly files to publish at its start
    const db = new Db(database.url, createLogger('silent'), { max: 1 });
    try {
      await feedZone(db, { createdAt: new Date(Date.now() - 3 * HOUR_MS) });
    } finally {
      await db.close();
    }
  });

  after(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    await database?.drop();
    if (store) rmSync(store, { recursive: true, force: true });
  });

  it('the publisher registry is the process registry without the series only an API process records', () => {
    const names = publisherRegistry()
      .getMetricsAsArray()
      .map((m) => m.name);
    for (const name of PUBLISHER_FAMILIES) expect(names, name).to.include(name);
    for (const name of API_ONLY_METRICS) expect(names, name).to.not.include(name);
    expect(names).to.have.length(registry.getMetricsAsArray().length - API_ONLY_METRICS.length);
    expect(() => registryWithout(registry, ['no_such_metric']), 'a name the registry lacks').to.throw(/no metric named no_such_metric/);
  });

  it('PUBLISHER_METRICS_PORT: the port after METRICS_PORT unless set; 0 (a free port) where METRICS_PORT is 0; checked like every port', () => {
    const base = { DATABASE_URL: 'postgres://unused.invalid/none', SIGNING_SECRET: 'x'.repeat(32) };
    const metrics = (env: Record<string, string>) => loadConfig({ ...base, ...env }).metrics;
    expect(metrics({ NODE_ENV: 'production' })).to.include({ host: '127.0.0.1', port: 9464, publisherPort: 9465 });
    expect(metrics({ NODE_ENV: 'production', METRICS_PORT: '9600' })).to.include({ port: 9600, publisherPort: 9601 });
    expect(metrics({ NODE_ENV: 'production', PUBLISHER_METRICS_PORT: '9700' })).to.include({ port: 9464, publisherPort: 9700 });
    expect(metrics({ NODE_ENV: 'production', METRICS_PORT: '0' })).to.include({ port: 0, publisherPort: 0 });
    expect(metrics({ NODE_ENV: 'test' })).to.include({ port: 0, publisherPort: 0 });
    expect(metrics({ NODE_ENV: 'production', METRICS_HOST: '10.0.0.5' })).to.include({ host: '10.0.0.5', publisherPort: 9465 });
    expect(() => metrics({ PUBLISHER_METRICS_PORT: '70000' })).to.throw(ConfigError, /PUBLISHER_METRICS_PORT must be between 0 and 65535/);
    expect(() => metrics({ PUBLISHER_METRICS_PORT: 'next' })).to.throw(ConfigError, /PUBLISHER_METRICS_PORT must be an integer/);
  });

  it('bin/publisher.ts answers GET /metrics on its loopback listener with its own figures, 404 elsewhere, and closes it on SIGTERM', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/metrics`;
    const p = start('publisher', { DATABASE_URL: database.url, STORE_URL: `file://${store}`, PUBLISHER_METRICS_PORT: String(port) });
    procs.push(p);
    const first = await waitFor(
      'the publisher to serve /metrics',
      async () => (await scrape(url)) ?? (p.child.exitCode !== null ? 'exited' : undefined),
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${p.out()}`);
    });
    expect(first, p.out()).to.not.equal('exited');
    // the listener is up before the workers start; the start line names it once they run
    await waitFor('the start line, naming the URL', () => p.out().includes(`"metrics":"${url}"`) && p.out().includes('publisher running'), 60_000);

    // the files due at its start are published by this process: their durations are its own series
    const res = await waitFor('a publish duration in the publisher', async () => {
      const r = await scrape(url);
      return r &&
        /^feed_publish_duration_seconds_count\{feed="[^"]+",version="[^"]+"\} [1-9]/m.test(r.body) &&
        /^jobs_run_total\{queue="feeds-publish-hour",outcome="done"\} [1-9]/m.test(r.body) &&
        /^gbfs_job_duration_seconds_count\{kind="zone",work="[a-z]+"\} [1-9]/m.test(r.body)
        ? r
        : undefined;
    });
    expect(res.status).to.equal(200);
    expect(res.type).to.match(/^text\/plain; version=0\.0\.4/);
    const declared = families(res.body);
    for (const name of PUBLISHER_FAMILIES) expect(declared, name).to.include(name);
    for (const name of API_ONLY_METRICS) expect(declared, name).to.not.include(name);
    expect(res.body).to.match(/^process_resident_memory_bytes [1-9]/m);
    expect(res.body).to.match(/^jobs_queue_depth\{queue="feeds-publish-hour"\} \d+/m);
    expect(res.body, 'no series of HTTP requests: scrapes are not counted').to.not.match(/^http_/m);
    expect(res.body).to.match(/^store_objects_written_total\{kind="gbfs"\} [1-9]/m);
    expect(res.body, 'every kind from the start').to.match(/^store_writes_skipped_total\{kind="report"\} \d+/m);

    // the objects it wrote are counted where they are written: once its hourly files are all
    // published, the hourly counters are their number and their bytes, as the index records them
    const db = new Db(database.url, createLogger('silent'), { max: 1 });
    try {
      const series = (body: string, name: string) => Number(new RegExp(`^${name}\\{kind="hourly"\\} (\\d+)$`, 'm').exec(body)?.[1]);
      const counted = await waitFor('the hourly files counted as the index records them', async () => {
        const body = (await scrape(url))?.body ?? '';
        const ix = await db.one<{ n: number; bytes: number }>(
          `SELECT count(*)::int AS n, coalesce(sum(bytes), 0)::float8 AS bytes FROM feed_publications WHERE status = 'published'`,
        );
        const c = { n: series(body, 'store_objects_written_total'), bytes: series(body, 'store_bytes_written_total') };
        return c.n > 0 && c.n === ix.n && c.bytes === ix.bytes && c;
      });
      expect(counted.bytes).to.be.greaterThan(0);
    } finally {
      await db.close();
    }

    for (const path of ['/', '/healthz', '/metrics/x', '/v1/vehicles']) {
      expect((await scrape(`http://127.0.0.1:${port}${path}`))?.status, path).to.equal(404);
    }

    p.child.kill('SIGTERM');
    const [code] = await p.exited;
    expect(code, p.out()).to.equal(0);
    expect(await scrape(url), 'the listener is closed').to.equal(undefined);
  });

  it("make run (bin/run.ts): the publisher child's listener on the port after the API's, both in the banner; one port for both ends the run", async function () {
    this.timeout(150_000);
    const metricsPort = await freePair();
    const env = {
      DATABASE_URL: database.url,
      STORE_URL: `file://${store}`,
      PORT: String(await freePort()),
      LEGACY_PORT: String(await freePort()),
      METRICS_PORT: String(metricsPort),
      SEED_DEMO: '0',
      LIVE_SIMULATOR: 'false',
      LOG_LEVEL: 'warn',
    };
    const run = start('run', env);
    procs.push(run);
    const banner = await waitFor(
      'the banner',
      () => /Metrics +API (\S+) +publisher (\S+)/.exec(run.out()) ?? (run.child.exitCode !== null ? 'exited' : undefined),
      90_000,
    ).catch(() => undefined);
    expect(Array.isArray(banner), run.out()).to.equal(true);
    const [, api, publisher] = banner as RegExpExecArray;
    expect(api).to.equal(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(publisher).to.equal(`http://127.0.0.1:${metricsPort + 1}/metrics`);

    const apiScrape = await scrape(api);
    const pubScrape = await scrape(publisher);
    expect(apiScrape?.status).to.equal(200);
    expect(pubScrape?.status).to.equal(200);
    expect(families(apiScrape!.body), 'the API serves its requests').to.include('http_requests_total');
    const pub = families(pubScrape!.body);
    expect(pub).to.include('feed_publish_duration_seconds').and.include('nodejs_eventloop_lag_seconds');
    expect(pub, 'the publisher does not').to.not.include('http_requests_total');

    run.child.kill('SIGTERM');
    const [code] = await run.exited;
    expect(code, run.out()).to.equal(0);
    expect(await scrape(publisher), "the child's listener is closed").to.equal(undefined);

    const clash = start('run', { ...env, PUBLISHER_METRICS_PORT: String(metricsPort) });
    procs.push(clash);
    const [clashCode] = await clash.exited;
    expect(clashCode, clash.out()).to.equal(2);
    expect(clash.out()).to.contain(`configuration error: PUBLISHER_METRICS_PORT=${metricsPort} is METRICS_PORT`);
  });
});
