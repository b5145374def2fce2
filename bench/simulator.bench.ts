/**
 * Fleet simulator benchmark: one day of history for 10,000 vehicles (5,000 in each demo zone) in a
 * fresh database cloned from the migrated template, seeded with the demo data. Reports the rows
 * written (rentals, trips, events, telemetry, TOMP bookings and legs) per second of wall time.
 * Goal: the day takes seconds to a few minutes (≤ 180 s).
 *
 * `npx tsx bench/simulator.bench.ts` runs it directly; `run()` is for bench/run.ts.
 */
import type { BenchResult } from './types.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ManualClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import { seedDemo } from '../ops/seed/index.js';
import { simulateHistory } from '../ops/sim/index.js';
import { cloneDatabase } from '../test/support/db.js';

const VEHICLES_PER_ZONE = Number(process.env.BENCH_SIM_VEHICLES_PER_ZONE ?? 5000);
const GOAL_S = 180;

export async function run(): Promise<BenchResult> {
  const database = await cloneDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'sim-bench-'));
  const config = testConfig({ DATABASE_URL: database.url, STORE_URL: `file://${join(dir, 'store')}`, LOG_LEVEL: 'silent' });
  const log = createLogger('silent');
  const db = new Db(config.databaseUrl, log, { statementTimeoutMs: 600000 });
  const ctx: AppContext = {
    config,
    db,
    store: await openStore(config),
    log,
    clock: new ManualClock('2026-03-10T12:00:00Z'),
    gateway: new SimulatedGateway({}),
  };
  try {
    await seedDemo(ctx, { vehiclesPerZone: 50 });
    const started = performance.now();
    const s = await simulateHistory(ctx, { days: 1, vehicles: VEHICLES_PER_ZONE, seed: 42, end: ctx.clock.now() });
    const seconds = (performance.now() - started) / 1000;
    const rowsPerSecond = Math.round(s.rowsWritten / seconds);
    const figures = { 'wall time (s)': Math.round(seconds * 10) / 10 };
    return {
      name: 'simulator',
      metrics: {
        vehicles: s.vehicles,
        rentals: s.rentals,
        events: s.events,
        telemetry: s.telemetry,
        rows_written: s.rowsWritten,
        wall_s: figures['wall time (s)'],
        rows_per_s: rowsPerSecond,
      },
      goals: [{ metric: 'wall_s', goal: `one day of ${s.vehicles} vehicles ≤ ${GOAL_S} s`, met: seconds <= GOAL_S }],
      notes: ['wall time includes putting the added vehicles into service, users, the COPY of every table and the final vehicle update, in one transaction'],
    };
  } finally {
    await db.close();
    await ctx.store.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(
    (r) => {
      console.log(`\nsimulator bench`);
      for (const [k, v] of Object.entries(r.metrics)) console.log(`  ${k.padEnd(20)} ${v}`);
      for (const g of r.goals) console.log(`  goal ${g.goal}: ${g.met ? 'met' : 'NOT met'}`);
      for (const n of r.notes) console.log(`  note: ${n}`);
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
