/**
 * Per-test-file context: a cloned database, a filesystem store in a temp folder, a manual clock, a
 * simulated vehicle gateway and a silent logger, the same parts `bin/run.ts` wires in production.
 *
 *   const t = useTestContext();          // in a describe(): before/after hooks are registered
 *   it('…', async () => { t.ctx.db … });
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testConfig, type Config } from '../../lib/core/config.js';
import { Db } from '../../lib/core/db.js';
import { createLogger } from '../../lib/core/log.js';
import { ManualClock } from '../../lib/core/clock.js';
import { SimulatedGateway } from '../../lib/domain/gateway.js';
import { openStore } from '../../lib/core/store/index.js';
import type { AppContext } from '../../lib/domain/context.js';
import { cloneDatabase, type TestDatabase } from './db.js';

export interface TestContext {
  ctx: AppContext & { clock: ManualClock; gateway: SimulatedGateway };
  database: TestDatabase;
  storeDir: string;
}

export function useTestContext(opts: { config?: Record<string, string>; now?: string | Date } = {}): TestContext {
  const t = {} as TestContext;
  before(async function () {
    this.timeout(60000);
    t.database = await cloneDatabase();
    t.storeDir = mkdtempSync(join(tmpdir(), 'store-'));
    const config: Config = testConfig({ DATABASE_URL: t.database.url, STORE_URL: `file://${t.storeDir}`, ...opts.config });
    const log = createLogger(config.logLevel);
    t.ctx = {
      config,
      db: new Db(config.databaseUrl, log, { max: 30 }),
      store: await openStore(config),
      log,
      clock: new ManualClock(opts.now ?? Date.now()),
      gateway: new SimulatedGateway({ timeoutMs: 200 }),
    };
  });
  // a file with a failed test keeps its database (and store folder) for inspection; the next run's
  // global setup drops what runs that have ended left behind (test/support/global.ts)
  let failed = false;
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60000);
    await t.ctx?.db.close();
    await t.ctx?.store.close();
    if (failed && t.database) {
      console.log(`      kept for inspection: database ${t.database.name} (psql ${t.database.url}), store ${t.storeDir}`);
      return;
    }
    await t.database?.drop();
    if (t.storeDir) rmSync(t.storeDir, { recursive: true, force: true });
  });
  return t;
}
