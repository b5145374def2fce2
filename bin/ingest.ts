/**
 * The vehicle ingest alone (ingest/index.ts): the vehicles' telemetry and state reports from the
 * broker (MQTT_URL) into Postgres, in batches. Any number of ingest processes may run against one
 * broker and one Postgres: the shared subscription splits the reports between them. Each needs its
 * own stable INGEST_ID (default: the host name): the broker keeps what a process has not yet
 * acknowledged for the next process of that id, so a supervisor restarts it under the same id.
 *
 * SIGINT/SIGTERM: stop taking reports, write and acknowledge what it holds, disconnect, exit 0.
 * Reports that arrive meanwhile are left unacknowledged for the session's next process.
 *
 * Its Prometheus metrics (ingest_*: reports by outcome, refusals by reason, batch times, the age of
 * what it stores; RSS and event-loop lag) are on METRICS_HOST:INGEST_METRICS_PORT.
 */
import { loadConfigOrExit } from '../lib/core/config.js';
import { listenOrExit } from '../lib/core/listen.js';
import { buildMetricsListener, metricsUrl, registryWithout } from '../lib/core/metrics-listener.js';
import { API_ONLY_METRICS, registry } from '../lib/core/metrics.js';
import { createContext, closeContext } from '../lib/domain/runtime.js';
import { startIngest } from '../ingest/index.js';

async function main(): Promise<void> {
  const { config } = loadConfigOrExit();
  if (!config.mqtt) {
    console.error('configuration error: the ingest reads the vehicle broker: set MQTT_URL (and MQTT_PASSWORD or MQTT_PASSWORD_FILE)');
    process.exit(2);
  }
  const ctx = await createContext(config, { applicationName: 'ingest' });
  const app = buildMetricsListener(registryWithout(registry, API_ONLY_METRICS), ctx.log).callback();
  const server = await listenOrExit((req, res) => void app(req, res), config.ingest.metricsPort, config.metrics.host, 'INGEST_METRICS_PORT', config.http);
  const ingest = startIngest(ctx, config.mqtt);
  await ingest.ready;
  ctx.log.info({ metrics: metricsUrl(server), id: config.ingest.id }, 'ingest running');
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
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
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
