/**
 * The publisher alone: pg-boss workers and the cron that enqueues hourly files, GBFS snapshots and
 * the rental/TOMP housekeeping sweeps. What a publisher machine runs; any number of them may run
 * against one Postgres (the cron only enqueues with singleton keys, pg-boss hands each job to one
 * worker). It does not migrate (`make migrate` does, once).
 *
 * SIGINT/SIGTERM: stop taking jobs, let running ones finish within SHUTDOWN_TIMEOUT_MS, exit 0. A job
 * still running past the bound stays 'active' in pg-boss and is picked up again by another
 * publisher (the next cron tick re-enqueues its files while they are not published).
 *
 * Its Prometheus metrics (this process's: publish durations and failures, RSS, event-loop lag, and
 * the cluster's gauges read from Postgres) are on METRICS_HOST:PUBLISHER_METRICS_PORT, loopback by
 * default (publisher/index.ts listenPublisherMetrics); the start line logs the URL.
 */
import { exitOnStartError, loadConfigOrExit } from '../lib/core/config.js';
import { createContext, closeContext } from '../lib/domain/runtime.js';
import { listenPublisherMetrics, startPublisher } from '../publisher/index.js';

async function main(): Promise<void> {
  const { config } = loadConfigOrExit();
  const ctx = await createContext(config, { applicationName: 'publisher' });
  const metrics = await listenPublisherMetrics(ctx);
  const publisher = await startPublisher(ctx, { cron: true });
  ctx.log.info({ metrics: metrics.url }, 'publisher running');
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    ctx.log.info({ signal }, 'stopping publisher');
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 5000).unref();
    // no new scrapes; one in flight finishes while the jobs do
    const closed = new Promise<void>((r) => metrics.server.close(() => r()));
    metrics.server.closeIdleConnections();
    await publisher.stop();
    await closed;
    await closeContext(ctx);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch(exitOnStartError);
