/**
 * Graceful shutdown of the real entry point (bin/run.ts as a child process): SIGTERM stops accepting
 * new connections, lets the request in flight finish, stops the publisher and exits 0.
 */
import { freePort } from './support/faults.js';
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { Db } from '../lib/db.js';
import { createLogger } from '../lib/log.js';
import { insertPartner, insertZone, insertVehicle, insertUser } from './support/partner-fixtures.js';
import { ROOT } from '../lib/paths.js';


describe('graceful shutdown (bin/run.ts)', function () {
  this.timeout(90000);
  let database: TestDatabase;
  let child: ChildProcess | undefined;
  let store: string;

  before(async () => {
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'shutdown-store-'));
  });
  after(async () => {
    child?.kill('SIGKILL');
    await database.drop();
    rmSync(store, { recursive: true, force: true });
  });

  it('finishes the request in flight, refuses new connections and exits 0 on SIGTERM', async () => {
    const db = new Db(database.url, createLogger('silent'));
    const partner = await insertPartner(db);
    const zone = await insertZone(db);
    const vehicle = await insertVehicle(db, zone);
    const user = await insertUser(db, partner.id);
    await db.close();

    const port = await freePort();
    const legacyPort = await freePort();
    child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'run.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: database.url,
        STORE_URL: `file://${store}`,
        PORT: String(port),
        LEGACY_PORT: String(legacyPort),
        SEED_DEMO: '0',
        // the live simulator would rent the test's vehicle too
        LIVE_SIMULATOR: 'false',
        LOG_LEVEL: 'warn',
        // the unlock takes 1.5 s: the start request is still in flight when SIGTERM arrives
        GATEWAY_DELAY_MS: '1500',
        SHUTDOWN_TIMEOUT_MS: '5000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    for (let i = 0; i < 300 && !out.includes('Ctrl-C stops everything'); i++) await new Promise((r) => setTimeout(r, 100));
    expect(out, out).to.contain('Ctrl-C stops everything');

    const base = `http://127.0.0.1:${port}`;
    const inFlight = fetch(`${base}/v1/rental/start`, {
      method: 'POST',
      headers: { 'X-Auth-Token': partner.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ userId: user, vehicleId: vehicle.id }),
    });
    await new Promise((r) => setTimeout(r, 400));
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    // a new connection after SIGTERM is refused (the listener is closed)
    const late = await fetch(`${base}/healthz`).then(
      () => 'answered',
      () => 'refused',
    );
    expect(late).to.equal('refused');
    const res = await inFlight;
    expect(res.status).to.equal(200);
    expect(((await res.json()) as any).data[0].attributes.state).to.equal('RUNNING');
    const [code] = await exited;
    expect(code, out).to.equal(0);
    child = undefined;
  });
});
