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
import { spawnSync } from 'node:child_process';
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
import { ROOT } from '../lib/core/paths.js';
import { useTestContext } from './support/context.js';
import { entry } from './support/entries.js';
import { insertVehicle, insertZone } from './support/fleet-fixtures.js';
import { startBroker, type TestBroker } from './support/mqtt.js';

/** MQTT 5's reason code "not authorised", in a SUBACK or a PUBACK */
const NOT_AUTHORISED = 135;

/** The SUBACK reason of one filter (its granted QoS, or an error code): mqtt.js rejects a refused one. */
async function subscribeReason(client: MqttClient, filter: string): Promise<number> {
  return client.subscribeAsync(filter, { qos: QOS }).then(
    (granted) => granted[0].qos,
    (err: { packet?: { granted?: number[] } }) => {
      const code = err.packet?.granted?.[0];
      if (code === undefined) throw err as Error;
      return code;
    },
  );
}

describe('vehicle broker: identities and ACL (real Mosquitto)', function () {
  this.timeout(30_000);
  let broker: TestBroker;
  let platform: MqttClient;
  const a = { id: randomUUID(), password: 'secret-of-a' };
  const b = { id: randomUUID(), password: 'secret-of-b' };
  const bridgeId = { username: 'bridge-acme', password: 'secret-of-the-bridge' };
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
    await broker.addBridge(bridgeId.username, bridgeId.password);
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

  it("vehicle A cannot read B's commands: the broker refuses the subscription, and A reads its own", async () => {
    const va = await connectAs(a);
    const got: string[] = [];
    va.on('message', (topic) => got.push(topic));
    // MQTT 5: SUBACK reason 135 (not authorised) for every filter but A's own commands, wildcards included
    for (const filter of [commandTopic(b.id), 'vehicles/+/commands', 'vehicles/#', '#'])
      expect(await subscribeReason(va, filter), filter).to.equal(NOT_AUTHORISED);
    expect(await subscribeReason(va, commandTopic(a.id))).to.equal(QOS);
    await platform.publishAsync(commandTopic(b.id), '{"command":"unlock"}', { qos: QOS });
    await platform.publishAsync(commandTopic(a.id), '{"command":"lock"}', { qos: QOS });
    const until = Date.now() + 10_000;
    while (!got.includes(commandTopic(a.id))) {
      if (Date.now() > until) throw new Error('A never got its own command');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(got).to.deep.equal([commandTopic(a.id)]);
  });

  it("the $share hole is closed: a vehicle cannot join the ingest's group, so no report of another vehicle is lost", async () => {
    const va = await connectAs(a);
    const stolen: string[] = [];
    va.on('message', (_topic, payload) => stolen.push(payload.toString()));
    // Mosquitto's ACL file granted these and dropped, at delivery, the reports the group handed to A
    for (const filter of [...INGEST_FILTERS, '$share/other/vehicles/+/telemetry', `$share/ingest/${telemetryTopic(b.id)}`])
      expect(await subscribeReason(va, filter), filter).to.equal(NOT_AUTHORISED);
    const vb = await connectAs(b);
    const bodies = Array.from({ length: 20 }, (_, i) => `b-report-${i}`);
    for (const body of bodies) await vb.publishAsync(telemetryTopic(b.id), body, { qos: QOS });
    await heardUntil(bodies.at(-1)!);
    // with A in the group, the platform would have heard about half of them
    expect(heard.filter((m) => m.body.startsWith('b-report-')).map((m) => m.body)).to.deep.equal(bodies);
    expect(stolen).to.deep.equal([]);
  });

  it('a vendor bridge speaks for any vehicle and hears their commands, but cannot command them or join the ingest', async () => {
    const bridge = await mqtt.connectAsync(broker.url, {
      protocolVersion: 5,
      username: bridgeId.username,
      password: bridgeId.password,
      reconnectPeriod: 0,
    });
    clients.push(bridge);
    const got: string[] = [];
    bridge.on('message', (topic) => got.push(topic));
    expect(await subscribeReason(bridge, 'vehicles/+/commands')).to.equal(QOS);
    for (const filter of [...INGEST_FILTERS, 'vehicles/#', telemetryTopic(a.id)])
      expect(await subscribeReason(bridge, filter), filter).to.equal(NOT_AUTHORISED);
    await bridge.publishAsync(telemetryTopic(a.id), 'bridged-a', { qos: QOS });
    await bridge.publishAsync(stateTopic(b.id), 'bridged-b', { qos: QOS });
    await heardUntil('bridged-b');
    expect(heard.some((m) => m.body === 'bridged-a')).to.equal(true);
    const forged = await bridge.publishAsync(commandTopic(a.id), 'forged-command', { qos: QOS }).then(
      () => undefined,
      (err: { code?: number }) => err.code,
    );
    expect(forged).to.equal(NOT_AUTHORISED);
    await platform.publishAsync(commandTopic(b.id), '{"command":"lock"}', { qos: QOS });
    const until = Date.now() + 10_000;
    while (!got.includes(commandTopic(b.id))) {
      if (Date.now() > until) throw new Error('the bridge never got the command of its vehicle');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(got).to.deep.equal([commandTopic(b.id)]);
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

describe('ops devices: credentials in Postgres, the broker changed in the same step (real Mosquitto, the ops CLI)', function () {
  this.timeout(120_000);
  const t = useTestContext();
  let broker: TestBroker;
  let zone: string;
  const open: MqttClient[] = [];

  const cli = (args: string[], withBroker = true) =>
    spawnSync(process.execPath, [entry('ops'), 'devices', ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        DATABASE_URL: t.database.url,
        SIGNING_SECRET: 'x'.repeat(40),
        LOG_LEVEL: 'silent',
        MQTT_URL: withBroker ? broker.url : '',
        MQTT_USERNAME: 'platform',
        MQTT_PASSWORD: broker.platform.password,
        MQTT_PASSWORD_FILE: '',
      },
    });
  const ok = (r: ReturnType<typeof cli>) => {
    expect(r.status, r.stderr + r.stdout).to.equal(0);
    return r.stdout;
  };
  const passwordOf = (out: string) => /^password \(shown once\): (\S+)$/m.exec(out)?.[1] ?? expect.fail(`no password in ${out}`);
  const connect = (username: string, password: string) =>
    mqtt.connectAsync(broker.url, { protocolVersion: 5, username, password, reconnectPeriod: 0, connectTimeout: 3000 }).then((c) => (open.push(c), c));
  const canConnect = (username: string, password: string) =>
    connect(username, password).then(
      async (c) => (await c.endAsync(true), true),
      () => false,
    );
  const closed = (c: MqttClient) =>
    new Promise<void>((resolve, reject) => {
      if (!c.connected) return resolve();
      const timer = setTimeout(() => reject(new Error('the broker kept the old connection')), 10_000);
      c.once('close', () => (clearTimeout(timer), resolve()));
    });

  before(async () => {
    broker = await startBroker();
    zone = await insertZone(t.ctx.db);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.endAsync(true)));
    await broker?.close();
  });

  it('create: a vehicle by its code gets its own credentials, once; its user name is its id; the hash alone is stored', async () => {
    const id = await insertVehicle(t.ctx.db, zone);
    const { code } = await t.ctx.db.one<{ code: string }>('SELECT code FROM vehicles WHERE id = $1', [id]);
    const out = ok(cli(['create', code.toLowerCase(), '--label', 'first batch']));
    expect(out).to.match(new RegExp(`^vehicle ${id} \\(generation 1\\); the broker took it$`, 'm'));
    const password = passwordOf(out);
    const c = await connect(id, password);
    // a refused QoS 1 publish rejects (PUBACK 135)
    await c.publishAsync(telemetryTopic(id), 'hello', { qos: QOS });
    const row = await t.ctx.db.one<{ password_hash: string }>('SELECT password_hash FROM device_credentials WHERE username = $1', [id]);
    expect(row.password_hash).to.match(/^\$7\$101\$[A-Za-z0-9+/=]{16}\$[A-Za-z0-9+/=]{88}$/);
    expect(row.password_hash).not.to.contain(password);
    const again = cli(['create', id]);
    expect(again.status).to.equal(1);
    expect(again.stderr.trim()).to.equal(`error: ${id} has credentials already: ops devices rotate ${id} issues new ones`);
    expect(cli(['create', 'NOPE']).stderr.trim()).to.equal('error: no vehicle NOPE');
  });

  it('rotate: the broker drops the connection, the old password stops at once, the new one works', async () => {
    const id = await insertVehicle(t.ctx.db, zone);
    const first = passwordOf(ok(cli(['create', id])));
    const c = await connect(id, first);
    const second = passwordOf(ok(cli(['rotate', id])));
    await closed(c);
    expect(await canConnect(id, first)).to.equal(false);
    expect(await canConnect(id, second)).to.equal(true);
    expect((await t.ctx.db.one<{ generation: number }>('SELECT generation FROM device_credentials WHERE username = $1', [id])).generation).to.equal(2);
  });

  it('revoke: the broker drops the connection and the vehicle cannot connect any more; list shows it with --all only', async () => {
    const id = await insertVehicle(t.ctx.db, zone);
    const password = passwordOf(ok(cli(['create', id])));
    const c = await connect(id, password);
    expect(ok(cli(['revoke', id])).trim()).to.equal(`revoked ${id}`);
    await closed(c);
    expect(await canConnect(id, password)).to.equal(false);
    expect(ok(cli(['list']))).not.to.contain(id);
    expect(ok(cli(['list', '--all']))).to.contain(id);
    expect(cli(['revoke', id]).stderr.trim()).to.equal(`error: no active credentials for ${id}`);
  });

  it('a bridge identity (bridge-<name>) speaks for any vehicle; a name that is not one is refused', async () => {
    const password = passwordOf(ok(cli(['create', 'bridge-acme'])));
    const c = await connect('bridge-acme', password);
    // a refused QoS 1 publish rejects (PUBACK 135)
    await c.publishAsync(stateTopic(randomUUID()), 'bridged', { qos: QOS });
    expect(cli(['create', 'bridge-Acme!']).stderr).to.match(/^error: a bridge's name is bridge- and/);
  });

  it('sync: the running broker drops what the database revoked and names what it lacks; the file brings the rest at its start', async () => {
    // issued while no broker was configured: only the database has it
    const offline = await insertVehicle(t.ctx.db, zone);
    const offlineOut = ok(cli(['create', offline], false));
    expect(offlineOut).to.contain('no broker configured (MQTT_URL)');
    const offlinePassword = passwordOf(offlineOut);
    expect(await canConnect(offline, offlinePassword)).to.equal(false);
    // revoked while no broker was configured: the broker still lets it in
    const gone = await insertVehicle(t.ctx.db, zone);
    const gonePassword = passwordOf(ok(cli(['create', gone])));
    ok(cli(['revoke', gone], false));
    expect(await canConnect(gone, gonePassword)).to.equal(true);
    // on the broker only, never in the database
    const stray = randomUUID();
    await broker.addVehicle(stray, 'stray-password');

    const r = cli(['sync']);
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stdout).to.match(/^deleted from the broker: /m);
    for (const u of [gone, stray]) expect(r.stdout).to.contain(u);
    expect(r.stderr.trim()).to.match(new RegExp(`^error: the running broker lacks 1 identities \\(${offline}\\) and holds 0 with an older password`));
    expect(await canConnect(gone, gonePassword)).to.equal(false);
    expect(await canConnect(stray, 'stray-password')).to.equal(false);

    expect(ok(cli(['sync', '--file', broker.dynsecFile]))).to.match(/^wrote \d+ identities into /);
    await broker.restart();
    // the broker now holds the database's own hashes
    expect(await canConnect(offline, offlinePassword)).to.equal(true);
    expect(await canConnect(gone, gonePassword)).to.equal(false);
    expect(await canConnect(broker.platform.username, broker.platform.password)).to.equal(true);
    expect(ok(cli(['sync']))).to.contain('the broker holds every active identity with its current password');
  });
});
