/**
 * The API alone (main host on PORT, legacy MDS host on LEGACY_PORT), without the publisher and the
 * fleet simulator: what an API machine runs. It does not migrate (`make migrate` does, once).
 *
 * API_WORKERS=n (default 1; `auto` = one per core) runs n worker processes with node:cluster on the
 * same ports. One Node process answers on one core; more cores are used by more processes, which
 * the design allows anywhere (DESIGN.md: any number of API processes against one Postgres): the rate
 * limit is summed in Postgres, the API key cache is per process (revocation within 60 s holds), and
 * every concurrency decision is a Postgres lock or constraint. Each worker has its own pool of
 * DATABASE_POOL_SIZE connections, so Postgres sees n × that many.
 *
 * SIGINT/SIGTERM: the primary forwards SIGTERM to the workers; each stops accepting, finishes its
 * in-flight requests and closes its pool. A worker that dies otherwise is replaced.
 */
import cluster from 'node:cluster';
import { listenOrExit } from '../lib/core/listen.js';
import { availableParallelism } from 'node:os';
import { exitOnStartError, loadConfigOrExit, ConfigError, type Config } from '../lib/core/config.js';
import { createContext, closeContext } from '../lib/domain/runtime.js';
import { buildApp, buildLegacyApp, buildMetricsApp, listenerOf, withHotPath } from '../api/app.js';

function workerCount(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  if (raw === 'auto') return availableParallelism();
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 256)
    throw new ConfigError(`API_WORKERS must be an integer between 1 and 256 or "auto", got "${raw}"`);
  return Number(raw);
}

function primary(config: Config, workers: number): void {
  let stopping = false;
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    console.error(`api worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
    setTimeout(() => cluster.fork(), 1000).unref();
  });
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 5000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  console.log(`api: ${workers} workers on ${config.host}:${config.port} (legacy :${config.legacyPort})`);
}

async function worker(config: Config): Promise<void> {
  const ctx = await createContext(config, { applicationName: 'api' });
  // the hot path answers the cached hourly feed files before Koa (api/app.ts)
  const listen = (app: ReturnType<typeof buildApp>, port: number, variable: string) => listenOrExit(withHotPath(app), port, config.host, variable, config.http);
  const servers = [
    await listen(buildApp(ctx), config.port, 'PORT'),
    await listen(buildLegacyApp(ctx), config.legacyPort, 'LEGACY_PORT'),
    await listenOrExit(listenerOf(buildMetricsApp(ctx)), config.metrics.port, config.metrics.host, 'METRICS_PORT', config.http),
  ];
  if (cluster.isPrimary) console.log(`api on ${config.host}:${config.port} (legacy :${config.legacyPort})`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs).unref();
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((r) => {
            s.close(() => r());
            s.closeIdleConnections();
          }),
      ),
    );
    await closeContext(ctx);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

async function main(): Promise<void> {
  const { config, extra: workers } = loadConfigOrExit((env) => workerCount(env.API_WORKERS));
  if (cluster.isPrimary && workers > 1) primary(config, workers);
  else await worker(config);
}

main().catch(exitOnStartError);
