/**
 * The vehicle broker's identities and ACL (issue 41, "Device identity and access"), with a real MQTT
 * 5 client against the real Mosquitto of scripts/mqtt.sh: vehicle A may publish only on its own
 * topics and read only its own commands; it cannot speak as B, read B's commands, or connect without
 * its password; the platform's service identity hears every vehicle through the ingest's shared
 * subscription and commands every vehicle.
 *
 * Absence is proven by order, never by a wait: a denied message is followed by an allowed one on
 * the same connection and topic filter, and the allowed one arriving alone shows the denied one was
 * dropped (the broker keeps a connection's QoS 1 messages in order).
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import {
  commandTopic,
  INGEST_FILTERS,
  parseVehicleTopic,
  QOS,
  repliesFilter,
  replyTopic,
  stateTopic,
  telemetryTopic,
} from '../lib/domain/vehicles/protocol.js';
import { startBroker, type TestBroker } from './support/mqtt.js';

describe('vehicle broker: identities and ACL (real Mosquitto)', function () {
  this.timeout(30_000);
  let broker: TestBroker;
  let platform: MqttClient;
  const a = { id: randomUUID(), password: 'secret-of-a' };
  const b = { id: randomUUID(), password: 'secret-of-b' };
  const heard: Array<{ topic: string; body: string }> = [];
  const clients: MqttClient[] = [];

  const connectAs = async (v: { id: string; password?: string }) => {
    const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: v.id, password: v.password, reconnectPeriod: 0, connectTimeout: 3000 });
    clients.push(c);
    return c;
  };
  const heardUntil = async (body: string) => {
    const until = Date.now() + 10_000;
    while (!heard.some((m) => m.body === body)) {
      if (Date.now() > until) throw new Error(`the platform never heard ${body}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  before(async () => {
    broker = await startBroker();
    await broker.addVehicle(a.id, a.password);
    await broker.addVehicle(b.id, b.password);
    platform = await mqtt.connectAsync(broker.url, { protocolVersion: 5, ...broker.platform, reconnectPeriod: 0 });
    platform.on('message', (topic, payload) => heard.push({ topic, body: payload.toString() }));
    const granted = await platform.subscribeAsync([...INGEST_FILTERS], { qos: QOS });
    expect(granted.map((g) => g.qos)).to.deep.equal([QOS, QOS]);
  });
  after(async () => {
    await Promise.all([platform, ...clients].map((c) => c?.endAsync(true)));
    await broker?.close();
  });

  it('topics: each vehicle has its own, and a topic the platform receives on names its vehicle and channel', () => {
    expect(telemetryTopic(a.id)).to.equal(`vehicles/${a.id}/telemetry`);
    expect(parseVehicleTopic(stateTopic(a.id))).to.deep.equal({ vehicleId: a.id, channel: 'state' });
    expect(parseVehicleTopic(replyTopic(a.id, 'api-1'))).to.deep.equal({ vehicleId: a.id, channel: 'replies' });
    expect(repliesFilter('api-1')).to.equal('vehicles/+/replies/api-1');
    for (const bad of [
      'vehicles/not-a-uuid/telemetry',
      `vehicles/${a.id}/telemetry/extra`,
      `vehicles/${a.id}/replies/a b`,
      `fleet/${a.id}/state`,
      `vehicles/${a.id}`,
    ]) {
      expect(parseVehicleTopic(bad), bad).to.equal(undefined);
    }
  });

  it('a vehicle publishes its own telemetry, and the platform hears it through the shared subscription', async () => {
    const va = await connectAs(a);
    await va.publishAsync(telemetryTopic(a.id), 'own-1', { qos: QOS });
    await heardUntil('own-1');
    expect(heard.find((m) => m.body === 'own-1')?.topic).to.equal(telemetryTopic(a.id));
  });

  it('vehicle A cannot publish as B: the broker drops it, nothing reaches the platform', async () => {
    const va = await connectAs(a);
    // MQTT 5: Mosquitto answers a denied QoS 1 publish with PUBACK reason 135 (not authorised)
    const denied = await va.publishAsync(telemetryTopic(b.id), 'forged-as-b', { qos: QOS }).then(
      (p) => p,
      (err: unknown) => err,
    );
    await va.publishAsync(telemetryTopic(a.id), 'after-forgery', { qos: QOS });
    await heardUntil('after-forgery');
    expect(heard.some((m) => m.body === 'forged-as-b')).to.equal(false);
    expect(denied).to.be.instanceOf(Error);
    expect((denied as { code?: number }).code).to.equal(135);
  });

  it("vehicle A cannot read B's commands, and reads its own", async () => {
    const va = await connectAs(a);
    const got: string[] = [];
    va.on('message', (topic) => got.push(topic));
    const grants = await va.subscribeAsync([commandTopic(b.id), commandTopic(a.id)], { qos: QOS });
    // Mosquitto grants the subscription and checks its read ACL on every delivery: B's commands never
    // reach A
    expect(grants.map((g) => g.qos)).to.deep.equal([QOS, QOS]);
    await platform.publishAsync(commandTopic(b.id), '{"command":"unlock"}', { qos: QOS });
    await platform.publishAsync(commandTopic(a.id), '{"command":"lock"}', { qos: QOS });
    const until = Date.now() + 10_000;
    while (!got.includes(commandTopic(a.id))) {
      if (Date.now() > until) throw new Error('A never got its own command');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(got).to.deep.equal([commandTopic(a.id)]);
  });

  it('a vehicle cannot connect without its password, with a wrong one, or anonymously', async () => {
    for (const creds of [{ id: a.id }, { id: a.id, password: 'wrong' }, { id: '' }]) {
      const err = await connectAs(creds).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(creds)).to.be.instanceOf(Error);
    }
  });
});
