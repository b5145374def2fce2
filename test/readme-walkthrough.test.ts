/**
 * The README's demo walkthrough, executed, so that it cannot drift from the code: `bin/run.ts` (what
 * `make run` starts) on loopback ports, on a fresh database seeded as `make run` seeds it
 * (SEED_DEMO=1: the demo data, 24 simulated hours, their files), then every README block marked
 * `<!-- walkthrough: … -->` in one bash session with curl and jq, in an empty directory outside the
 * repository. Only the hosts differ from a reader's terminal: the blocks read them from `B` and `L`,
 * whose defaults are `make run`'s.
 *
 * Each block must run to its end under `set -euo pipefail`, every request must answer the status the
 * README's comments give, and the output must show what they say it returns; the ids it printed are
 * checked against the rows it made. Kept deterministic without weakening any check: the live
 * simulator is off (it would rent the vehicles the walkthrough picks), the publisher's per-minute
 * catch-up is off (the walkthrough reads only the seeded day), the blocks start once the first GBFS
 * files are out (the README says within 15 s), and when the run would fall into Copenhagen's sleep
 * window (01:00–05:00 local) the TOMP block books in berlin, as the README tells a reader to.
 */
import { freePort, waitFor } from './support/faults.js';
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../lib/core/config.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { ROOT } from '../lib/core/paths.js';
import { DEMO_FEED_CLIENTS, DEMO_PARTNERS } from '../ops/seed/data.js';
import { HOUR_QUEUE } from '../lib/publication/queue.js';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { readWalkthroughBlocks, requireTools, runWalkthrough, type BlockRun, type WalkthroughRun } from './support/walkthrough.js';
import { entry } from './support/entries.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import mqtt, { type MqttClient } from 'mqtt';
import { commandTopic, parseVehicleTopic, QOS } from '../lib/domain/vehicles/protocol.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const BLOCKS = readWalkthroughBlocks(README);
/** where the TOMP block books: copenhagen, or berlin while copenhagen sleeps (as the README says) */
let tompZone = 'copenhagen';
/** the demo fleet per zone (ops/seed/index.ts: vehiclesPerZone) */
const FLEET = 60;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** the console block's republish answer (202, RepublishQueuedSchema): its hour and job id */
const REPUBLISH_QUEUED = new RegExp(
  `^\\{"zone":"berlin","jobs":\\[\\{"hour":"(\\d{4}-\\d{2}-\\d{2}T\\d{2})","feeds":\\["mds-2\\.0-trips"\\],"id":"(${UUID})"\\}\\],"skipped":\\[\\]\\}$`,
  'm',
);

/** `METHOD /path status`, ids as {id}, the month of a report as {month}, without the query. */
function requestLine(r: { method: string; url: string; status: number }): string {
  const path = new URL(r.url).pathname.replace(new RegExp(UUID, 'g'), '{id}').replace(/\/\d{4}-\d{2}\.csv$/, '/{month}.csv');
  return `${r.method} ${path} ${r.status}`;
}

/** Whether any sleep window of the zone ("HH:MM" local) overlaps [now, now + minutes]. */
function sleepsWithin(windows: Array<{ start: string; end: string }>, timezone: string, minutes: number): boolean {
  const fmt = new Intl.DateTimeFormat('en-GB', { timeZone: timezone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const inWindow = (hhmm: string) => windows.some((w) => (w.start <= w.end ? hhmm >= w.start && hhmm < w.end : hhmm >= w.start || hhmm < w.end));
  for (let m = 0; m <= minutes; m++) if (inWindow(fmt.format(new Date(Date.now() + m * 60_000)))) return true;
  return false;
}

describe('README walkthrough: the document', () => {
  it('marks the partner, TOMP, feeds and console blocks, each runnable as written (no placeholders, make run hosts by default)', () => {
    expect(BLOCKS.map((b) => b.name)).to.deep.equal(['partner', 'tomp', 'feeds', 'console']);
    const defaults = loadConfig({ NODE_ENV: 'development', SIGNING_SECRET: 'x'.repeat(32), DATABASE_URL: 'postgres://unused.invalid/none' });
    for (const b of BLOCKS) {
      expect(b.code, b.name).to.not.match(/<[A-Za-z][\w .-]*>/);
      expect(b.code.split('\n')[0], b.name).to.contain(`B=\${B:-${defaults.publicBaseUrl}}`);
    }
    expect(BLOCKS.find((b) => b.name === 'feeds')!.code).to.contain(`L=\${L:-${defaults.publicLegacyUrl}}`);
    // the README says what the blocks need
    expect(README).to.match(/They need \*\*`curl`, `jq`\*\*/);
  });

  it('lists every seeded credential in the README credentials table', () => {
    const table = README.slice(README.indexOf('Demo credentials'), README.indexOf('Demo zones:'));
    for (const p of DEMO_PARTNERS) for (const k of p.keys) expect(table, `${p.name}'s key`).to.match(new RegExp(`[\` ]${k.key}\``));
    for (const c of DEMO_FEED_CLIENTS) expect(table, `feed client ${c.clientId}`).to.contain(`\`${c.clientId}\` / \`${c.secret}\``);
  });
});

describe('README walkthrough (the commands, against a fresh make-run demo)', function () {
  this.timeout(300_000);
  let database: TestDatabase | undefined;
  let db: Db | undefined;
  let child: ChildProcess | undefined;
  let store: string;
  let cwd: string;
  let log = '';
  let run: WalkthroughRun;
  let reportExpected: number;
  let failed = false;
  // make run's vehicle broker: the demo's vehicles answer there (ops/sim/mqtt-fleet.ts), and a
  // listener with the platform's identity hears every command sent to them
  let broker: TestBroker | undefined;
  let listener: MqttClient | undefined;
  const commands: Array<{ vehicleId: string; command: string }> = [];

  before(async function () {
    requireTools(this, ['bash', 'curl', 'jq', 'base64', 'date', 'sed']);
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'walkthrough-store-'));
    cwd = mkdtempSync(join(tmpdir(), 'walkthrough-cwd-'));
    const [port, legacyPort, metricsPort, publisherMetricsPort, ingestMetricsPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    broker = await startBroker();
    listener = await mqtt.connectAsync(broker.url, { protocolVersion: 5, ...broker.platform, clientId: 'walkthrough-listener', reconnectPeriod: 0 });
    listener.on('message', (topic, payload) => {
      const at = parseVehicleTopic(topic);
      if (at) commands.push({ vehicleId: at.vehicleId, command: (JSON.parse(payload.toString()) as { command: string }).command });
    });
    await listener.subscribeAsync(commandTopic('+'), { qos: QOS });
    child = spawn(process.execPath, [entry('run')], {
      cwd: ROOT,
      env: {
        ...process.env,
        // make run's environment, on this test's database, store and ports
        NODE_ENV: 'development',
        DATABASE_URL: database.url,
        STORE_URL: `file://${store}`,
        PORT: String(port),
        LEGACY_PORT: String(legacyPort),
        METRICS_PORT: String(metricsPort),
        PUBLISHER_METRICS_PORT: String(publisherMetricsPort),
        INGEST_METRICS_PORT: String(ingestMetricsPort),
        MQTT_URL: broker.url,
        MQTT_USERNAME: broker.platform.username,
        MQTT_PASSWORD: broker.platform.password,
        DEMO_FLEET_MQTT_USERNAME: broker.demoFleet.username,
        DEMO_FLEET_MQTT_PASSWORD: broker.demoFleet.password,
        DEMO_VEHICLES_FILE: join(cwd, 'demo-vehicles.json'),
        PUBLIC_BASE_URL: `http://localhost:${port}`,
        PUBLIC_LEGACY_URL: `http://localhost:${legacyPort}`,
        SEED_DEMO: '1',
        LOG_LEVEL: 'warn',
        LIVE_SIMULATOR: 'false',
        PUBLISH_CATCHUP_HOURS_PER_TICK: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c) => (log += c));
    child.stderr!.on('data', (c) => (log += c));
    for (let i = 0; i < 1800 && !log.includes('Ctrl-C stops everything') && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    expect(log, `bin/run.ts did not start:\n${log}`).to.contain('demo data seeded');

    db = new Db(database.url, createLogger('silent'));
    // during Copenhagen's sleep hours its fleet is off the street (the simulated operator takes it in):
    // the README tells a reader to book in berlin then, and so does the test
    const cph = await db.one<{ timezone: string; sleep_windows: Array<{ start: string; end: string }> }>(
      `SELECT timezone, sleep_windows FROM zones WHERE id = 'copenhagen'`,
    );
    if (sleepsWithin(cph.sleep_windows, cph.timezone, 15)) {
      tompZone = 'berlin';
      console.log(`      copenhagen sleeps during this run: the TOMP block books in berlin, as the README says`);
    }
    // last month's report exists unless the demo's 30 days all fall in this month (the 31st)
    const { created_at } = await db.one<{ created_at: Date }>(`SELECT created_at FROM zones WHERE id = 'berlin'`);
    const now = new Date();
    reportExpected = created_at < new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)) ? 200 : 404;

    // the README's "GBFS files within 15 s of the start" (and the start's report sweep): wait for them
    const base = `http://127.0.0.1:${port}`;
    const tokenRes = await fetch(`${base}/v1/partner-apis/token`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from('demo-city:demo-city-secret').toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    const { access_token } = (await tokenRes.json()) as { access_token: string };
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    const ready = [
      ['/v1/partner-apis/gbfs/berlin/gbfs.json', 200],
      ['/v1/partner-apis/gbfs/berlin/vehicle_status.json', 200],
      ['/v1/partner-apis/gbfs/manifest.json', 200],
      ['/gbfs/v2/gbfs.json', 200],
      [`/v1/partner-apis/mds/berlin/reports/${lastMonth}.csv`, reportExpected],
    ] as const;
    for (let i = 0; i < 120; i++) {
      const statuses = await Promise.all(
        ready.map(([p]) => fetch(`${base}${p}`, { headers: { Authorization: `Bearer ${access_token}` } }).then((r) => r.status)),
      );
      if (statuses.every((s, k) => s === ready[k][1])) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    const blocks = BLOCKS.map((b) => (b.name === 'tomp' ? { ...b, code: b.code.replaceAll('zoneID=copenhagen', `zoneID=${tompZone}`) } : b));
    run = await runWalkthrough(blocks, { cwd, env: { B: `http://localhost:${port}`, L: `http://localhost:${legacyPort}` }, timeoutMs: 180_000 });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(60_000);
    if (child && child.exitCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await db?.close();
    await listener?.endAsync(true);
    await broker?.close();
    if (failed && database) {
      console.log(`      kept for inspection: database ${database.name} (psql ${database.url}), store ${store}\n      bin/run.ts output:\n${log}`);
    } else {
      await database?.drop();
      if (store) rmSync(store, { recursive: true, force: true });
    }
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  const block = (name: string): BlockRun => {
    const b = run.blocks.find((x) => x.name === name);
    expect(b, `no walkthrough block "${name}"`).to.not.equal(undefined);
    return b!;
  };

  /** The block ran to its end, made exactly these requests, and printed each of these. */
  const expectBlock = (name: string, requests: string[], printed: Array<string | RegExp>) => {
    const b = block(name);
    // what tells most comes first: a CI summary shows only the first lines of a failure
    const context =
      `block "${name}"${run.failure ? `; the run stopped at: ${run.failure}` : ''}; requests: ${b.requests.map(requestLine).join(', ')}` +
      `\nstderr:\n${b.stderr}\nstdout:\n${b.stdout}`;
    expect(b.completed, `did not run to its end: ${context}`).to.equal(true);
    expect(b.stderr.trim(), context).to.equal('');
    expect(b.requests.map(requestLine), context).to.deep.equal(requests);
    for (const p of printed) {
      if (typeof p === 'string') expect(b.stdout, context).to.contain(p);
      else expect(b.stdout, context).to.match(p);
    }
  };

  /** The id in the path of the block's first request whose path matches. */
  const idIn = (name: string, path: RegExp): string => {
    const r = block(name).requests.find((x) => path.test(new URL(x.url).pathname));
    expect(r, `no request matching ${path} in block "${name}"`).to.not.equal(undefined);
    return new RegExp(UUID).exec(new URL(r!.url).pathname)![0];
  };

  it('partner block: register, start, end, photo, receipt', () => {
    expectBlock(
      'partner',
      [
        'GET /v1/zone/info 200',
        'GET /v1/vehicles 200',
        'POST /v1/user/register 200',
        'GET /v1/user/id/{id} 200',
        'GET /v1/user/id/{id} 404',
        'POST /v1/rental/start 200',
        'POST /v1/rental/{id}/end 200',
        'PUT /v1/rental/{id}/photo 200',
      ],
      [
        '{"zoneId":"berlin","parkingMode":"free-floating"',
        '{"zoneId":"copenhagen","parkingMode":"parking-spot"',
        new RegExp(`\\{"id":"${UUID}","type":"user","attributes":\\{"email":"ada@example.com","externalId":"ada-1"\\}\\}`),
        '{"status":"404","code":"ErrUserNotFound"}',
        new RegExp(`\\{"id":"${UUID}","state":"RUNNING"\\}`),
        new RegExp(`\\{"id":"${UUID}","state":"ENDED","total":\\{"amount":\\d+,"currency":"EUR"`),
        '{"decision":"good-parking"}',
        '200 application/pdf',
      ],
    );
  });

  it('partner block: the ids it printed are the user and the rental it made', async () => {
    const userId = idIn('partner', /^\/v1\/user\/id\//);
    const rentalId = idIn('partner', /^\/v1\/rental\/.+\/end$/);
    const out = block('partner').stdout;
    expect(out).to.contain(`{"id":"${userId}","type":"user"`);
    expect(out).to.contain(`{"id":"${rentalId}","state":"RUNNING"}`);
    expect(out).to.contain(`{"id":"${rentalId}","state":"ENDED"`);
    const r = await db!.one(
      `SELECT r.state, r.photo_decision, u.external_id, p.name AS partner FROM rentals r JOIN users u ON u.id = r.user_id JOIN partners p ON p.id = r.partner_id WHERE r.id = $1 AND u.id = $2`,
      [rentalId, userId],
    );
    expect(r).to.deep.equal({ state: 'ENDED', photo_decision: 'good-parking', external_id: 'ada-1', partner: 'Demo Partner App' });
  });

  it('partner block: the rental unlocked and locked its vehicle over MQTT, and the vehicle reported its lock back', async () => {
    const rentalId = idIn('partner', /^\/v1\/rental\/.+\/end$/);
    const { vehicle_id } = await db!.one<{ vehicle_id: string }>('SELECT vehicle_id FROM rentals WHERE id = $1', [rentalId]);
    const sent = commands.filter((c) => c.vehicleId === vehicle_id).map((c) => c.command);
    // while copenhagen sleeps the TOMP block books in berlin: its first vehicle is this one again
    const tomp = await db!.maybeOne<{ vehicle_id: string }>(
      `SELECT b.vehicle_id FROM tomp_bookings b WHERE b.customer_external_id = 'maas-user-7' AND b.vehicle_id = $1`,
      [vehicle_id],
    );
    // a ride through the demo city's slow zone (ops/sim/city.ts) adds set_speed commands, and only those
    expect(sent.filter((c) => c !== 'set_speed')).to.deep.equal(tomp ? ['unlock', 'lock', 'unlock', 'lock'] : ['unlock', 'lock']);
    // the demo vehicle's state report (vehicles/{id}/state) came through the ingest
    const v = await waitFor('a state report of the vehicle ingested', () =>
      db!.maybeOne<{ locked: boolean }>('SELECT locked FROM vehicles WHERE id = $1 AND state_reported_at IS NOT NULL', [vehicle_id]),
    );
    expect(v.locked).to.equal(true);
  });

  it('TOMP block: a one-stop booking in copenhagen (berlin while copenhagen sleeps), its leg finished, final pricing', () => {
    expectBlock(
      'tomp',
      [
        'GET /edge/tomp/operator/regions 200',
        'GET /edge/tomp/operator/pricing-plans 200',
        'GET /v1/vehicles 200',
        'POST /edge/tomp/bookings/one-stop 201',
        'GET /edge/tomp/legs/{id} 200',
        'POST /edge/tomp/legs/{id}/events 200',
        'GET /edge/tomp/bookings/{id} 200',
      ],
      [
        '{"regionId":"berlin"',
        '{"regionId":"copenhagen"',
        '{"planId":"copenhagen:scooter"',
        new RegExp(`\\{"id":"${UUID}","state":"CONFIRMED","leg":"${UUID}","legState":"NOT_STARTED"\\}`),
        new RegExp(`\\{"id":"${UUID}","state":"NOT_STARTED"\\}`),
        new RegExp(`\\{"id":"${UUID}","state":"FINISHED"\\}`),
        new RegExp(`\\{"id":"${UUID}","state":"FINISHED","estimated":false\\}`),
      ],
    );
  });

  it('TOMP block: the ids it printed are the booking and leg it made', async () => {
    const bookingId = idIn('tomp', /^\/edge\/tomp\/bookings\/[0-9a-f-]{36}$/);
    const legId = idIn('tomp', /^\/edge\/tomp\/legs\/[0-9a-f-]{36}$/);
    const out = block('tomp').stdout;
    const said = `the TOMP block's booking and leg lines: ${
      out
        .split('\n')
        .filter((l) => l.startsWith('{"id"'))
        .join(' ') || '(none)'
    }\n`;
    expect(out, said).to.contain(`{"id":"${bookingId}","state":"CONFIRMED","leg":"${legId}","legState":"NOT_STARTED"}`);
    expect(out, said).to.contain(`{"id":"${legId}","state":"FINISHED"}`);
    expect(out, said).to.contain(`{"id":"${bookingId}","state":"FINISHED","estimated":false}`);
    const b = await db!.one(
      `SELECT b.state, b.customer_external_id, p.name AS partner, v.zone_id, l.state AS leg_state
         FROM tomp_bookings b JOIN partners p ON p.id = b.partner_id JOIN vehicles v ON v.id = b.vehicle_id JOIN tomp_legs l ON l.booking_id = b.id
        WHERE b.id = $1 AND l.id = $2`,
      [bookingId, legId],
    );
    expect(b).to.deep.equal({ state: 'FINISHED', customer_external_id: 'maas-user-7', partner: 'Demo MaaS', zone_id: tompZone, leg_state: 'FINISHED' });
  });

  it('feeds block: MDS 2.0, the report, GBFS 3.0 and 2.2, the GBFS-only client, insurance, the legacy host', () => {
    expectBlock(
      'feeds',
      [
        'POST /v1/partner-apis/token 200',
        'GET /v1/partner-apis/mds/berlin/trips 200',
        'GET /v1/partner-apis/mds/berlin/events/historical 200',
        'GET /v1/partner-apis/mds/berlin/vehicles/status 200',
        'GET /v1/partner-apis/mds/berlin/telemetry 200',
        'GET /v1/partner-apis/mds/berlin/publications 200',
        `GET /v1/partner-apis/mds/berlin/reports/{month}.csv ${reportExpected}`,
        'GET /v1/partner-apis/gbfs/berlin/gbfs.json 200',
        'GET /v1/partner-apis/gbfs/manifest.json 200',
        'GET /gbfs/v2/gbfs.json 200',
        'POST /v1/partner-apis/token 200',
        'GET /v1/partner-apis/gbfs/berlin/vehicle_status.json 200',
        'GET /v1/partner-apis/mds/berlin/vehicles/status 403',
        'GET /v1/partner-apis/insurance/berlin/trips 200',
        'POST /v1/partner-apis/token 200',
        'GET /v1/partner-apis/insurance/berlin/trips 200',
        'POST /token 200',
        'GET /en/berlin/status_changes 200',
      ],
      [
        /^\{"version":"2\.0\.0","trips":\d+\}$/m,
        /^\{"version":"2\.0\.0","events":\d+\}$/m,
        /^\{"version":"2\.0\.0","vehicles":\d+\}$/m,
        /^\{"version":"2\.0\.0","telemetry":\d+\}$/m,
        /\{"feed":"mds-2\.0-[a-z_]+","hour":"\d{4}-\d{2}-\d{2}T\d{2}","state":"published"\}/,
        reportExpected === 200 ? 'provider_id,start_date,duration,special_group_type,geography_id,vehicle_type,trip_count,rider_count' : '"error":"not_found"',
        '{"version":"3.0","feeds":["gbfs","gbfs_versions","system_information"',
        /\[("[0-9a-f-]{36}(:[a-z]+)?",?)+\]/,
        /\{"version":"2\.2","languages":\["[a-z-]+"/,
        /^\{"version":"3\.0","vehicles":\d+\}$/m,
        '"insufficient_scope"',
        /^\{"version":"1\.2\.0","status_changes":\d+\}$/m,
      ],
    );
    // MDS lists every vehicle with a status (those removed more than 90 minutes ago of the simulated
    // day left out), GBFS those on the street and not riding (a snapshot up to 15 s old): some of berlin's
    const count = (re: RegExp) => Number(re.exec(block('feeds').stdout)![1]);
    expect(count(/^\{"version":"2\.0\.0","vehicles":(\d+)\}$/m)).to.be.within(1, FLEET);
    expect(count(/^\{"version":"3\.0","vehicles":(\d+)\}$/m)).to.be.within(1, FLEET);
    // the insurance feed twice (key, then deprecated OAuth path): the same hour, the same trips
    const insurance = block('feeds')
      .stdout.split('\n')
      .filter((l) => /^\{"version":"2\.0\.0","trips":\d+\}$/.test(l));
    expect(insurance).to.have.length(3);
    expect(insurance[1]).to.equal(insurance[2]);
  });

  it('console block: publishing, a queued republish, fleet, health, credentials', () => {
    expectBlock(
      'console',
      [
        'GET /console/api/publishing 200',
        'POST /console/api/republish 202',
        'GET /console/api/fleet 200',
        'GET /console/api/health 200',
        'GET /console/api/credentials 200',
      ],
      [
        /^\{"published":\d+,.*"failed":0,/m,
        REPUBLISH_QUEUED,
        `{"zone":"copenhagen","ttl":30,"vehicles":${FLEET}}`,
        /\{"rentals_running":\d+,"families":\["console","feeds","legacy","partner","tomp"\]\}/,
        '{"partner":"Demo Mobility App","scope":"partner"}',
        '{"partner":"Demo Operations","scope":"ops"}',
      ],
    );
  });

  it('console block: the job it printed is a forced republish of that cell, and a publisher runs it', async function () {
    this.timeout(90_000);
    const [, hour, id] = REPUBLISH_QUEUED.exec(block('console').stdout) ?? [];
    expect(id, block('console').stdout).to.be.a('string');
    const job = () => db!.one<{ name: string; state: string; data: unknown }>(`SELECT name, state, data FROM pgboss.job WHERE id = $1`, [id]);
    expect(await job()).to.deep.include({ name: HOUR_QUEUE, data: { zone: 'berlin', hour, feedIds: ['mds-2.0-trips'], force: true } });
    for (let i = 0; i < 120 && (await job()).state !== 'completed'; i++) await new Promise((r) => setTimeout(r, 500));
    expect((await job()).state).to.equal('completed');
  });

  it('the demo city (ops/sim/city.ts): its Policy is registered for the demo zones, read, and its slow zone is an area of berlin', async function () {
    this.timeout(90_000);
    const read = await waitFor(
      'the demo city Policy read',
      async () => {
        const rows = await db!.many<{ zone_id: string; read_status: string | null }>('SELECT zone_id, read_status FROM city_policy_sources ORDER BY zone_id');
        return rows.length === 2 && rows.every((r) => r.read_status === 'ok') && rows;
      },
      75_000,
      500,
    );
    expect(read.map((r) => r.zone_id)).to.deep.equal(['berlin', 'copenhagen']);
    const area = await waitFor(
      'the city slow zone of berlin',
      () => db!.maybeOne<{ name: string }>(`SELECT name FROM areas WHERE zone_id = 'berlin' AND source = 'city' AND area_type = 'slow-zone'`),
      30_000,
      500,
    );
    expect(area.name).to.equal('Slow riding in the centre');
  });

  it('ends cleanly and leaves no file in the directory it ran in', () => {
    expect(run.exitCode, run.failure).to.equal(0);
    expect(readdirSync(cwd)).to.deep.equal([]);
  });
});
