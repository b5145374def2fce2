/**
 * A slow vehicle stalls nobody else (issue 41): rental starts through the partner API with the real
 * MQTT gateway (lib/domain/vehicles/mqtt-gateway.ts), the real Mosquitto, and each vehicle a real
 * MQTT 5 client that answers its commands after a delay, as a vehicle on cellular does. The engine's
 * two-phase start (lib/domain/rentals/engine.ts) holds no transaction, no pool connection and no
 * admission slot while a vehicle answers:
 * - 50 starts on vehicles answering after 2 s, with a pool of 5: all succeed, the pool is never
 *   waited for, and a vehicle list and a start on a fast vehicle meanwhile answer in a fraction of
 *   the vehicles' answer time;
 * - a refused unlock leaves nothing (no rental, no event, the vehicle ready, no lock sent), and the
 *   claim it held meanwhile is seen by nobody;
 * - an unanswered unlock is FailedToUpdateVehicle, and the compensating lock goes out while the
 *   claim still holds the vehicle;
 * - a process killed between the phases leaves a claim that blocks its vehicle only until it
 *   expires: the next start deletes it, the sweep relocks and deletes the rest;
 * - two starts of one vehicle at once: one wins, the other is refused at once.
 */
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import mqtt, { type MqttClient } from 'mqtt';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { ROOT } from '../lib/core/paths.js';
import { releaseExpiredClaims } from '../lib/domain/rentals/claims.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import { commandTopic, QOS } from '../lib/domain/vehicles/protocol.js';
import { useTestContext } from './support/context.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';

/** What a vehicle answers to a command, and after how long. */
interface Behaviour {
  answer: 'ok' | 'refuse' | 'silent';
  delayMs: number;
}

const ANSWER_MS = 2000;
const POOL = 5;

describe('a slow vehicle stalls nobody else (real MQTT gateway, real Mosquitto, vehicles answering late)', function () {
  this.timeout(120_000);
  const t = useTestContext({ config: { DATABASE_POOL_SIZE: String(POOL) } });
  let broker: TestBroker;
  let gateway: MqttGateway;
  /** the API's own pool, as small as DATABASE_POOL_SIZE says (the test context's pool observes) */
  let apiDb: Db;
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let zone: ZoneFixture;
  const clients: MqttClient[] = [];

  /**
   * Connects vehicle `id`; each command is answered as `behaviour[command]` says (default: ok at
   * once), which the test may change between starts. Returns the commands heard, in order.
   */
  async function connectVehicle(id: string, behaviour: Partial<Record<string, Behaviour>>, onCommand?: (command: string) => void) {
    await broker.addVehicle(id, `pw-${id}`);
    const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: id, password: `pw-${id}`, reconnectPeriod: 0 });
    clients.push(c);
    const heard: string[] = [];
    c.on('message', (_topic, payload, packet) => {
      const { command } = JSON.parse(payload.toString()) as { command: string };
      heard.push(command);
      onCommand?.(command);
      const b = behaviour[command] ?? { answer: 'ok', delayMs: 0 };
      const { responseTopic, correlationData } = packet.properties ?? {};
      if (b.answer === 'silent' || !responseTopic) return;
      const body = b.answer === 'ok' ? { result: 'ok' } : { result: 'refused', reason: 'vehicle_fault' };
      setTimeout(
        () => void c.publishAsync(responseTopic, JSON.stringify(body), { qos: QOS, properties: { correlationData } }).catch(() => undefined),
        b.delayMs,
      );
    });
    await c.subscribeAsync(commandTopic(id), { qos: QOS });
    return heard;
  }

  const start = (userId: string, vehicleId: string) =>
    request(server).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId, vehicleId, userLicenseValidated: true });

  /** A request's answer and how long it took. */
  async function timed<T>(req: PromiseLike<T>): Promise<{ res: T; ms: number }> {
    const t0 = performance.now();
    const res = await req;
    return { res, ms: performance.now() - t0 };
  }

  async function stateOf(vehicleId: string) {
    return t.ctx.db.one<{ rentals: number; claims: number; records: number; events: number; status: string }>(
      `SELECT (SELECT count(*)::int FROM rentals WHERE vehicle_id = $1) AS rentals,
              (SELECT count(*)::int FROM rentals WHERE vehicle_id = $1 AND state = 'STARTING') AS claims,
              (SELECT count(*)::int FROM rental_records WHERE vehicle_id = $1) AS records,
              (SELECT count(*)::int FROM events WHERE device_id = $1) AS events,
              v.status
         FROM vehicles v WHERE v.id = $1`,
      [vehicleId],
    );
  }

  async function until(what: string, cond: () => Promise<boolean>, ms = 10_000) {
    const deadline = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  before(async () => {
    broker = await startBroker();
    const log = createLogger('silent');
    gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'slow-test', timeoutMs: 4 * ANSWER_MS, log });
    apiDb = new Db(t.ctx.config.databaseUrl, log, { max: t.ctx.config.databasePoolSize });
    server = buildApp({ ...t.ctx, db: apiDb, gateway }).callback();
    p = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db);
  });
  after(async () => {
    await gateway?.close();
    await Promise.all(clients.map((c) => c.endAsync(true)));
    await broker?.close();
    await apiDb?.close();
  });

  it('50 starts on vehicles answering after 2 s: all succeed, the pool is never short, other requests stay fast', async () => {
    expect(t.ctx.config.admission.maxInFlight).to.be.at.most(POOL);
    const slow = await Promise.all(Array.from({ length: 50 }, () => insertVehicle(t.ctx.db, zone)));
    for (const v of slow) await connectVehicle(v.id, { unlock: { answer: 'ok', delayMs: ANSWER_MS } });
    const fast = await insertVehicle(t.ctx.db, zone);
    await connectVehicle(fast.id, {});
    const users = await Promise.all(Array.from({ length: 51 }, () => insertUser(t.ctx.db, p.id)));
    // warm: the partner's key is verified and cached, the vehicle list of the zone built once
    expect((await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key)).status).to.equal(200);

    // the API's pool, sampled all along: the 50 arrive at once, so their short claim transactions
    // (and the rate limiter's statements, before admission) may queue for a moment at the pool, but
    // never the 50 of them, and while the vehicles answer nobody waits at all
    let maxWaiting = 0;
    let maxBusy = 0;
    let waitingWhileVehiclesAnswer = 0;
    let vehiclesAnswering = false;
    const sampler = setInterval(() => {
      maxWaiting = Math.max(maxWaiting, apiDb.pool.waitingCount);
      maxBusy = Math.max(maxBusy, apiDb.pool.totalCount - apiDb.pool.idleCount);
      if (vehiclesAnswering) waitingWhileVehiclesAnswer = Math.max(waitingWhileVehiclesAnswer, apiDb.pool.waitingCount);
    }, 2);
    try {
      const t0 = performance.now();
      let answered = 0;
      const starts = slow.map((v, i) =>
        timed(start(users[i], v.id)).then((r) => {
          answered++;
          return r;
        }),
      );
      // every slow start has its claim, and is now waiting for its vehicle with no connection held
      await until('50 claims', async () => (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM rentals WHERE state = 'STARTING'`)).n === 50);
      const claimedMs = performance.now() - t0;
      vehiclesAnswering = true;
      expect(apiDb.pool.totalCount - apiDb.pool.idleCount, 'connections held while the vehicles answer').to.equal(0);
      // other requests meanwhile: a vehicle list, a vehicle, and a start on a vehicle that answers at once
      const list = await timed(request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key));
      const one = await timed(request(server).get(`/v1/vehicles/id/${fast.id}`).set('X-Auth-Token', p.key));
      const quick = await timed(start(users[50], fast.id));
      expect(answered, 'the slow vehicles had not answered yet').to.equal(0);
      expect(list.res.status).to.equal(200);
      expect(one.res.status).to.equal(200);
      expect(quick.res.status, quick.res.text).to.equal(200);
      // the claims' vehicles are still available to everybody's eyes (no half-started rental shows)
      const listed = new Set((list.res.body.data as Array<{ id: string }>).map((v) => v.id));
      expect(slow.every((v) => listed.has(v.id))).to.equal(true);
      for (const { ms } of [list, one, quick]) expect(ms).to.be.below(ANSWER_MS / 2);
      vehiclesAnswering = false;

      const results = await Promise.all(starts);
      const total = performance.now() - t0;
      for (const { res } of results) expect(res.status, res.text).to.equal(200);
      for (const { ms } of results) expect(ms).to.be.at.least(ANSWER_MS - 50);
      // concurrent, not one pool connection after another: 50 × 2 s over 5 connections would be 20 s
      expect(total).to.be.below(claimedMs + 2.5 * ANSWER_MS);
      expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM rental_records WHERE state = 'RUNNING'`)).n).to.equal(51);
    } finally {
      clearInterval(sampler);
    }
    expect(waitingWhileVehiclesAnswer, 'requests waited for a pool connection while the vehicles answered').to.equal(0);
    expect(maxWaiting, 'a backlog at the pool').to.be.at.most(POOL);
    expect(maxBusy).to.be.at.most(POOL);
  });

  it('a refused unlock leaves nothing: no rental, no event, the vehicle available, no lock sent; the claim meanwhile is seen by nobody', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const behaviour: Partial<Record<string, Behaviour>> = { unlock: { answer: 'refuse', delayMs: 500 } };
    const heard = await connectVehicle(v.id, behaviour);
    const user = await insertUser(t.ctx.db, p.id);
    const pending = start(user, v.id).then((r) => r);
    await until('the claim', async () => (await stateOf(v.id)).claims === 1);
    // while the vehicle answers: a claim, and nothing any reader sees
    expect(await stateOf(v.id)).to.deep.equal({ rentals: 1, claims: 1, records: 0, events: 0, status: 'ready' });
    const active = await request(server).get(`/v1/rental/user/${user}/active`).set('X-Auth-Token', p.key);
    expect(active.status).to.equal(404);
    const res = await pending;
    expect(res.status, res.text).to.equal(500);
    expect(res.body.errors[0].code).to.equal('FailedToUnlockVehicle');
    expect(await stateOf(v.id)).to.deep.equal({ rentals: 0, claims: 0, records: 0, events: 0, status: 'ready' });
    expect(heard).to.deep.equal(['unlock']);
    // and the vehicle can be rented right away
    behaviour.unlock = { answer: 'ok', delayMs: 0 };
    expect((await start(user, v.id)).status).to.equal(200);
  });

  it('an unanswered unlock: FailedToUpdateVehicle, and the compensating lock goes out while the claim still holds the vehicle', async () => {
    const short = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'slow-test-short', timeoutMs: 400, log: createLogger('silent') });
    try {
      const app = buildApp({ ...t.ctx, db: apiDb, gateway: short }).callback();
      const v = await insertVehicle(t.ctx.db, zone);
      let claimsWhenLocked: number | undefined;
      const heard = await connectVehicle(v.id, { unlock: { answer: 'silent', delayMs: 0 }, lock: { answer: 'ok', delayMs: 200 } }, (command) => {
        if (command === 'lock') void stateOf(v.id).then((s) => (claimsWhenLocked = s.claims));
      });
      const res = await request(app)
        .post('/v1/rental/start')
        .set('X-Auth-Token', p.key)
        .send({ userId: await insertUser(t.ctx.db, p.id), vehicleId: v.id });
      expect(res.body.errors?.[0]?.code, res.text).to.equal('FailedToUpdateVehicle');
      expect(res.status).to.equal(500);
      expect(heard).to.deep.equal(['unlock', 'lock']);
      expect(claimsWhenLocked, 'no other start could take the vehicle before it locked').to.equal(1);
      expect(await stateOf(v.id)).to.deep.equal({ rentals: 0, claims: 0, records: 0, events: 0, status: 'ready' });
    } finally {
      await short.close();
    }
  });

  it('a process killed between the phases: its claims block their vehicles until they expire, then the next start and the sweep free them', async () => {
    const a = await insertVehicle(t.ctx.db, zone);
    const b = await insertVehicle(t.ctx.db, zone);
    const behaviourA: Partial<Record<string, Behaviour>> = { unlock: { answer: 'silent', delayMs: 0 } };
    const heardA = await connectVehicle(a.id, behaviourA);
    const behaviourB: Partial<Record<string, Behaviour>> = { unlock: { answer: 'silent', delayMs: 0 } };
    const heardB = await connectVehicle(b.id, behaviourB);
    const [ua, ub] = [await insertUser(t.ctx.db, p.id), await insertUser(t.ctx.db, p.id)];
    // another process, with its own gateway, starts both rentals; the vehicles never answer it
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `
        import { testConfig } from './lib/core/config.ts';
        import { Db } from './lib/core/db.ts';
        import { createLogger } from './lib/core/log.ts';
        import { systemClock } from './lib/core/clock.ts';
        import { MqttGateway } from './lib/domain/vehicles/mqtt-gateway.ts';
        import { startRental } from './lib/domain/rentals/engine.ts';
        const env = JSON.parse(process.env.CRASH_TEST);
        const config = testConfig({ DATABASE_URL: env.db });
        const log = createLogger('silent');
        const gateway = await MqttGateway.connect({ ...env.broker, gatewayId: 'doomed', timeoutMs: 60000, log });
        const ctx = { config, db: new Db(env.db, log, { max: 2 }), log, clock: systemClock, gateway };
        for (const s of env.starts) void startRental(ctx, { ...s, partnerId: env.partner, userLicenseValidated: true, source: 'partner' });
        `,
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit'],
        env: {
          ...process.env,
          CRASH_TEST: JSON.stringify({
            db: t.ctx.config.databaseUrl,
            broker: { url: broker.url, ...broker.platform },
            partner: p.id,
            starts: [
              { userId: ua, vehicleId: a.id },
              { userId: ub, vehicleId: b.id },
            ],
          }),
        },
      },
    );
    try {
      await until('both unlocks sent', () => Promise.resolve(heardA.includes('unlock') && heardB.includes('unlock')), 20_000);
      await until('both claims', async () => (await stateOf(a.id)).claims + (await stateOf(b.id)).claims === 2);
    } finally {
      child.kill('SIGKILL');
    }
    // before the expiry the claims hold: another user's start is refused, the claimant's too
    t.ctx.clock.set(Date.now());
    behaviourA.unlock = behaviourB.unlock = { answer: 'ok', delayMs: 0 };
    const other = await insertUser(t.ctx.db, p.id);
    const refused = await start(other, a.id);
    expect(refused.status, refused.text).to.equal(405);
    expect(refused.body.errors[0].code).to.equal('VehicleNotAvailable');
    expect((await start(ub, a.id)).body.errors[0].code).to.equal('RentalAlreadyExists');
    expect(await releaseExpiredClaims({ ...t.ctx, gateway })).to.equal(0);
    // past the expiry (twice GATEWAY_TIMEOUT_MS and the margin, from the other process's clock): the
    // next start on A deletes A's claim in SQL
    t.ctx.clock.set(Date.now() + 2 * t.ctx.config.gateway.timeoutMs + 60_000);
    const won = await start(other, a.id);
    expect(won.status, won.text).to.equal(200);
    expect(await stateOf(a.id)).to.include({ rentals: 1, claims: 0, records: 1, status: 'riding' });
    // …and the sweep relocks B (the dead process may have opened it) and deletes its claim
    expect(await releaseExpiredClaims({ ...t.ctx, gateway })).to.equal(1);
    expect(heardB).to.deep.equal(['unlock', 'lock']);
    expect(await stateOf(b.id)).to.deep.equal({ rentals: 0, claims: 0, records: 0, events: 0, status: 'ready' });
    expect((await start(ub, b.id)).status).to.equal(200);
  });

  it('two starts of one slow vehicle at once: one wins, the other is refused at once; one user on two vehicles likewise', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const heard = await connectVehicle(v.id, { unlock: { answer: 'ok', delayMs: 500 } });
    const answers = await Promise.all([timed(start(await insertUser(t.ctx.db, p.id), v.id)), timed(start(await insertUser(t.ctx.db, p.id), v.id))]);
    const won = answers.filter((a) => a.res.status === 200);
    const lost = answers.filter((a) => a.res.status !== 200);
    expect(won).to.have.length(1);
    expect(lost).to.have.length(1);
    expect(lost[0].res.status).to.equal(405);
    expect(lost[0].res.body.errors[0].code).to.equal('VehicleNotAvailable');
    expect(lost[0].ms, 'the loser does not wait for the winner’s vehicle').to.be.below(500);
    expect(heard).to.deep.equal(['unlock']);
    expect(await stateOf(v.id)).to.include({ rentals: 1, records: 1, status: 'riding' });

    const user = await insertUser(t.ctx.db, p.id);
    const [x, y] = [await insertVehicle(t.ctx.db, zone), await insertVehicle(t.ctx.db, zone)];
    await connectVehicle(x.id, { unlock: { answer: 'ok', delayMs: 500 } });
    await connectVehicle(y.id, { unlock: { answer: 'ok', delayMs: 500 } });
    const both = await Promise.all([start(user, x.id), start(user, y.id)]);
    expect(both.map((r) => r.status).sort()).to.deep.equal([200, 400]);
    expect(both.find((r) => r.status === 400)!.body.errors[0].code).to.equal('RentalAlreadyExists');
    expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM rentals WHERE user_id = $1`, [user])).n).to.equal(1);
  });
});
