/**
 * `make run`: the whole system in one process on one machine — migrate, seed the demo data on an
 * empty database (with the last 24 hours of simulated operation), then the API (main + legacy host),
 * the publisher and the live fleet simulator; the demo's older history is published in the
 * background. Ctrl-C (SIGINT) or SIGTERM stops everything cleanly: the servers stop accepting and
 * finish in-flight requests, the publisher finishes its running jobs. (`make run` then stops the
 * embedded Postgres it started: scripts/pg.sh with.)
 */
import type { Server } from 'node:http';
import { listenOrExit } from '../lib/http/listen.js';
import { loadConfigOrExit, type Config } from '../lib/config.js';
import { migrate } from '../lib/migrate.js';
import { createContext, closeContext } from '../lib/runtime.js';
import { buildApp, buildLegacyApp, buildMetricsApp, withHotPath } from '../api/app.js';
import type { AppContext } from '../lib/context.js';
import { q } from '../lib/db.js';
import { addHours, floorHour, formatHour, HOUR_MS } from '../lib/feeds/hours.js';

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
  // PUBLISH_CATCHUP_HOURS_PER_TICK=0 turns the history catch-up off, this one included
  const history = process.env.SEED_DEMO === '1' && config.publishCatchupHoursPerTick > 0 ? publishDemoHistory(ctx, publisher.tick) : { stop: async () => undefined };

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
    await history.stop();
    await closed;
    await publisher.stop();
    await closeContext(ctx);
    console.log('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/**
 * The demo's zones began 30 days before the first start (lib/seed), its simulated rides cover the
 * last day, and the publisher's catch-up publishes history older than its look-back at
 * PUBLISH_CATCHUP_HOURS_PER_TICK hours a minute, oldest first: half an hour for this month, with
 * older hours answering 202 meanwhile. Here the demo publishes those hours at once, in the
 * background, a day at a time from the newest (so the catch-up, coming from the oldest, meets few of
 * them twice): about half a minute on two cores. Hours already published are skipped, so a later
 * start only finishes what an interrupted one left.
 */
function publishDemoHistory(ctx: AppContext, tick: () => Promise<unknown>): { stop(): Promise<void> } {
  let stopping = false;
  const run = (async () => {
    const { backfill } = await import('../publisher/ops.js');
    const { lookbackStart } = await import('../publisher/schedule.js');
    const zones = await ctx.db.many<{ id: string; created_at: Date }>(q('PubZones'));
    if (!zones.length) return;
    const first = floorHour(new Date(Math.min(...zones.map((z) => z.created_at.getTime()))));
    // the cron's look-back publishes the newer hours itself
    const last = addHours(lookbackStart(ctx.clock.now(), ctx.config.publishLatenessSeconds), -1);
    const started = Date.now();
    let written = 0;
    let failed = 0;
    for (let to = last; to >= first && !stopping; to = addHours(to, -24)) {
      const from = new Date(Math.max(first.getTime(), to.getTime() - 23 * HOUR_MS));
      const r = await backfill(ctx, { zones: 'all', from, to, feeds: 'all', force: false });
      written += r.written;
      failed += r.failed.length;
    }
    // the catch-up's marks cross what is published 4 × PUBLISH_CATCHUP_HOURS_PER_TICK hours a tick
    // (publisher/schedule.ts): the ticks it needs now, so that `make publish-status` says complete
    const ticks = Math.ceil((last.getTime() - first.getTime()) / HOUR_MS / (4 * ctx.config.publishCatchupHoursPerTick)) + 1;
    for (let i = 0; i < ticks && !stopping; i++) await tick();
    if (stopping) return;
    if (failed) ctx.log.warn({ failed }, 'demo history: files failed; the publisher retries them');
    if (written) console.log(`demo history published: every hour since ${formatHour(first)} (${written} files) in ${Math.round((Date.now() - started) / 1000)} s`);
  })().catch((err) => ctx.log.warn({ err: (err as Error).message }, 'demo history not published; the publisher catches it up'));
  return {
    async stop() {
      stopping = true;
      await run;
    },
  };
}

function printBanner(config: Config, seeded: boolean): void {
  const b = config.publicBaseUrl;
  const l = config.publicLegacyUrl;
  console.log(`
  Partner platform is running${seeded ? ' (demo data seeded, 24 h of history simulated)' : ''}

  Partner rental API   ${b}/v1/...            X-Auth-Token: demo-partner-key (a second partner app: demo-mobility-key)
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
