/**
 * Builds the parts a process needs from the config: database pool, object store, logger, clock and
 * vehicle gateway. Used by bin/run.ts, bin/ops.ts and the benchmarks, so every entry point wires the
 * same way.
 */
import { ConfigError, type Config } from '../core/config.js';
import { Db } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { systemClock } from '../core/clock.js';
import { hostname } from 'node:os';
import { GatewayError, SimulatedGateway, type VehicleGateway } from './gateway.js';
import { MqttGateway } from './vehicles/mqtt-gateway.js';
import { openStore } from '../core/store/index.js';
import { instrumentStore } from '../core/store/instrumented.js';
import { registerDbCollectors } from '../core/metrics.js';
import type { AppContext } from './context.js';

export interface ContextOptions {
  applicationName?: string;
  logLevel?: string;
  /** false: this process commands no vehicle (the ingest): no gateway connection; a command would be a bug and fails */
  vehicles?: boolean;
}

/** The gateway of a process that commands no vehicle. */
const NO_VEHICLE_COMMANDS: VehicleGateway = {
  unlock: () => Promise.reject(new GatewayError('this process commands no vehicle', 'unreachable', 'unlock')),
  lock: () => Promise.reject(new GatewayError('this process commands no vehicle', 'unreachable', 'lock')),
  setMaxSpeed: () => Promise.reject(new GatewayError('this process commands no vehicle', 'unreachable', 'set_speed')),
};

export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  // production commands real vehicles, never simulated ones, and without their broker it cannot:
  // the simulated vehicles answer in MODE=staging (every command succeeds) and in the test suite's
  // own processes (NODE_ENV=test, failing as a test scripts)
  if (opts.vehicles !== false && config.mode === 'production' && !config.mqtt && config.env !== 'test')
    throw new ConfigError(
      'MODE=production commands real vehicles through their broker: set MQTT_URL (and MQTT_PASSWORD or MQTT_PASSWORD_FILE), or MODE=staging for simulated vehicles that accept every command',
    );
  const log = createLogger(opts.logLevel ?? config.logLevel);
  const db = new Db(config.databaseUrl, log, {
    max: config.databasePoolSize,
    applicationName: opts.applicationName ?? 'platform',
    replicaUrl: config.databaseReplicaUrl,
  });
  const store = instrumentStore(await openStore(config));
  registerDbCollectors(db);
  const gateway =
    opts.vehicles === false
      ? NO_VEHICLE_COMMANDS
      : config.mqtt && config.mode === 'production'
        ? await MqttGateway.connect({
            ...config.mqtt,
            // one topic level per process: its replies come to it alone
            gatewayId:
              `${(opts.applicationName ?? 'platform').replace(/[^A-Za-z0-9_-]/g, '_')}-${hostname().replace(/[^A-Za-z0-9_-]/g, '_')}-${process.pid}`.slice(
                0,
                64,
              ),
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
