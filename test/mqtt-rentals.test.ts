/**
 * Rentals through the MQTT vehicle gateway: the partner and TOMP APIs in-process with
 * lib/domain/vehicles/mqtt-gateway.ts as the context's gateway, the real Mosquitto, and each vehicle
 * a real MQTT 5 client with its own credentials that answers its commands (or refuses, or stays
 * silent). The requirement's error rows come from what the vehicle answered, not from injected faults:
 * - unlock answered ok → the rental runs; the end's lock answered ok → it ends;
 * - unlock refused → FailedToUnlockVehicle; no answer within the timeout → FailedToUpdateVehicle;
 *   nothing is left behind either way;
 * - lock refused on end → FailedToEndRental, the rental still running;
 * - TOMP one-stop with a silent vehicle → 503 with Retry-After;
 * - TOMP with a vehicle refusing for now (`temporary: true`, a jammed lock) → 503 with Retry-After on
 *   the booking and on FINISH (the leg stays in use, the retry finishes it); refusing for good → 406
 *   on the booking.
 */
import { expect } from 'chai';
import mqtt, { type MqttClient } from 'mqtt';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { createLogger } from '../lib/core/log.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import { commandTopic, QOS } from '../lib/domain/vehicles/protocol.js';
import { useTestContext } from './support/context.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

/** `refuse`: for now (`temporary: true`, a jammed lock); `refuse-for-good`: without `temporary` */
type Answer = 'ok' | 'refuse' | 'refuse-for-good' | 'silent';

describe('rentals through the MQTT vehicle gateway (real Mosquitto, real vehicle clients)', function () {
  this.timeout(30_000);
  const t = useTestContext();
  let broker: TestBroker;
  let gateway: MqttGateway;
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let zone: ZoneFixture;
  const clients: MqttClient[] = [];

  /** Connects vehicle `id` to the broker; it answers each command as `answers[command]` says (default ok) and records it. */
  async function connectVehicle(id: string, answers: Partial<Record<string, Answer>>) {
    await broker.addVehicle(id, `pw-${id}`);
    const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: id, password: `pw-${id}`, reconnectPeriod: 0 });
    clients.push(c);
    const heard: string[] = [];
    c.on('message', (_topic, payload, packet) => {
      const { command } = JSON.parse(payload.toString()) as { command: string };
      heard.push(command);
      const answer = answers[command] ?? 'ok';
      const { responseTopic, correlationData } = packet.properties ?? {};
      if (answer === 'silent' || !responseTopic) return;
      const body =
        answer === 'ok'
          ? { result: 'ok' }
          : answer === 'refuse'
            ? { result: 'refused', reason: 'lock_jammed', temporary: true }
            : { result: 'refused', reason: 'vehicle_fault' };
      void c.publishAsync(responseTopic, JSON.stringify(body), { qos: QOS, properties: { correlationData } });
    });
    await c.subscribeAsync(commandTopic(id), { qos: QOS });
    return heard;
  }

  async function rentalsOf(vehicleId: string) {
    return t.ctx.db.one<{ rentals: number; running: number; trip_starts: number; status: string }>(
      `SELECT (SELECT count(*)::int FROM rentals WHERE vehicle_id = $1) AS rentals,
              (SELECT count(*)::int FROM rentals WHERE vehicle_id = $1 AND state = 'RUNNING') AS running,
              (SELECT count(*)::int FROM events WHERE device_id = $1 AND 'trip_start' = ANY (event_types)) AS trip_starts,
              v.status
         FROM vehicles v WHERE v.id = $1`,
      [vehicleId],
    );
  }

  before(async () => {
    broker = await startBroker();
    gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'api-test', timeoutMs: 500, log: createLogger('silent') });
    server = buildApp({ ...t.ctx, gateway }).callback();
    p = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db);
  });
  after(async () => {
    await gateway?.close();
    await Promise.all(clients.map((c) => c.endAsync(true)));
    await broker?.close();
  });

  const start = (userId: string, vehicleId: string) =>
    request(server).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId, vehicleId, userLicenseValidated: true });

  it('a partner start unlocks the vehicle over MQTT, and the end locks it', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const heard = await connectVehicle(v.id, {});
    const res = await start(await insertUser(t.ctx.db, p.id), v.id);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.data[0].attributes.state).to.equal('RUNNING');
    expect(heard).to.deep.equal(['unlock']);
    const end = await request(server).post(`/v1/rental/${res.body.data[0].id}/end`).set('X-Auth-Token', p.key).send({});
    expect(end.status, JSON.stringify(end.body)).to.equal(200);
    expect(end.body.data[0].attributes.state).to.equal('ENDED');
    expect(heard).to.deep.equal(['unlock', 'lock']);
  });

  it('the vehicle refuses the unlock: 500 FailedToUnlockVehicle, nothing left behind', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    await connectVehicle(v.id, { unlock: 'refuse' });
    const res = await start(await insertUser(t.ctx.db, p.id), v.id);
    expect(res.status, JSON.stringify(res.body)).to.equal(500);
    expect(res.body.errors[0].code).to.equal('FailedToUnlockVehicle');
    expect(await rentalsOf(v.id)).to.deep.equal({ rentals: 0, running: 0, trip_starts: 0, status: 'ready' });
  });

  it('the vehicle does not answer within GATEWAY_TIMEOUT_MS: FailedToUpdateVehicle, nothing left behind', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const heard = await connectVehicle(v.id, { unlock: 'silent' });
    const res = await start(await insertUser(t.ctx.db, p.id), v.id);
    expect(res.body.errors?.[0]?.code, JSON.stringify(res.body)).to.equal('FailedToUpdateVehicle');
    expect(res.status).to.be.within(500, 599);
    expect(await rentalsOf(v.id)).to.deep.equal({ rentals: 0, running: 0, trip_starts: 0, status: 'ready' });
    // the unanswered unlock may have opened the vehicle: it is told to lock again
    const until = Date.now() + 5000;
    while (!heard.includes('lock') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(heard).to.deep.equal(['unlock', 'lock']);
  });

  it('the vehicle refuses the lock on end: 500 FailedToEndRental, the rental still running', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    await connectVehicle(v.id, { lock: 'refuse' });
    const res = await start(await insertUser(t.ctx.db, p.id), v.id);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const id = res.body.data[0].id as string;
    const end = await request(server).post(`/v1/rental/${id}/end`).set('X-Auth-Token', p.key).send({});
    expect(end.status, JSON.stringify(end.body)).to.equal(500);
    expect(end.body.errors[0].code).to.equal('FailedToEndRental');
    expect(await rentalsOf(v.id)).to.include({ running: 1 });
  });

  it('TOMP one-stop booking of a vehicle that does not answer: 503 with Retry-After, no booking', async () => {
    const zoneId = await insertTompZone(t.ctx.db);
    const maas = await insertMaasPartner(t.ctx.db);
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    await connectVehicle(v.id, { unlock: 'silent' });
    const res = await request(server).post('/edge/tomp/bookings/one-stop').set('X-Access-Token', maas.key).send(oneStopBody(v.id, v));
    expect(res.status, JSON.stringify(res.body)).to.equal(503);
    expect(res.headers['retry-after']).to.be.a('string');
    const b = await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM tomp_bookings WHERE vehicle_id = $1`, [v.id]);
    expect(b.n).to.equal(0);
  });

  describe('TOMP and temporary vehicle faults', () => {
    let maas: { id: string; key: string };
    let tompZone: string;
    before(async () => {
      tompZone = await insertTompZone(t.ctx.db);
      maas = await insertMaasPartner(t.ctx.db);
    });
    const book = (v: { id: string; lat: number; lng: number }) =>
      request(server).post('/edge/tomp/bookings/one-stop').set('X-Access-Token', maas.key).send(oneStopBody(v.id, v));
    const bookings = async (vehicleId: string) =>
      (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM tomp_bookings WHERE vehicle_id = $1`, [vehicleId])).n;

    it('a jammed lock at the unlock: 503 with Retry-After, nothing booked; the retry books', async () => {
      const v = await insertTompVehicle(t.ctx.db, tompZone);
      const answers: Partial<Record<string, Answer>> = { unlock: 'refuse' };
      await connectVehicle(v.id, answers);
      const res = await book(v);
      expect(res.status, JSON.stringify(res.body)).to.equal(503);
      expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
      expect(res.body).to.include({ status: 503, type: 'FailedToUnlockVehicle' });
      expect(await bookings(v.id)).to.equal(0);
      expect(await rentalsOf(v.id)).to.deep.equal({ rentals: 0, running: 0, trip_starts: 0, status: 'ready' });
      answers.unlock = 'ok';
      expect((await book(v)).status).to.equal(201);
    });

    it('a vehicle refusing the unlock for good: 406, nothing booked', async () => {
      const v = await insertTompVehicle(t.ctx.db, tompZone);
      await connectVehicle(v.id, { unlock: 'refuse-for-good' });
      const res = await book(v);
      expect(res.status, JSON.stringify(res.body)).to.equal(406);
      expect(res.headers['retry-after']).to.equal(undefined);
      expect(await bookings(v.id)).to.equal(0);
    });

    it('a jammed lock at FINISH: 503 with Retry-After, the leg still in use; the retry finishes it', async () => {
      const v = await insertTompVehicle(t.ctx.db, tompZone);
      const answers: Partial<Record<string, Answer>> = { lock: 'refuse' };
      await connectVehicle(v.id, answers);
      const booked = await book(v);
      expect(booked.status, JSON.stringify(booked.body)).to.equal(201);
      const legId = booked.body.legs[0].id as string;
      const finish = () => request(server).post(`/edge/tomp/legs/${legId}/events`).set('X-Access-Token', maas.key).send({ event: 'FINISH' });
      const res = await finish();
      expect(res.status, JSON.stringify(res.body)).to.equal(503);
      expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
      expect(res.body.type).to.equal('FailedToEndRental');
      expect(await rentalsOf(v.id)).to.include({ running: 1 });
      answers.lock = 'ok';
      const retry = await finish();
      expect(retry.status, JSON.stringify(retry.body)).to.equal(200);
      expect(retry.body.state).to.equal('FINISHED');
    });
  });
});
