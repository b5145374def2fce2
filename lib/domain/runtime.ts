/**
 * Builds the parts a process needs from the config: database pool, object store, logger, clock and
 * vehicle gateway. Used by bin/run.ts, bin/ops.ts and the benchmarks, so every entry point wires the
 * same way.
 */
import type { Config } from '../core/config.js';
import { Db } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { systemClock } from '../core/clock.js';
import { hostname } from 'node:os';
import { SimulatedGateway } from './gateway.js';
import { MqttGateway } from './vehicles/mqtt-gateway.js';
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
  // MODE=staging answers every command (the requirement's staging host); with a broker configured the
  // commands go to the vehicles; otherwise the simulated vehicles of the demo answer them
  const gateway =
    config.mqtt && config.mode === 'production'
      ? await MqttGateway.connect({
          ...config.mqtt,
          // one topic level per process: its replies come to it alone
          gatewayId:
            `${(opts.applicationName ?? 'platform').replace(/[^A-Za-z0-9_-]/g, '_')}-${hostname().replace(/[^A-Za-z0-9_-]/g, '_')}-${process.pid}`.slice(0, 64),
          timeoutMs: config.gateway.timeoutMs,
          log,
        })
      : new SimulatedGateway({
          failRate: config.mode === 'staging' ? 0 : config.gateway.failRate,
          delayMs: config.gateway.delayMs,
          timeoutMs: config.gateway.timeoutMs,
        });
  return { config, db, store, log, clock: systemClock, gateway };
}

export async function closeContext(ctx: AppContext): Promise<void> {
  await Promise.allSettled([ctx.db.close(), ctx.store.close(), ctx.gateway instanceof MqttGateway ? ctx.gateway.close() : undefined]);
}
