/**
 * docs/vehicles.md, executed, so that the integration guide cannot drift from the protocol: against a
 * real Mosquitto with the project's ACL (test/support/mqtt.ts), a vehicle with its own credentials,
 * the real MqttGateway and the real ingest on a real Postgres.
 *
 * - every ```json vehicles-payload <Schema>``` block validates against that schema, and every payload
 *   schema of schemas/vehicles/messages.ts has one;
 * - every ```sh vehicles-example``` block runs in bash with the vehicle's MQTT_HOST, MQTT_PORT,
 *   VEHICLE_ID and VEHICLE_PASSWORD: what it publishes reaches the platform (the ACL let the vehicle
 *   publish it) on the vehicle's own topics, passes its channel's schema, and the ingest stores it;
 * - the `denied` block is refused by the broker as its comment says, and nothing of it reaches the
 *   platform;
 * - the `commands` block shows a command of the real gateway with its MQTT 5 properties;
 * - the ```js vehicles-example``` block (the mqtt.js vehicle) answers the real gateway's unlock,
 *   set_speed and lock, and refuses the lock with LOCK_JAMMED=1.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { ROOT } from '../lib/core/paths.js';
import { createLogger } from '../lib/core/log.js';
import { compile } from '../lib/core/validate.js';
import { GatewayError } from '../lib/domain/gateway.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import { CHANNELS, commandExpirySeconds, commandTopic, parseVehicleTopic, QOS, replyTopic, telemetryTopic } from '../lib/domain/vehicles/protocol.js';
import { VehicleCommandSchema, VehicleReplySchema, VehicleStateSchema, VehicleTelemetrySchema } from '../schemas/vehicles/messages.js';
import { startIngest, type Ingest } from '../ingest/index.js';
import { useTestContext } from './support/context.js';
import { waitFor } from './support/faults.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import { insertVehicle, insertZone } from './support/partner-fixtures.js';

interface Block {
  lang: string;
  tags: string[];
  body: string;
  line: number;
}

const DOC = readFileSync(join(ROOT, 'docs', 'vehicles.md'), 'utf8');

/** The fenced blocks whose info string carries `vehicles-payload` or `vehicles-example`. */
function blocks(): Block[] {
  const out: Block[] = [];
  for (const m of DOC.matchAll(/^```(\w+)[ \t]+([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm)) {
    const tags = m[2].trim().split(/\s+/);
    if (tags[0] !== 'vehicles-payload' && tags[0] !== 'vehicles-example') continue;
    out.push({ lang: m[1], tags, body: m[3], line: DOC.slice(0, m.index).split('\n').length });
  }
  return out;
}
const BLOCKS = blocks();
const payloads = BLOCKS.filter((b) => b.tags[0] === 'vehicles-payload');
const shell = (tag?: string) => BLOCKS.filter((b) => b.lang === 'sh' && b.tags[0] === 'vehicles-example' && b.tags[1] === tag);
const [vehicleScript] = BLOCKS.filter((b) => b.lang === 'js' && b.tags[0] === 'vehicles-example');

const SCHEMAS = {
  VehicleTelemetry: VehicleTelemetrySchema,
  VehicleState: VehicleStateSchema,
  VehicleCommand: VehicleCommandSchema,
  VehicleReply: VehicleReplySchema,
};
const validators = Object.fromEntries(Object.entries(SCHEMAS).map(([name, s]) => [name, compile(s)]));
/** a channel's payload schema, by the name (`$id`) protocol.ts gives it */
const schemaOfChannel = (channel: string) => CHANNELS.find((c) => c.channel === channel)!.payload.$id;

interface Heard {
  topic: string;
  body: string;
}

describe('docs/vehicles.md, executed (real Mosquitto, real gateway, real ingest)', function () {
  this.timeout(60_000);
  const t = useTestContext();
  let broker: TestBroker;
  let observer: MqttClient;
  let gateway: MqttGateway;
  let ingest: Ingest;
  let vehicleId: string;
  const password = 'doc-vehicle-password';
  const heard: Heard[] = [];
  const children: ChildProcess[] = [];
  let scratch: string;

  const env = () => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? scratch,
    MQTT_HOST: '127.0.0.1',
    MQTT_PORT: new URL(broker.url).port,
    MQTT_URL: broker.url,
    VEHICLE_ID: vehicleId,
    VEHICLE_PASSWORD: password,
  });

  /** Runs a shell block in bash, as a reader pastes it; resolves with its exit code and output. */
  async function runShell(block: Block): Promise<{ code: number; stdout: string; stderr: string }> {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block.body], { cwd: scratch, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    return { code, stdout, stderr };
  }

  /** What reached the platform since `from` (an index into `heard`). */
  const since = (from: number) => heard.slice(from);

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'vehicles-doc-'));
    // the mqtt.js example imports `mqtt` as a reader's project would: from a node_modules beside it
    symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'));
    broker = await startBroker();
    const zone = await insertZone(t.ctx.db);
    vehicleId = (await insertVehicle(t.ctx.db, zone)).id;
    await broker.addVehicle(vehicleId, password);
    observer = await mqtt.connectAsync(broker.url, { protocolVersion: 5, ...broker.platform, clientId: 'doc-observer', reconnectPeriod: 0 });
    observer.on('message', (topic, payload) => heard.push({ topic, body: payload.toString('utf8') }));
    await observer.subscribeAsync('vehicles/#', { qos: QOS });
    ingest = startIngest(t.ctx, { url: broker.url, ...broker.platform, id: 'doc', batchMs: 20 });
    await ingest.ready;
    gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'doc-gw', timeoutMs: 3000, log: createLogger('silent') });
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await gateway?.close();
    await ingest?.stop();
    await observer?.endAsync(true);
    await broker?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('has its examples: payloads, reports, a denied publish, the command watch and the mqtt.js vehicle', () => {
    expect(payloads.length).to.be.at.least(4);
    expect(shell().length).to.be.at.least(2);
    expect(shell('denied')).to.have.length(1);
    expect(shell('commands')).to.have.length(1);
    expect(vehicleScript, 'a ```js vehicles-example``` block').to.not.equal(undefined);
  });

  it('every JSON payload validates against its schema, and every payload schema has an example', () => {
    for (const b of payloads) {
      const name = b.tags[1];
      expect(Object.keys(SCHEMAS), `docs/vehicles.md:${b.line}`).to.include(name);
      const valid = validators[name];
      expect(valid(JSON.parse(b.body)), `docs/vehicles.md:${b.line}: ${JSON.stringify(valid.errors)}`).to.equal(true);
    }
    expect([...new Set(payloads.map((b) => b.tags[1]))]).to.have.members(Object.keys(SCHEMAS));
  });

  it('each report example reaches the platform on the vehicle’s own topic, passes its schema and is stored by the ingest', async () => {
    for (const b of shell()) {
      const from = heard.length;
      const storedBefore = ingest.totals.stored;
      const r = await runShell(b);
      expect(r.code, `docs/vehicles.md:${b.line}: ${r.stderr}`).to.equal(0);
      expect(r.stderr, `docs/vehicles.md:${b.line}`).to.equal('');
      const got = await waitFor(`docs/vehicles.md:${b.line} to reach the platform`, () => since(from).length > 0 && since(from));
      for (const m of got) {
        const at = parseVehicleTopic(m.topic);
        expect(at, m.topic).to.deep.include({ vehicleId });
        const name = schemaOfChannel(at!.channel);
        expect(['VehicleTelemetry', 'VehicleState'], m.topic).to.include(name);
        expect(validators[name](JSON.parse(m.body)), `docs/vehicles.md:${b.line} ${m.body}: ${JSON.stringify(validators[name].errors)}`).to.equal(true);
      }
      await waitFor(`the ingest to store docs/vehicles.md:${b.line}`, () => ingest.totals.stored >= storedBefore + got.length);
    }
    expect(ingest.totals.rejected).to.equal(0);
    const stored = await t.ctx.db.one<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1', [vehicleId]);
    expect(stored.n, 'the telemetry example in the vehicle’s history').to.be.at.least(1);
  });

  it('the denied example: the broker refuses a vehicle’s report as another vehicle, as the block says, and nothing of it arrives', async () => {
    const [b] = shell('denied');
    const expected = /^# (.+)$/m.exec(b.body)![1];
    const from = heard.length;
    const r = await runShell(b);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.include(expected);
    // a report of the vehicle's own, published after it, arrives: the refused one was decided before
    const own = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: vehicleId, password, reconnectPeriod: 0 });
    await own.publishAsync(telemetryTopic(vehicleId), 'sentinel', { qos: QOS });
    await own.endAsync();
    const got = await waitFor('the sentinel', () => since(from).some((m) => m.body === 'sentinel') && since(from));
    expect(got.map((m) => m.topic)).to.deep.equal([telemetryTopic(vehicleId)]);
  });

  it('the command watch shows a command of the real gateway with its response topic and expiry', async () => {
    const [b] = shell('commands');
    const quick = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'doc-watch', timeoutMs: 500, log: createLogger('silent') });
    try {
      const watching = runShell(b);
      const exited = children[children.length - 1];
      // mosquitto_sub takes the first command after it subscribed; nobody answers, so each times out
      while (exited.exitCode === null) {
        const err = await quick.unlock(vehicleId).catch((e: unknown) => e);
        expect(err).to.be.instanceOf(GatewayError).and.to.include({ reason: 'unreachable' });
      }
      const r = await watching;
      expect(r.code, r.stderr).to.equal(0);
      const m = /^(\S+) response-topic=(\S+) expiry=(\d+) (.+)$/.exec(r.stdout.trim());
      expect(m, r.stdout).to.not.equal(null);
      expect(m![1]).to.equal(commandTopic(vehicleId));
      expect(m![2]).to.equal(replyTopic(vehicleId, 'doc-watch'));
      expect(Number(m![3])).to.be.within(0, commandExpirySeconds(500));
      const command: unknown = JSON.parse(m![4]);
      expect(validators.VehicleCommand(command), m![4]).to.equal(true);
      expect(command).to.include({ command: 'unlock' });
    } finally {
      await quick.close();
    }
  });

  /** Starts the mqtt.js vehicle of the guide; resolves once it says it waits for commands. */
  async function startVehicle(extra: Record<string, string> = {}): Promise<ChildProcess> {
    const file = join(scratch, 'vehicle.mjs');
    writeFileSync(file, vehicleScript.body);
    const child = spawn(process.execPath, [file], { cwd: scratch, env: { ...env(), ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor('the vehicle to wait for commands', () => {
      if (child.exitCode !== null) throw new Error(`vehicle.mjs exited ${child.exitCode}: ${out}`);
      return out.includes('waiting for commands');
    });
    return child;
  }
  async function stopVehicle(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }

  it('the mqtt.js vehicle reports its state and answers the gateway’s unlock, set_speed and lock', async () => {
    const from = heard.length;
    const vehicle = await startVehicle();
    try {
      await gateway.unlock(vehicleId);
      await gateway.setMaxSpeed(vehicleId, 15);
      await gateway.lock(vehicleId);
      // its replies went to the gateway's response topic and passed as VehicleReply; its state
      // reports (on connect, after the unlock and the lock) are VehicleState and were stored
      const replies = await waitFor('the three replies, seen by the platform', () => {
        const r = since(from).filter((m) => m.topic === replyTopic(vehicleId, 'doc-gw'));
        return r.length >= 3 && r;
      });
      expect(replies.map((m) => JSON.parse(m.body) as unknown)).to.deep.equal([{ result: 'ok' }, { result: 'ok' }, { result: 'ok' }]);
      for (const m of replies) expect(validators.VehicleReply(JSON.parse(m.body))).to.equal(true);
      const states = await waitFor('three state reports', () => {
        const s = since(from).filter((m) => parseVehicleTopic(m.topic)?.channel === 'state');
        return s.length >= 3 && s;
      });
      for (const m of states) expect(validators.VehicleState(JSON.parse(m.body)), m.body).to.equal(true);
      const last = Math.max(...states.map((m) => (JSON.parse(m.body) as { ts: number }).ts));
      await waitFor('the last state applied by the ingest', async () => {
        const v = await t.ctx.db.one<{ locked: boolean | null; at: Date | null }>('SELECT locked, state_reported_at AS at FROM vehicles WHERE id = $1', [
          vehicleId,
        ]);
        return v.at?.getTime() === last && v.locked === true;
      });
    } finally {
      await stopVehicle(vehicle);
    }
  });

  it('with LOCK_JAMMED=1 the mqtt.js vehicle refuses the lock: GatewayError refused', async () => {
    const vehicle = await startVehicle({ LOCK_JAMMED: '1' });
    try {
      await gateway.unlock(vehicleId);
      const err = await gateway.lock(vehicleId).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(GatewayError).and.to.include({ reason: 'refused', command: 'lock' });
    } finally {
      await stopVehicle(vehicle);
    }
  });
});
