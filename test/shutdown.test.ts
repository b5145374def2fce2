/**
 * Shutdown of the real entry point (bin/run.ts as a child process, the API in it and the publisher in
 * a process of its own): SIGTERM stops accepting new connections, lets the request in flight
 * finish, stops the publisher process and exits 0 after it, leaving no session on the database (so
 * that `make run`'s scripts/pg.sh can stop the embedded Postgres); a publisher process that dies
 * otherwise ends the run with exit code 1 and a line saying so.
 */
import { freePort, waitFor } from './support/faults.js';
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { get as httpGet } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { insertPartner, insertZone, insertVehicle, insertUser } from './support/partner-fixtures.js';
import { ROOT } from '../lib/core/paths.js';
import { entry } from './support/entries.js';

interface Run {
  child: ChildProcess;
  base: string;
  /** the publisher process's pid, from the banner */
  publisherPid: number;
  out(): string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('shutdown (bin/run.ts)', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let store: string;
  const runs: Run[] = [];

  before(async () => {
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'shutdown-store-'));
  });
  after(async () => {
    for (const r of runs) {
      r.child.kill('SIGKILL');
      if (alive(r.publisherPid)) process.kill(r.publisherPid, 'SIGKILL');
    }
    await database.drop();
    rmSync(store, { recursive: true, force: true });
  });

  /** bin/run.ts on loopback ports, once its banner is out. */
  async function start(env: Record<string, string>): Promise<Run> {
    const port = await freePort();
    const child = spawn(process.execPath, [entry('run')], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: database.url,
        STORE_URL: `file://${store}`,
        PORT: String(port),
        LEGACY_PORT: String(await freePort()),
        SEED_DEMO: '0',
        // the live simulator would rent the test's vehicle too
        LIVE_SIMULATOR: 'false',
        LOG_LEVEL: 'warn',
        SHUTDOWN_TIMEOUT_MS: '5000',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    // two processes load their modules: slow on a busy machine
    const banner = await waitFor('the banner', () => /Processes +API \d+; publisher (\d+)/.exec(out) ?? child.exitCode !== null, 90_000, 100).catch(
      () => undefined,
    );
    expect(Array.isArray(banner), out).to.equal(true);
    const run: Run = { child, base: `http://127.0.0.1:${port}`, publisherPid: Number((banner as RegExpExecArray)[1]), out: () => out, exited };
    runs.push(run);
    expect(out).to.contain('Ctrl-C stops everything');
    expect(alive(run.publisherPid), 'the publisher process runs').to.equal(true);
    return run;
  }

  it('finishes the request in flight, refuses new connections, stops the publisher process and exits 0 after it on SIGTERM', async () => {
    const db = new Db(database.url, createLogger('silent'));
    const partner = await insertPartner(db);
    const zone = await insertZone(db);
    const vehicle = await insertVehicle(db, zone);
    const user = await insertUser(db, partner.id);
    await db.close();

    // the unlock takes 3 s: the start request is still in flight when SIGTERM arrives, and stays in
    // flight while the signal is handled
    const run = await start({ GATEWAY_DELAY_MS: '3000' });
    const inFlight = fetch(`${run.base}/v1/rental/start`, {
      method: 'POST',
      headers: { 'X-Auth-Token': partner.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ userId: user, vehicleId: vehicle.id }),
    });
    let finished = false;
    void inFlight.finally(() => (finished = true)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 400));
    run.child.kill('SIGTERM');
    // a new connection after SIGTERM is refused (the listener is closed) while the request in
    // flight still runs. The child handles the signal when its event loop gets to it, which under
    // the parallel suite took longer than a fixed pause (a CI run was answered 200 ms after the
    // kill), so the probe tries again; each try on a connection of its own (no agent), since one
    // kept alive from a try answered before the signal would still be answered after it
    const probe = () =>
      new Promise<string>((resolve) => {
        const req = httpGet(`${run.base}/healthz`, { agent: false }, (res) => {
          res.resume();
          resolve('answered');
        });
        req.on('error', () => resolve('refused'));
      });
    let late = 'answered';
    for (const deadline = Date.now() + 5000; late === 'answered' && !finished && Date.now() < deadline;) {
      late = await probe();
      if (late === 'answered') await new Promise((r) => setTimeout(r, 50));
    }
    expect(late).to.equal('refused');
    expect(finished, 'refused while the request in flight still ran').to.equal(false);
    const res = await inFlight;
    expect(res.status).to.equal(200);
    expect(((await res.json()) as any).data[0].attributes.state).to.equal('RUNNING');
    const [code] = await run.exited;
    expect(code, run.out()).to.equal(0);
    expect(run.out()).to.not.contain('exited unexpectedly');
    expect(alive(run.publisherPid), 'the publisher process ended before bin/run.ts').to.equal(false);
    // what scripts/pg.sh checks before it stops the embedded cluster: no session left (a backend
    // may take a moment to notice its client is gone)
    const check = new Db(database.url, createLogger('silent'), { max: 1 });
    try {
      await waitFor(
        'no session of the run left',
        async () => (await check.one(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)).n === 0,
        5000,
      );
    } finally {
      await check.close();
    }
  });

  it('ends with exit code 1 and one line naming the publisher process when that process dies', async () => {
    const run = await start({});
    process.kill(run.publisherPid, 'SIGKILL');
    const [code] = await run.exited;
    expect(code, run.out()).to.equal(1);
    expect(run.out()).to.contain(`run: the publisher process (pid ${run.publisherPid}) exited unexpectedly (signal SIGKILL); stopping everything`);
    expect(
      await fetch(`${run.base}/healthz`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).to.equal('refused');
  });
});
