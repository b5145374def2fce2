/**
 * Builds the parts a process needs from the config: database pool, object store, logger, clock and
 * vehicle gateway. Used by bin/run.ts, bin/ops.ts and the benchmarks, so every entry point wires the
 * same way.
 */
import type { Config } from '../core/config.js';
import { Db } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { systemClock } from '../core/clock.js';
import { SimulatedGateway } from './gateway.js';
import { openStore } from '../core/store/index.js';
import { instrumentStore } from '../core/store/instrumented.js';
import { registerDbCollectors } from '../core/metrics.js';
import type { AppContext } from './context.js';

export async function createContext(config: Config, opts: { applicationName?: string; logLevel?: string } = {}): Promise<AppContext> {
  const log = createLogger(opts.logLevel ?? config.logLevel);
  const db = new Db(config.databaseUrl, log, {
    max: config.databasePoolSize,
    applicationName: opts.applicationName ?? 'platform',
    replicaUrl: config.databaseReplicaUrl,
  });
  const store = instrumentStore(await openStore(config));
  registerDbCollectors(db);
  const gateway = new SimulatedGateway({
    failRate: config.mode === 'staging' ? 0 : config.gateway.failRate,
    delayMs: config.gateway.delayMs,
    timeoutMs: config.gateway.timeoutMs,
  });
  return { config, db, store, log, clock: systemClock, gateway };
}

export async function closeContext(ctx: AppContext): Promise<void> {
  await Promise.allSettled([ctx.db.close(), ctx.store.close()]);
}
