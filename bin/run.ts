/**
 * `make run`: the whole system in one process on one machine — migrate, seed the demo data on an
 * empty database (with the last 24 hours of simulated operation), then the API (main + legacy host),
 * the publisher and the live fleet simulator. Ctrl-C (SIGINT) or SIGTERM stops everything cleanly:
 * the servers stop accepting and finish in-flight requests, the publisher finishes its running jobs.
 */
import type { Server } from 'node:http';
import { listenOrExit } from '../lib/http/listen.js';
import { loadConfigOrExit, type Config } from '../lib/config.js';
import { migrate } from '../lib/migrate.js';
import { createContext, closeContext } from '../lib/runtime.js';
import { buildApp, buildLegacyApp, buildMetricsApp, withHotPath } from '../api/app.js';

async function main(): Promise<void> {
  const { config } = loadConfigOrExit();
  const ctx = await createContext(config, { applicationName: 'run' });
  const { log } = ctx;

  const { applied } = await migrate(config.databaseUrl);
  if (applied.length) log.info({ applied }, 'migrations applied');

  let seeded = false;
  if (process.env.SEED_DEMO === '1') {
    const { seedDemo } = await import('../lib/seed/index.js');
    const summary = await seedDemo(ctx);
    seeded = Boolean((summary as { created?: boolean }).created);
    if (seeded) {
      log.info('demo data seeded; simulating the last 24 hours of operation');
      const { simulateHistory } = await import('../lib/sim/index.js');
      await simulateHistory(ctx, { days: 1, seed: 42, end: ctx.clock.now() });
      // publish the simulated day now, so that every feed has history to show from the first minute
      const { backfill } = await import('../publisher/ops.js');
      const now = ctx.clock.now();
      const r = await backfill(ctx, { zones: 'all', from: new Date(now.getTime() - 25 * 3_600_000), to: now, feeds: 'all', force: false });
      log.info({ written: r.written, failed: r.failed.length }, 'simulated day published');
    }
  }

  const servers: Server[] = [];
  // the hot path answers the cached hourly feed files before Koa (api/app.ts)
  const listen = (app: ReturnType<typeof buildApp>, port: number, variable: string) =>
    listenOrExit(withHotPath(app), port, config.host, variable, config.http);
  servers.push(await listen(buildApp(ctx), config.port, 'PORT'));
  servers.push(await listen(buildLegacyApp(ctx), config.legacyPort, 'LEGACY_PORT'));
  servers.push(await listenOrExit(buildMetricsApp(ctx).callback(), config.metrics.port, config.metrics.host, 'METRICS_PORT', config.http));

  const { startPublisher } = await import('../publisher/index.js');
  const publisher = await startPublisher(ctx, { cron: true });
  const { startLiveSimulator } = await import('../lib/sim/live.js');
  const sim = config.liveSimulator ? startLiveSimulator(ctx, {}) : { stop: async () => undefined };

  printBanner(config, seeded);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const deadline = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5000);
    deadline.unref();
    // stop accepting at once; requests in flight finish while the simulator and publisher wind down
    const closed = Promise.all(servers.map((s) => new Promise<void>((r) => { s.close(() => r()); s.closeIdleConnections(); })));
    await sim.stop();
    await closed;
    await publisher.stop();
    await closeContext(ctx);
    console.log('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

function printBanner(config: Config, seeded: boolean): void {
  const b = config.publicBaseUrl;
  const l = config.publicLegacyUrl;
  console.log(`
  Partner platform is running${seeded ? ' (demo data seeded, 24 h of history simulated)' : ''}

  Partner rental API   ${b}/v1/...            X-Auth-Token: demo-partner-key
  TOMP booking API     ${b}/edge/tomp/...     X-Access-Token: demo-maas-key
  Feeds token          ${b}/v1/partner-apis/token   (Basic demo-city:demo-city-secret or demo-gbfs:demo-gbfs-secret)
  MDS 2.0              ${b}/v1/partner-apis/mds/{zone}/...
  GBFS 3.0 / 2.2       ${b}/v1/partner-apis/gbfs/{zone}/gbfs.json   ${b}/gbfs/v2/gbfs.json
  Insurance trips      ${b}/v1/partner-apis/insurance/{zone}/trips   X-Access-Token: demo-insurer-key (or a token of demo-insurer:demo-insurer-secret)
  Legacy MDS host      ${l}/token   ${l}/en/{zone}/...
  API docs             ${b}/docs
  Operator console     ${b}/console   (key: demo-ops-key; its API ${b}/console/api/...)
  Health               ${b}/healthz  ${b}/readyz
  Metrics              http://${config.metrics.host}:${config.metrics.port}/metrics (not on the public host${config.metrics.token ? '; there with METRICS_TOKEN' : ''})

  Demo zones: berlin (free-floating), copenhagen (parking spots). Ctrl-C stops everything.
`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
