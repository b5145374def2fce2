/**
 * An ingest process (bin/ingest.ts alone, or the ingest child of `make run`, bin/run.ts): the
 * context without a vehicle gateway, its metrics listener, the ingest, and a clean stop on SIGINT or
 * SIGTERM (or when `stopWhen` resolves: the supervisor of `make run` gone). A stop writes and
 * acknowledges what the ingest holds, leaves the shared group and exits 0 (ingest/index.ts stop()).
 */
import type { Config } from '../lib/core/config.js';
import { listenOrExit } from '../lib/core/listen.js';
import { buildMetricsListener, metricsUrl, registryWithout } from '../lib/core/metrics-listener.js';
import { API_ONLY_METRICS, registry } from '../lib/core/metrics.js';
import { ConfigError } from '../lib/core/config.js';
import { closeContext, createContext } from '../lib/domain/runtime.js';
import { startIngest } from './index.js';

export interface IngestProcessHooks {
  /** once the ingest is subscribed: its metrics URL */
  onReady?: (metrics: string) => void;
  /** before it stops, with what stopped it */
  onStopping?: (signal: string) => void;
  /** a stop that does not come as a signal */
  stopWhen?: Promise<string>;
}

export async function runIngestProcess(config: Config, hooks: IngestProcessHooks = {}): Promise<void> {
  if (!config.mqtt) throw new ConfigError('the ingest reads the vehicle broker: set MQTT_URL (and MQTT_PASSWORD or MQTT_PASSWORD_FILE)');
  const ctx = await createContext(config, { applicationName: 'ingest', vehicles: false });
  const app = buildMetricsListener(registryWithout(registry, API_ONLY_METRICS), ctx.log).callback();
  const server = await listenOrExit((req, res) => void app(req, res), config.ingest.metricsPort, config.metrics.host, 'INGEST_METRICS_PORT', config.http);
  const ingest = startIngest(ctx, config.mqtt);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    hooks.onStopping?.(signal);
    ctx.log.info({ signal }, 'stopping ingest');
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 5000).unref();
    const closed = new Promise<void>((r) => server.close(() => r()));
    server.closeIdleConnections();
    await ingest.stop();
    await closed;
    await closeContext(ctx);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  void hooks.stopWhen?.then((why) => stop(why));
  await ingest.ready;
  ctx.log.info({ metrics: metricsUrl(server), id: config.ingest.id }, 'ingest running');
  hooks.onReady?.(metricsUrl(server));
}
