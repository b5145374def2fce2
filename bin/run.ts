/**
 * `make run`: the whole system on one machine, in processes as production runs it. This process
 * migrates, seeds the demo data on an empty database (with the last 24 hours of simulated operation
 * and their files), serves the API (main host, legacy host, metrics) and supervises its children:
 * this file again with the argument `background`, which runs the publisher (pg-boss workers and
 * cron, as bin/publisher.ts does), the live fleet simulator and the publication of the demo's older
 * history; and, with a vehicle broker (MQTT_URL: make run starts the embedded one), this file with
 * the argument `ingest`, the vehicle ingest as bin/ingest.ts runs it. The demo's vehicles are then
 * MQTT vehicles (ops/sim/mqtt-fleet.ts): a partner's unlock goes through the broker to them, and
 * their positions come back through the ingest. The children's CPU (GBFS runs, the mapping and gzip
 * of hourly files, the demo's month of backfill, the ingest's batches) never runs on the event loop
 * that answers partners.
 *
 * A child process rather than a worker thread: production runs the publisher as a process of its
 * own, and a worker thread would share this process's libuv thread pool (gzip, file writes, the
 * token endpoints' secret hashing), its heap limit and its fate when it crashes.
 *
 * One terminal: the child writes to the same stdout and stderr (pino lines carry the pid; the banner
 * names both). Ctrl-C (SIGINT, which the terminal sends to both) or SIGTERM (to this process, passed
 * on to the child) stops everything cleanly: the servers stop accepting and finish in-flight
 * requests, the child finishes its running jobs, and this process exits after it, so that no
 * session is left when `make run`'s scripts/pg.sh stops the embedded Postgres it started. A child
 * that dies otherwise stops the run with exit code 1 and one line saying so: restarting it would
 * hide a crash that a demo should show. A child whose supervisor dies stops on its own (the IPC
 * channel closes).
 *
 * Each process serves its own Prometheus metrics on METRICS_HOST: the API on METRICS_PORT, the
 * publisher child on PUBLISHER_METRICS_PORT (the next port by default); the banner prints both URLs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { listenOrExit } from '../lib/core/listen.js';
import { exitOnStartError, loadConfigOrExit, type Config } from '../lib/core/config.js';
import { metricsUrl } from '../lib/core/metrics-listener.js';
import { migrate } from '../lib/core/migrate.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { createContext, closeContext } from '../lib/domain/runtime.js';
import type { AppContext } from '../lib/domain/context.js';
import { sql } from '../lib/core/sql/typed.js';
import { addHours, floorHour, formatHour, HOUR_MS } from '../lib/feeds/hours.js';

/** The arguments that make this file one of its children. */
const BACKGROUND = 'background';
const INGEST = 'ingest';

/** What the two processes tell each other over the IPC channel. */
type ToBackground = { type: 'start' };
type FromBackground = { type: 'ready'; metrics: string } | { type: 'stopping'; signal: string };

/** A child's exit as 'exit' reports it. */
type Exit = { code: number | null; signal: NodeJS.Signals | null };

async function supervise(): Promise<void> {
  const { config } = loadConfigOrExit();
  // the two processes' metrics listeners share METRICS_HOST on this machine
  const { port: metricsPort, publisherPort } = config.metrics;
  if (metricsPort !== 0 && metricsPort === publisherPort) {
    console.error(
      `configuration error: PUBLISHER_METRICS_PORT=${publisherPort} is METRICS_PORT: make run serves the API's and the publisher's metrics on one machine; give them different ports`,
    );
    process.exit(2);
  }
  const ctx = await createContext(config, { applicationName: 'run' });
  const { log } = ctx;

  // forked first: the children load their modules while this process migrates and seeds, and start
  // their work when told to (the database is ready then)
  const children = [forkChild(BACKGROUND, 'publisher process', log), ...(config.mqtt ? [forkChild(INGEST, 'ingest process', log)] : [])];
  // this process's own modules load meanwhile too
  const api = import('../api/app.js');
  const servers: Server[] = [];

  let stopping = false;
  const stop = async (why: string, failed: boolean) => {
    if (stopping) return;
    stopping = true;
    log.info({ why }, 'stopping');
    const deadline = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      for (const c of children) c.proc.kill('SIGKILL');
      process.exit(1);
    }, config.shutdownTimeoutMs + 10_000);
    deadline.unref();
    // stop accepting at once; requests in flight finish while the children wind down
    const closed = Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((r) => {
            s.close(() => r());
            s.closeIdleConnections();
          }),
      ),
    );
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGTERM');
    const exits = await Promise.all(children.map((c) => c.exited));
    await closed;
    await demoCity?.close();
    await closeContext(ctx);
    console.log('stopped');
    process.exit(failed || !exits.every(stoppedCleanly) ? 1 : 0);
  };
  process.on('SIGINT', () => void stop('SIGINT', false));
  process.on('SIGTERM', () => void stop('SIGTERM', false));
  for (const child of children) {
    // Ctrl-C may reach a child first: it says so before it stops
    child.proc.on('message', (m: FromBackground) => {
      if (m.type === 'stopping') void stop(m.signal, false);
    });
    void child.exited.then((exit) => {
      if (stopping) return;
      const clean = stoppedCleanly(exit);
      if (!clean)
        console.error(
          `run: the ${child.name} (pid ${child.proc.pid}) exited unexpectedly (${exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`}); stopping everything`,
        );
      void stop(exit.signal ?? `${child.name} exited`, !clean);
    });
  }

  const { applied } = await migrate(config.databaseUrl, HOURLY_FEEDS);
  if (applied.length) log.info({ applied }, 'migrations applied');

  let seeded = false;
  let demoCity: { url: string; registered: string[]; close(): Promise<void> } | undefined;
  if (process.env.SEED_DEMO === '1') {
    const { seedDemo } = await import('../ops/seed/index.js');
    const summary = await seedDemo(ctx);
    // the demo database (seedDemo refuses any other): its zones get the demo city's Policy
    // (ops/sim/city.ts) unless they have a source of their own
    const { startDemoCity } = await import('../ops/sim/city.js');
    demoCity = await startDemoCity(ctx);
    seeded = Boolean((summary as { created?: boolean }).created);
    if (seeded) {
      log.info('demo data seeded; simulating the last 24 hours of operation');
      const { simulateHistory } = await import('../ops/sim/index.js');
      await simulateHistory(ctx, { days: 1, seed: 42, end: ctx.clock.now() });
      // publish the simulated day now, so that every feed has history to show from the first minute
      // (nothing answers partners yet: the one heavy work this process does)
      const { backfill } = await import('../publisher/ops.js');
      const now = ctx.clock.now();
      const r = await backfill(ctx, { zones: 'all', from: new Date(now.getTime() - 25 * 3_600_000), to: now, feeds: 'all', force: false });
      log.info({ written: r.written, failed: r.failed.length }, 'simulated day published');
    }
  }
  if (stopping) return;
  for (const c of children) c.proc.send({ type: 'start' } satisfies ToBackground);

  const { buildApp, buildLegacyApp, buildMetricsApp, withHotPath } = await api;
  // the hot path answers the cached hourly feed files before Koa (api/app.ts)
  const listen = (app: ReturnType<typeof buildApp>, port: number, variable: string) => listenOrExit(withHotPath(app), port, config.host, variable, config.http);
  servers.push(await listen(buildApp(ctx), config.port, 'PORT'));
  servers.push(await listen(buildLegacyApp(ctx), config.legacyPort, 'LEGACY_PORT'));
  const metrics = buildMetricsApp(ctx).callback();
  const metricsServer = await listenOrExit((req, res) => void metrics(req, res), config.metrics.port, config.metrics.host, 'METRICS_PORT', config.http);
  servers.push(metricsServer);

  const [publisher, ingest] = await Promise.all(children.map((c) => c.ready));
  if (!stopping) printBanner(config, seeded, children, { api: metricsUrl(metricsServer), publisher, ingest }, demoCity);
}

interface Child {
  name: string;
  proc: ChildProcess;
  exited: Promise<Exit>;
  /** its metrics URL, which comes with its ready */
  ready: Promise<string>;
}

function forkChild(role: string, name: string, log: AppContext['log']): Child {
  const proc = fork(fileURLToPath(import.meta.url), [role], {
    // the parent's loader (tsx) without a debugger flag: two processes cannot share its port
    execArgv: process.execArgv.filter((a) => !a.startsWith('--inspect')),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // (a send to a child that is gone, or a failed kill: its exit says the rest)
  proc.on('error', (err) => log.error({ err: err.message }, name));
  return {
    name,
    proc,
    exited: new Promise<Exit>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))),
    ready: new Promise<string>((resolve) => proc.on('message', (m: FromBackground) => m.type === 'ready' && resolve(m.metrics))),
  };
}

/** A child that ended by its own clean stop (exit 0) or by the signal of a stop (a Ctrl-C that reached it before its handlers). */
function stoppedCleanly(exit: Exit): boolean {
  return exit.code === 0 || exit.signal === 'SIGINT' || exit.signal === 'SIGTERM';
}

/**
 * The child: the publisher with its cron, the live simulator and the demo's history, once the
 * supervisor says start. It stops on SIGINT or SIGTERM, and when its supervisor is gone; running
 * jobs finish within SHUTDOWN_TIMEOUT_MS.
 */
async function background(): Promise<void> {
  const { config } = loadConfigOrExit();
  const tell = (m: FromBackground) => {
    if (process.connected) process.send!(m);
  };
  let stopping = false;
  const work: { stop?: () => Promise<void> } = {};
  // a stop before the work started simply exits: nothing is running yet
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    tell({ type: 'stopping', signal });
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 5000).unref();
    await work.stop?.();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('disconnect', () => void stop('supervisor gone'));

  const modules = Promise.all([import('../publisher/index.js'), import('../ops/sim/live.js')]);
  await new Promise<void>((resolve) => process.on('message', (m: ToBackground) => m.type === 'start' && resolve()));
  const [{ listenPublisherMetrics, startPublisher }, { startLiveSimulator }] = await modules;
  if (stopping) return;
  const ctx = await createContext(config, { applicationName: 'run-publisher' });
  const metrics = await listenPublisherMetrics(ctx);
  const publisher = await startPublisher(ctx, { cron: true });
  // with a broker, the demo's vehicles speak MQTT if the broker knows them (the demo fleet's
  // identity): they answer every command, the live simulator's and the partners', whether or not the
  // simulator rides them. A broker's vehicles without it are real ones, which no simulator drives
  const fleet = config.mqtt && config.demoFleet ? await connectDemoFleet(ctx) : undefined;
  if (config.mqtt && !config.demoFleet && config.liveSimulator)
    ctx.log.warn('a vehicle broker without the demo fleet identity (DEMO_FLEET_MQTT_USERNAME): its vehicles are real, the live simulator stays off');
  const sim = config.liveSimulator && (fleet || !config.mqtt) ? startLiveSimulator(ctx, { fleet }) : undefined;
  // PUBLISH_CATCHUP_HOURS_PER_TICK=0 turns the history catch-up off, this one included
  const history = process.env.SEED_DEMO === '1' && config.publishCatchupHoursPerTick > 0 ? publishDemoHistory(ctx, () => publisher.tick()) : undefined;
  work.stop = async () => {
    const closed = new Promise<void>((r) => metrics.server.close(() => r()));
    metrics.server.closeIdleConnections();
    await sim?.stop();
    await fleet?.close();
    await history?.stop();
    await publisher.stop();
    await closed;
    await closeContext(ctx);
  };
  tell({ type: 'ready', metrics: metrics.url });
}

/** The demo's vehicles on the broker, as the demo fleet (its identity from scripts/mqtt.sh). */
async function connectDemoFleet(ctx: AppContext) {
  const { MqttFleet } = await import('../ops/sim/mqtt-fleet.js');
  const codes = new Map((await ctx.db.many(sql('SimVehicleCodes'))).map((v) => [v.id, v.code]));
  return MqttFleet.connect({ ...ctx.config.mqtt!, ...ctx.config.demoFleet!, log: ctx.log, codes, behaviourFile: ctx.config.demoVehiclesFile });
}

/**
 * An ingest child: bin/ingest.ts's process once the supervisor says start (the database migrated).
 */
async function ingestChild(): Promise<void> {
  const { config } = loadConfigOrExit();
  const tell = (m: FromBackground) => {
    if (process.connected) process.send!(m);
  };
  const { runIngestProcess } = await import('../ingest/main.js');
  const gone = new Promise<string>((resolve) => process.on('disconnect', () => resolve('supervisor gone')));
  await new Promise<void>((resolve) => process.on('message', (m: ToBackground) => m.type === 'start' && resolve()));
  await runIngestProcess(config, {
    onReady: (metrics) => tell({ type: 'ready', metrics }),
    onStopping: (signal) => tell({ type: 'stopping', signal }),
    stopWhen: gone,
  });
}

/**
 * The demo's zones began 30 days before the first start (ops/seed), its simulated rides cover the
 * last day, and the publisher's catch-up publishes history older than its look-back at
 * PUBLISH_CATCHUP_HOURS_PER_TICK hours a minute, oldest first: half an hour for this month, with
 * older hours answering 202 meanwhile. Here the demo's publisher process publishes those hours at
 * once, beside its jobs, a day at a time from the newest (so the catch-up, coming from the oldest,
 * meets few of them twice): about half a minute on two cores. Hours already published are skipped,
 * so a later start only finishes what an interrupted one left.
 */
function publishDemoHistory(ctx: AppContext, tick: () => Promise<unknown>): { stop(): Promise<void> } {
  let stopping = false;
  const run = (async () => {
    const { backfill } = await import('../publisher/ops.js');
    const { lookbackStart } = await import('../publisher/schedule.js');
    const zones = await ctx.db.many(sql('PubZones'));
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
    if (written)
      console.log(`demo history published: every hour since ${formatHour(first)} (${written} files) in ${Math.round((Date.now() - started) / 1000)} s`);
  })().catch((err) => ctx.log.warn({ err: (err as Error).message }, 'demo history not published; the publisher catches it up'));
  return {
    async stop() {
      stopping = true;
      await run;
    },
  };
}

function printBanner(
  config: Config,
  seeded: boolean,
  children: Child[],
  metrics: { api: string; publisher: string; ingest?: string },
  demoCity?: { url: string; registered: string[] },
): void {
  const [publisher, ingest] = children;
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
  Operator console     ${b}/console   (key: demo-ops-key; its API ${b}/console/api/...)${
    demoCity?.registered.length
      ? `
  City rules           the demo city's MDS Policy ${demoCity.url}/{zone}/policies for ${demoCity.registered.join(', ')}: read every minute, a 12 km/h slow zone in the centre (console: City rules; make policy-status)`
      : ''
  }
  Health               ${b}/healthz  ${b}/readyz
  Metrics              API ${metrics.api}   publisher ${metrics.publisher}${metrics.ingest ? `   ingest ${metrics.ingest}` : ''}   (each process its own; not on the public host${config.metrics.token ? ', the API there with METRICS_TOKEN' : ''})
  Processes            API ${process.pid}; publisher${config.liveSimulator ? ' and fleet simulator' : ''} ${publisher.proc.pid}${ingest ? `; vehicle ingest ${ingest.proc.pid}` : ''} (log lines carry the pid)${
    config.mqtt
      ? `
  Vehicle broker       ${config.mqtt.url} (MQTT 5; the protocol: ${b}/asyncapi.json, docs/vehicles.md)${
    config.demoFleet ? `; the demo's vehicles speak MQTT: make ops ARGS="demo-vehicle CODE refuse|silent|ok" makes one refuse or stay silent` : ''
  }`
      : ''
  }

  Demo zones: berlin (free-floating), copenhagen (parking spots). Ctrl-C stops everything.
`);
}

(process.argv[2] === BACKGROUND ? background() : process.argv[2] === INGEST ? ingestChild() : supervise()).catch(exitOnStartError);
