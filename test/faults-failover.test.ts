/**
 * Fault: the primary of a real HA cluster (scripts/ha.sh: etcd, two Patroni nodes of PostgreSQL 15
 * with synchronous replication, HAProxy) is lost under load, once by a SIGKILL of its postmaster and
 * once frozen (SIGSTOP of its Patroni and every Postgres process, as a paused VM), and the standby is
 * promoted. The API (a real bin/api.ts process), the publisher (bin/publisher.ts with its cron), the
 * vehicle ingest (bin/ingest.ts behind the embedded Mosquitto) and the live fleet simulator connect
 * through HAProxy's read-write port, the API's replica reads through its read-only port, and none of
 * them is restarted.
 *
 * Partner clients start and end rentals and register users, TOMP clients book one-stop and finish
 * their legs, each write with an Idempotency-Key that a client retries after a 503 until it is
 * answered, and 30 vehicles report every 2 s over MQTT (QoS 1): the ledger of what was acknowledged
 * (by the API, and by the broker) is compared with the new primary afterwards.
 *
 * Shown, for each fault: every request is answered within 3 s (a 503 with Retry-After in its
 * family's error format while there is no primary; no 500, no hang); every acknowledged write is on
 * the new primary; an acknowledged key replays its first answer after the failover; the processes
 * are the same; the GBFS files are fresh again within their ttl plus the failover time; no feed hour
 * is missing and none was stored twice with different bytes. The frozen primary, thawed, is a
 * standby that refuses writes. The test prints the time from the fault to the first success and the
 * requests refused.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../lib/core/migrate.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { ROOT } from '../lib/core/paths.js';
import type { AppContext } from '../lib/domain/context.js';
import { seedDemo } from '../ops/seed/index.js';
import { startLiveSimulator, type LiveSimulator } from '../ops/sim/live.js';
import { ownDatabaseContext, waitFor } from './support/faults.js';
import { count } from './support/figures.js';
import { startApiProcess, type ApiProcess } from './support/api-process.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';
import { spawn, type ChildProcess } from 'node:child_process';
import mqtt, { type MqttClient } from 'mqtt';
import { telemetryTopic, QOS } from '../lib/domain/vehicles/protocol.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import { entry } from './support/entries.js';
import { startHaCluster, type HaCluster } from './support/ha.js';

const ROW = 'faults: primary failover';
const ANSWER_WITHIN_MS = 3000;
const HA_BASE_PORT = Number(process.env.HA_TEST_BASE_PORT ?? 24450);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  family: 'partner' | 'tomp';
  what: string;
  /** performance.now() when sent and when answered */
  sentAt: number;
  at: number;
  status: number;
  retryAfter?: string;
  /** the family's error code or type */
  code?: string;
  replayed: boolean;
  body?: any;
}

describe('faults: the primary lost under load, the standby promoted', function () {
  this.timeout(300_000);
  let cluster: HaCluster;
  let urls: { rw: string; ro: string };
  const ha = (...args: string[]) => cluster.ha(...args);
  let ctx: AppContext;
  let api: ApiProcess;
  let publisher: ChildProcess;
  let publisherOut = '';
  let live: LiveSimulator;
  let broker: TestBroker;
  let ingest: ChildProcess;
  let ingestOut = '';
  let vehiclesMqtt: MqttClient;
  /** vehicles reporting over MQTT through the ingest, and the reports the broker acknowledged */
  const reporting: string[] = [];
  let reportsAcked = 0;
  let reportAt = { lat: 0, lng: 0 };
  let firstFaultWall: Date | undefined;
  let liveRunning: Promise<void> | undefined;
  let liveStopping = false;
  let storeDir: string;
  let partner: PartnerFixture;
  let maas: { id: string; key: string };
  const pairs: Array<{ user: string; vehicle: string }> = [];
  const tompVehicles: Array<{ id: string; lat: number; lng: number }> = [];

  before(async function () {
    this.timeout(300_000);
    cluster = await startHaCluster('ha-test', HA_BASE_PORT);
    urls = { rw: cluster.rw, ro: cluster.ro };
    await migrate(urls.rw, HOURLY_FEEDS);
    storeDir = mkdtempSync(join(tmpdir(), 'store-failover-'));
    ctx = await ownDatabaseContext(urls.rw, storeDir, 6);
    // the demo's zones and fleet for the live simulator and the publisher, then the clients' own
    await seedDemo(ctx, { vehiclesPerZone: 10 });
    // the live fleet takes the zones there are at its first tick: the demo's, not the clients' below
    live = startLiveSimulator(ctx, { rate: 10, seed: 11, manual: true });
    await live.tick();
    partner = await insertPartner(ctx.db, { rateLimitPerMinute: 100_000 });
    const zone = await insertZone(ctx.db);
    for (let i = 0; i < 16; i++) pairs.push({ user: await insertUser(ctx.db, partner.id), vehicle: (await insertVehicle(ctx.db, zone, { eastM: i * 3 })).id });
    maas = await insertMaasPartner(ctx.db, { rateLimit: 100_000 });
    const tompZone = await insertTompZone(ctx.db);
    for (let i = 0; i < 8; i++) tompVehicles.push(await insertTompVehicle(ctx.db, tompZone, { lng: -3.7038 + i * 0.00004 }));

    reportAt = { lat: zone.lat, lng: zone.lng };
    for (let i = 0; i < 30; i++) reporting.push((await insertVehicle(ctx.db, zone, { eastM: 200 + i * 3 })).id);

    const env = { DATABASE_REPLICA_URL: urls.ro, DATABASE_POOL_SIZE: '10' };
    api = await startApiProcess({ url: urls.rw } as never, storeDir, env);
    publisher = spawn(process.execPath, [entry('publisher')], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: urls.rw,
        ...env,
        STORE_URL: `file://${storeDir}`,
        METRICS_PORT: '0',
        PUBLISHER_METRICS_PORT: '0',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    publisher.stdout!.on('data', (c) => (publisherOut += c));
    publisher.stderr!.on('data', (c) => (publisherOut += c));
    // the vehicle ingest (bin/ingest.ts) behind the embedded Mosquitto, as make run starts it
    broker = await startBroker();
    ingest = spawn(process.execPath, [entry('ingest')], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: urls.rw,
        MQTT_URL: broker.url,
        MQTT_USERNAME: broker.platform.username,
        MQTT_PASSWORD: broker.platform.password,
        INGEST_ID: 'failover',
        INGEST_METRICS_PORT: '0',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    ingest.stdout!.on('data', (c) => (ingestOut += c));
    ingest.stderr!.on('data', (c) => (ingestOut += c));
    await waitFor('the ingest running', () => ingestOut.includes('ingest running'), 30_000);
    vehiclesMqtt = await mqtt.connectAsync(broker.url, { protocolVersion: 5, ...broker.platform, clientId: 'failover-vehicles', reconnectPeriod: 0 });
    // its ticks every 0.5 s, through the failovers as through anything else (a failed tick is the next one's to repeat)
    liveRunning = (async () => {
      while (!liveStopping) {
        await live.tick().catch(() => undefined);
        await sleep(500);
      }
    })();
    // the publisher's first GBFS files, the fleet riding
    await waitFor('the first GBFS files', async () => (await ctx.db.maybeOne(`SELECT 1 FROM gbfs_snapshots LIMIT 1`)) !== undefined, 90_000, 250);
  });

  after(async function () {
    this.timeout(120_000);
    liveStopping = true;
    await liveRunning;
    await live?.stop().catch(() => undefined);
    await vehiclesMqtt?.endAsync(true).catch(() => undefined);
    ingest?.kill('SIGKILL');
    await broker?.close().catch(() => undefined);
    api?.stop();
    publisher?.kill('SIGKILL');
    await ctx?.db.close();
    await cluster?.destroy().catch(() => undefined);
    if (storeDir) rmSync(storeDir, { recursive: true, force: true });
  });

  async function call(family: Answer['family'], what: string, method: string, path: string, body?: object, key?: string): Promise<Answer & { body: any }> {
    const sentAt = performance.now();
    const headers: Record<string, string> = family === 'partner' ? { 'X-Auth-Token': partner.key } : { 'X-Access-Token': maas.key };
    if (body) headers['Content-Type'] = 'application/json';
    if (key) headers['Idempotency-Key'] = key;
    try {
      const res = await fetch(api.base + (family === 'tomp' ? `/edge/tomp${path}` : path), {
        method,
        headers,
        body: body ? JSON.stringify(body) : undefined,
        // a hang shows as status 0 after 10 s, far past the 3 s allowed
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      return {
        family,
        what,
        sentAt,
        at: performance.now(),
        status: res.status,
        retryAfter: res.headers.get('retry-after') ?? undefined,
        code: family === 'partner' ? parsed?.errors?.[0]?.code : parsed?.type,
        replayed: res.headers.get('idempotent-replayed') === 'true',
        body: parsed,
      };
    } catch {
      return { family, what, sentAt, at: performance.now(), status: 0, replayed: false, body: undefined };
    }
  }

  /**
   * Load from partner and TOMP clients until `stop()`; every write carries a key and is sent again
   * with it after a 503 until it is answered, so the ledger holds every write the platform took.
   */
  function load() {
    const answers: Answer[] = [];
    const ledger = {
      starts: new Map<string, { key: string; body: object }>(),
      ends: new Set<string>(),
      users: new Set<string>(),
      bookings: new Set<string>(),
      finished: new Set<string>(),
    };
    let stopping = false;
    const newKey = () => `fo-${process.pid}-${Math.random().toString(36).slice(2)}-${performance.now().toFixed(0)}`;
    /**
     * sends until answered other than 503 or 409 IdempotencyKeyInUse (the first attempt's answer not
     * yet recorded), as a client honouring Retry-After does, at a test's pace
     */
    const write = async (family: Answer['family'], what: string, method: string, path: string, body: object) => {
      const key = newKey();
      for (;;) {
        const a = await call(family, what, method, path, body, key);
        answers.push(a);
        if (a.status !== 503 && a.status !== 0 && a.code !== 'IdempotencyKeyInUse') return { ...a, key };
        if (stopping) return { ...a, key };
        await sleep(100);
      }
    };
    const partnerWorker = async (mine: typeof pairs) => {
      for (let i = 0; !stopping; i++) {
        const p = mine[i % mine.length];
        const body = { userId: p.user, vehicleId: p.vehicle, userLicenseValidated: true };
        const started = await write('partner', 'start', 'POST', '/v1/rental/start', body);
        if (started.status !== 200) continue;
        const id = started.body.data[0].id as string;
        ledger.starts.set(id, { key: started.key, body });
        const ended = await write('partner', 'end', 'POST', `/v1/rental/${id}/end`, {});
        if (ended.status === 200) ledger.ends.add(id);
        if (i % 3 === 0) {
          const externalId = `fo-user-${Math.random().toString(36).slice(2)}`;
          const reg = await write('partner', 'register', 'POST', '/v1/user/register', { email: `${externalId}@example.com`, externalId });
          if (reg.status === 200) ledger.users.add(reg.body.data.id);
        }
      }
    };
    const tompWorker = async (mine: typeof tompVehicles) => {
      for (let i = 0; !stopping; i++) {
        const v = mine[i % mine.length];
        const booked = await write('tomp', 'book', 'POST', '/bookings/one-stop', oneStopBody(v.id, v));
        if (booked.status !== 201) continue;
        ledger.bookings.add(booked.body.id);
        const leg = booked.body.legs[0].id as string;
        const finished = await write('tomp', 'finish', 'POST', `/legs/${leg}/events`, { event: 'FINISH', time: new Date().toISOString() });
        if (finished.status === 200) ledger.finished.add(booked.body.id);
        // the regions, a read of TOMP's every call
        answers.push(await call('tomp', 'regions', 'GET', '/operator/regions'));
      }
    };
    // the vehicles' telemetry: a report of each every 2 s (within the ingest's 60 a minute of one
    // vehicle), QoS 1: acknowledged by the broker, which keeps it until the ingest has committed it
    const reporter = async () => {
      for (let k = 0; !stopping; k++) {
        const ts = Date.now();
        await Promise.all(
          reporting.map((id, i) =>
            vehiclesMqtt
              .publishAsync(telemetryTopic(id), JSON.stringify({ ts: ts + i, ...reportAt, battery_percent: 60 }), { qos: QOS })
              .then(() => reportsAcked++),
          ),
        );
        await sleep(2000);
      }
    };
    const workers = [
      reporter(),
      ...Array.from({ length: 4 }, (_, w) => partnerWorker(pairs.filter((_, i) => i % 4 === w))),
      ...Array.from({ length: 2 }, (_, w) => tompWorker(tompVehicles.filter((_, i) => i % 2 === w))),
    ];
    return {
      answers,
      ledger,
      stop: async () => {
        stopping = true;
        await Promise.all(workers);
      },
    };
  }

  async function scenario(fault: 'kill-primary' | 'freeze-primary') {
    count(ROW, 'faults');
    const l = load();
    await waitFor('writes before the fault', () => l.ledger.ends.size >= 6 && l.ledger.finished.size >= 2, 60_000, 50).catch(async (err: Error) => {
      await l.stop();
      const seen = [...new Set(l.answers.map((a) => `${a.family} ${a.what} ${a.status} ${a.code ?? ''}`))];
      throw new Error(`${err.message}: ${seen.join('; ')}`);
    });
    // a synchronous standby that Patroni may promote (named in its /sync key: after the previous
    // failover, the old primary is named there some seconds after it rejoined)
    await ha('ready');
    const old = (await ha('leader')).trim();
    const faultWall = new Date();
    firstFaultWall ??= faultWall;
    await ha(fault);
    // from the moment the signal was sent (the script returns right after it)
    const faultAt = performance.now();
    // the first acknowledged write sent after the fault
    const firstSuccess = await waitFor(
      'a write acknowledged after the fault',
      () => l.answers.find((a) => a.sentAt > faultAt && (a.status === 200 || a.status === 201) && a.what !== 'regions')?.at,
      60_000,
      20,
    );
    const recovery = firstSuccess - faultAt;
    const before = l.ledger.ends.size;
    await waitFor('more writes after the failover', () => l.ledger.ends.size >= before + 6, 60_000, 50);
    if (fault === 'freeze-primary') await ha('thaw');
    await l.stop();
    const answers = l.answers;
    count(ROW, 'inputs', answers.length);

    // every answer prompt, none a 500: the outage is the fault to the first success
    const during = answers.filter((a) => a.at > faultAt && a.sentAt < firstSuccess);
    const slow = during.filter((a) => a.status === 0 || a.at - Math.max(a.sentAt, faultAt) > ANSWER_WITHIN_MS);
    const bad = answers.filter((a) => a.status >= 500 && a.status !== 503);
    const refused = answers.filter((a) => a.status === 503);
    const statuses = [...new Set(during.map((a) => `${a.family} ${a.status} ${a.code ?? ''}`))].sort();
    if (slow.length || bad.length) count(ROW, 'failures', slow.length + bad.length);
    expect(
      bad.map((a) => `${a.family} ${a.what} ${a.status} ${a.code}`),
      'answers other than 503 among the 5xx',
    ).to.deep.equal([]);
    expect(
      slow.map((a) => `${a.family} ${a.what} ${a.status} after ${Math.round(a.at - Math.max(a.sentAt, faultAt))} ms`),
      `answers slower than ${ANSWER_WITHIN_MS} ms (or none) in the outage`,
    ).to.deep.equal([]);
    expect(refused.length, 'requests refused while there was no primary').to.be.greaterThan(0);
    for (const a of refused) {
      expect(Number(a.retryAfter), `${a.family} ${a.what} ${a.code} ${JSON.stringify(a.body)}: Retry-After`).to.be.within(1, 60);
      expect(a.code, `${a.family} ${a.what} ${JSON.stringify(a.body)}: the family’s error`).to.equal('ServiceUnavailable');
    }

    // every acknowledged write is on the new primary
    const rows = await ctx.db.many(`SELECT id, state FROM rentals WHERE id = ANY ($1::uuid[])`, [[...l.ledger.starts.keys()]]);
    expect(rows.length, 'acknowledged starts').to.equal(l.ledger.starts.size);
    const state = new Map(rows.map((r) => [r.id as string, r.state as string]));
    for (const id of l.ledger.ends) expect(state.get(id), `acknowledged end of ${id}`).to.not.equal('RUNNING');
    const trips = await ctx.db.one(`SELECT count(*)::int AS n FROM trips WHERE rental_id = ANY ($1::uuid[])`, [[...l.ledger.ends]]);
    expect(trips.n, 'trips of acknowledged ends').to.equal(l.ledger.ends.size);
    const users = await ctx.db.one(`SELECT count(*)::int AS n FROM users WHERE id = ANY ($1::uuid[])`, [[...l.ledger.users]]);
    expect(users.n, 'acknowledged registrations').to.equal(l.ledger.users.size);
    const bookings = await ctx.db.many(`SELECT id, state FROM tomp_bookings WHERE id = ANY ($1::uuid[])`, [[...l.ledger.bookings]]);
    expect(bookings.length, 'acknowledged bookings').to.equal(l.ledger.bookings.size);

    // an acknowledged key replays its first answer on the new primary
    for (const [id, first] of l.ledger.starts) {
      let replay = await call('partner', 'start', 'POST', '/v1/rental/start', first.body, first.key);
      // a record the failover interrupted is written again by the API within the key's lease
      for (let i = 0; i < 60 && replay.code === 'IdempotencyKeyInUse'; i++) {
        await sleep(500);
        replay = await call('partner', 'start', 'POST', '/v1/rental/start', first.body, first.key);
      }
      expect([replay.status, replay.replayed, replay.body?.data?.[0]?.id], `the replay of the start of ${id}`).to.deep.equal([200, true, id]);
    }

    // every report the broker acknowledged is stored once the ingest has written what it held
    const stored = async () => (await ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM telemetry WHERE device_id = ANY ($1::uuid[])`, [reporting])).n;
    await waitFor('the acknowledged reports stored', async () => (await stored()) >= reportsAcked, 60_000, 250).catch(async () => {
      const lines = ingestOut.split('\n').filter((l) => !l.includes('writing it again'));
      expect(await stored(), `reports stored of the ${reportsAcked} acknowledged: ${lines.slice(-8).join('\n')}`).to.equal(reportsAcked);
    });
    expect(await stored(), 'reports stored once').to.equal(reportsAcked);

    // the same processes carry on
    expect(ingest.exitCode, `the ingest: ${ingestOut.slice(-2000)}`).to.equal(null);
    expect(api.proc.exitCode, `the API process: ${api.out.slice(-2000)}`).to.equal(null);
    expect(publisher.exitCode, `the publisher: ${publisherOut.slice(-2000)}`).to.equal(null);

    // GBFS fresh again within its ttl plus the failover time (and the publisher's 15 s run)
    const fresh = await waitFor(
      'GBFS files after the failover',
      async () => {
        const r = await ctx.db.maybeOne<{ ttl: number }>(`SELECT ttl FROM gbfs_snapshots WHERE file = 'vehicle_status' AND last_updated > $1 LIMIT 1`, [
          faultWall,
        ]);
        return r ? { ttl: r.ttl, at: performance.now() } : undefined;
      },
      180_000,
      250,
    );
    const gbfsMs = fresh.at - faultAt;

    const promoted = (await ha('leader')).trim();
    expect(promoted, 'the leader after the fault').to.not.equal(old);
    console.log(
      `      [failover ${fault}] ${answers.length} requests; first acknowledged write ${Math.round(recovery)} ms after the fault; ` +
        `${refused.length} refused (503 + Retry-After: ${statuses.join(', ')}); ${l.ledger.starts.size} starts, ${l.ledger.ends.size} ends, ` +
        `${l.ledger.users.size} users, ${l.ledger.bookings.size} bookings and ${reportsAcked} vehicle reports (in all) acknowledged, all on the new primary; GBFS fresh ${Math.round(gbfsMs / 1000)} s after the fault (ttl ${fresh.ttl} s)`,
    );
    expect(gbfsMs, 'GBFS back within its ttl plus the failover time').to.be.below((fresh.ttl + 15) * 1000 + recovery + 5000);
    return { old, promoted };
  }

  it('SIGKILL of the primary’s postmaster: 503 + Retry-After within 3 s, then the standby serves; nothing acknowledged lost', async () => {
    await scenario('kill-primary');
  });

  it('the primary frozen (SIGSTOP): the same, and once thawed the old primary is a standby that refuses writes', async () => {
    const { old } = await scenario('freeze-primary');
    const port = cluster.pgPort(old);
    // once Patroni on the thawed node has seen the leader key is another's, its Postgres is a standby
    await waitFor(
      'the old primary demoted',
      async () => {
        const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'platform', connectionTimeoutMillis: 1000 });
        try {
          await c.connect();
          return (await c.query('SELECT pg_is_in_recovery() AS r')).rows[0].r === true;
        } catch {
          return false;
        } finally {
          await c.end().catch(() => undefined);
        }
      },
      60_000,
      250,
    );
    const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'platform' });
    await c.connect();
    try {
      const err = await c.query(`INSERT INTO users (partner_id, external_id, email) VALUES ($1, 'frozen', 'frozen@example.com')`, [partner.id]).then(
        () => undefined,
        (e: Error) => e.message,
      );
      expect(err, 'a write on the old primary').to.match(/read-only transaction/);
    } finally {
      await c.end();
    }
  });

  it('no feed hour is missing, none was stored twice with different bytes, every publication recorded is there', async () => {
    const twice = await ctx.db.many(
      `SELECT feed, version, scope, hour, count(DISTINCT sha256)::int AS n FROM feed_publication_log GROUP BY 1, 2, 3, 4 HAVING count(DISTINCT sha256) > 1`,
    );
    expect(twice, 'one hour of one feed stored with different bytes').to.deep.equal([]);
    // every file the publisher recorded as published (its log) is the published one: none lost with the primaries
    const lost = await ctx.db.many(
      `SELECT l.feed, l.version, l.scope, l.hour FROM feed_publication_log l
         LEFT JOIN feed_publications p ON (p.feed, p.version, p.scope, p.hour) = (l.feed, l.version, l.scope, l.hour) AND p.status = 'published'
        WHERE p.hour IS NULL`,
    );
    expect(lost, 'logged publications without their published row').to.deep.equal([]);
    // every hour due from before the first fault to now is published for every feed and scope (the
    // catch-up of the demo's month goes on in the background, so older hours may still be due). An
    // hour is due once it has closed and PUBLISH_LATENESS_SECONDS (300) have passed; two minutes of
    // margin each side: the one before the faults had been published, the newest has had its tick
    const due = (at: number) => Math.floor((at - 3_600_000 - 300_000 - 120_000) / 3_600_000) * 3_600_000;
    const from = new Date(due(firstFaultWall!.getTime()));
    const to = new Date(Math.max(from.getTime(), due(Date.now())));
    const missing = () =>
      ctx.db.many(
        `SELECT k.feed, k.version, k.scope, h.hour FROM (SELECT DISTINCT feed, version, scope FROM feed_publications) k
           CROSS JOIN generate_series($1::timestamptz, $2::timestamptz, interval '1 hour') AS h(hour)
          WHERE NOT EXISTS (SELECT 1 FROM feed_publications p WHERE (p.feed, p.version, p.scope) = (k.feed, k.version, k.scope)
                               AND p.status = 'published' AND p.hour = h.hour AT TIME ZONE 'UTC')`,
        [from, to],
      );
    await waitFor('the hours due published everywhere', async () => (await missing()).length === 0, 120_000, 1000).catch(async () => {
      expect(await missing(), `hours due from ${from.toISOString()} to ${to.toISOString()} not published`).to.deep.equal([]);
    });
  });
});
