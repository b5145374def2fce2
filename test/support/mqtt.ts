/**
 * A real MQTT 5 broker per test file: Mosquitto (Debian's package, installed by scripts/mqtt.sh when
 * missing) with the project's own configuration and dynamic-security file (scripts/mqtt.sh init), in
 * a temp directory on a free loopback port. Identities are added as the ops CLI adds them, through
 * the plugin's control API with the platform's identity (lib/domain/vehicles/credentials.ts). Never a
 * mock: the ACL and authentication the tests prove are the broker's.
 *
 *   const broker = await startBroker();   // { url, platform, addVehicle, addBridge, dynsecFile, restart, close }
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { ROOT } from '../../lib/core/paths.js';
import { BrokerControl } from '../../lib/domain/vehicles/broker-control.js';
import { createCommands, type DeviceKind } from '../../lib/domain/vehicles/credentials.js';

export interface TestBroker {
  url: string;
  /** the broker's process (the benches measure its CPU); a restart changes it */
  readonly pid: number;
  /** the platform's service identity (user `platform`) */
  platform: { username: string; password: string };
  /** make run's simulated fleet (user `demo-fleet`, a bridge: every vehicle's reports and replies, every vehicle's commands) */
  demoFleet: { username: string; password: string };
  /** a vehicle's identity and role on the running broker, live when this resolves */
  addVehicle(vehicleId: string, password: string): Promise<void>;
  /** a vendor bridge's identity (user name `bridge-…`), which speaks for any vehicle */
  addBridge(username: string, password: string): Promise<void>;
  /** the dynamic-security plugin's file, which the broker reads when it starts */
  dynsecFile: string;
  /** stops the broker and starts it again on the same port, from its file */
  restart(): Promise<void>;
  close(): Promise<void>;
}

const MQTT_SH = join(ROOT, 'scripts', 'mqtt.sh');
// Debian installs the broker in /usr/sbin, which a non-root PATH may lack
const MOSQUITTO = existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto';

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address() as { port: number };
  srv.close();
  await once(srv, 'close');
  return port;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function spawnBroker(dir: string, port: number): Promise<ChildProcess> {
  // in the foreground (no pid file race): the child is the broker
  const child = spawn(MOSQUITTO, ['-c', join(dir, 'mosquitto.conf')], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!(await accepting(port))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`mosquitto did not start on ${port}: ${readFileSync(join(dir, 'mosquitto.log'), 'utf8')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

async function stopBroker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

export async function startBroker(): Promise<TestBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'mqtt-'));
  const port = Number(execFileSync('bash', [MQTT_SH, 'init', dir, String(await freePort())], { encoding: 'utf8' }).trim());
  let child = await spawnBroker(dir, port);
  const url = `mqtt://127.0.0.1:${port}`;
  const platform = { username: 'platform', password: readFileSync(join(dir, 'platform-secret'), 'utf8').trim() };
  const add = async (username: string, kind: DeviceKind, password: string) => {
    const control = await BrokerControl.connect({ url, ...platform });
    try {
      await control.run(createCommands({ username, kind, generation: 1 }, password));
    } finally {
      await control.close();
    }
  };
  return {
    url,
    get pid() {
      return child.pid!;
    },
    platform,
    demoFleet: { username: 'demo-fleet', password: readFileSync(join(dir, 'demo-fleet-secret'), 'utf8').trim() },
    dynsecFile: join(dir, 'dynamic-security.json'),
    addVehicle: (vehicleId, password) => add(vehicleId, 'vehicle', password),
    addBridge: (username, password) => add(username, 'bridge', password),
    async restart() {
      await stopBroker(child);
      child = await spawnBroker(dir, port);
    },
    async close() {
      await stopBroker(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
