/**
 * The MQTT vehicle gateway (lib/domain/vehicles/mqtt-gateway.ts) against the real Mosquitto and
 * vehicles that are real MQTT 5 clients with their own credentials: a command is a request with a
 * response topic, correlation data and a message expiry, its payload a VehicleCommand; `ok` resolves,
 * `refused` is a GatewayError `refused`, silence past the timeout and an unintelligible reply are
 * `unreachable`; a late reply is dropped; commands to many slow vehicles wait side by side.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { createLogger } from '../lib/core/log.js';
import { compile } from '../lib/core/validate.js';
import { ConfigError, testConfig } from '../lib/core/config.js';
import { GatewayError, SimulatedGateway } from '../lib/domain/gateway.js';
import { closeContext, createContext } from '../lib/domain/runtime.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import { commandTopic, QOS, replyTopic } from '../lib/domain/vehicles/protocol.js';
import { VehicleCommandSchema } from '../schemas/vehicles/messages.js';
import { startBroker, type TestBroker } from './support/mqtt.js';

type Mode = { kind: 'ok' | 'refuse' | 'silent' | 'garbage'; delayMs?: number; barrier?: Barrier };
/** Vehicles that answer only once all of them have their command: serialised commands would never get there. */
interface Barrier {
  size: number;
  waiting: Array<() => void>;
}
interface Heard {
  topic: string;
  body: unknown;
  responseTopic?: string;
  expiry?: number;
}

const validCommand = compile(VehicleCommandSchema);

describe('MQTT vehicle gateway (real Mosquitto, real vehicle clients)', function () {
  this.timeout(30_000);
  let broker: TestBroker;
  let gateway: MqttGateway;
  const vehicles: MqttClient[] = [];
  const heard: Heard[] = [];
  const TIMEOUT = 400;

  /** A vehicle that answers its commands as `mode` says. */
  async function vehicle(mode: Mode): Promise<string> {
    const id = randomUUID();
    await broker.addVehicle(id, `pw-${id}`);
    const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: id, password: `pw-${id}`, reconnectPeriod: 0 });
    vehicles.push(c);
    c.on('message', (topic, payload, packet) => {
      const body: unknown = JSON.parse(payload.toString());
      const { responseTopic, correlationData, messageExpiryInterval } = packet.properties ?? {};
      heard.push({ topic, body, responseTopic, expiry: messageExpiryInterval });
      if (mode.kind === 'silent' || !responseTopic) return;
      const answer =
        mode.kind === 'ok' ? { result: 'ok' } : mode.kind === 'refuse' ? { result: 'refused', reason: 'lock_jammed', temporary: true } : { result: 'maybe' };
      const reply = () =>
        setTimeout(() => void c.publishAsync(responseTopic, JSON.stringify(answer), { qos: QOS, properties: { correlationData } }), mode.delayMs ?? 0);
      const b = mode.barrier;
      if (!b) return void reply();
      b.waiting.push(reply);
      if (b.waiting.length === b.size) for (const go of b.waiting) go();
    });
    await c.subscribeAsync(commandTopic(id), { qos: QOS });
    return id;
  }

  before(async () => {
    broker = await startBroker();
    gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'test-gw', timeoutMs: TIMEOUT, log: createLogger('silent') });
  });
  after(async () => {
    await gateway?.close();
    await Promise.all(vehicles.map((v) => v.endAsync(true)));
    await broker?.close();
  });

  it('unlock: a VehicleCommand with response topic, correlation data and expiry; the ok reply resolves it', async () => {
    const id = await vehicle({ kind: 'ok' });
    await gateway.unlock(id);
    const cmd = heard.find((h) => h.topic === commandTopic(id))!;
    expect(validCommand(cmd.body), JSON.stringify(validCommand.errors)).to.equal(true);
    expect(cmd.body).to.include({ command: 'unlock' });
    expect(cmd.responseTopic).to.equal(replyTopic(id, 'test-gw'));
    expect(cmd.expiry).to.equal(1);
    await gateway.setMaxSpeed(id, 15);
    const speed = heard.find((h) => h.topic === commandTopic(id) && (h.body as { command: string }).command === 'set_speed')!;
    expect(validCommand(speed.body)).to.equal(true);
    expect(speed.body).to.include({ max_speed_kph: 15 });
  });

  it('a refusal is GatewayError refused', async () => {
    const id = await vehicle({ kind: 'refuse' });
    const err = await gateway.lock(id).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(GatewayError);
    expect(err).to.include({ reason: 'refused', command: 'lock' });
  });

  it('silence past the timeout is unreachable; a reply that is not a VehicleReply too', async () => {
    const silent = await vehicle({ kind: 'silent' });
    const t0 = Date.now();
    const err = await gateway.unlock(silent).catch((e: unknown) => e);
    expect(err).to.include({ reason: 'unreachable', command: 'unlock' });
    expect(Date.now() - t0).to.be.at.least(TIMEOUT - 20);
    const garbage = await vehicle({ kind: 'garbage' });
    expect(await gateway.unlock(garbage).catch((e: unknown) => e)).to.include({ reason: 'unreachable' });
  });

  it('a reply after the timeout is dropped, and the next command of that vehicle is answered on its own', async () => {
    const late = await vehicle({ kind: 'ok', delayMs: TIMEOUT + 200 });
    expect(await gateway.unlock(late).catch((e: unknown) => e)).to.include({ reason: 'unreachable' });
    // the late reply arrives while nobody waits; the gateway goes on
    await new Promise((r) => setTimeout(r, 300));
    const fast = await vehicle({ kind: 'ok' });
    await gateway.unlock(fast);
  });

  it("the runtime: MQTT_URL makes the context's gateway the MQTT one (MODE=staging keeps the simulated); bad settings are ConfigErrors", async () => {
    const env = {
      MQTT_URL: broker.url,
      MQTT_USERNAME: broker.platform.username,
      MQTT_PASSWORD: broker.platform.password,
      STORE_URL: 'file://.data/test-store-mqtt',
    };
    const ctx = await createContext(testConfig(env), { applicationName: 'mqtt test', logLevel: 'silent' });
    try {
      expect(ctx.gateway).to.be.instanceOf(MqttGateway);
      const id = await vehicle({ kind: 'ok' });
      await ctx.gateway.unlock(id);
    } finally {
      await closeContext(ctx);
    }
    const staging = await createContext(testConfig({ ...env, MODE: 'staging' }), { logLevel: 'silent' });
    expect(staging.gateway).to.be.instanceOf(SimulatedGateway);
    await closeContext(staging);
    for (const bad of [
      { MQTT_URL: 'http://x' },
      { MQTT_URL: 'mqtt://u:p@x' },
      { MQTT_URL: 'mqtt://x' },
      { MQTT_URL: 'mqtt://x', MQTT_PASSWORD_FILE: '/nonexistent/secret' },
    ]) {
      expect(() => testConfig(bad), JSON.stringify(bad)).to.throw(ConfigError, /MQTT_/);
    }
  });

  it('a broker that cannot be reached at the start: the gateway starts anyway and its commands fail at once as unreachable; wrong credentials fail the start', async function () {
    this.timeout(30_000);
    const { freePort } = await import('./support/faults.js');
    const down = await MqttGateway.connect({
      url: `mqtt://127.0.0.1:${await freePort()}`,
      ...broker.platform,
      gatewayId: 'down-gw',
      timeoutMs: TIMEOUT,
      log: createLogger('silent'),
    });
    try {
      const started = Date.now();
      const err = await down.unlock('00000000-0000-4000-8000-000000000009').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(GatewayError);
      expect((err as GatewayError).reason).to.equal('unreachable');
      expect(Date.now() - started, 'at once, not after the timeout').to.be.lessThan(TIMEOUT);
    } finally {
      await down.close();
    }
    const wrong = await MqttGateway.connect({
      url: broker.url,
      username: 'platform',
      password: 'not-the-password',
      gatewayId: 'wrong-gw',
      timeoutMs: TIMEOUT,
      log: createLogger('silent'),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(wrong, 'refused credentials are the operator’s to fix').to.be.instanceOf(Error);
  });

  it('commands to 30 vehicles wait side by side: each vehicle answers only once all 30 have their command', async () => {
    const barrier: Barrier = { size: 30, waiting: [] };
    const ids = await Promise.all(Array.from({ length: 30 }, () => vehicle({ kind: 'ok', barrier })));
    // a gateway that waited for one reply before sending the next command would time out here; the
    // timeout is generous, so that a loaded machine delivering 30 commands slowly does not
    const patient = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'patient-gw', timeoutMs: 20_000, log: createLogger('silent') });
    try {
      await Promise.all(ids.map((id) => patient.unlock(id)));
    } finally {
      await patient.close();
    }
    expect(barrier.waiting).to.have.length(30);
  });
});
