/**
 * A real MQTT 5 broker per test file: Mosquitto (Debian's package, installed by scripts/mqtt.sh when
 * missing) with the project's own configuration, password file and ACL (scripts/mqtt.sh init), in a
 * temp directory on a free loopback port. Never a mock: the ACL and authentication the tests prove are
 * the broker's.
 *
 *   const broker = await startBroker();   // { url, platform, addVehicle, close }
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import mqtt from 'mqtt';
import { ROOT } from '../../lib/core/paths.js';

export interface TestBroker {
  url: string;
  /** the broker's process (the benches measure its CPU) */
  pid: number;
  /** the platform's service identity (user `platform`) */
  platform: { username: string; password: string };
  /** make run's simulated fleet (user `demo-fleet`: every vehicle's reports and replies, every vehicle's commands) */
  demoFleet: { username: string; password: string };
  /** a vehicle's credentials in the broker's password file, live after the broker rereads it (SIGHUP) */
  addVehicle(vehicleId: string, password: string): Promise<void>;
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

export async function startBroker(): Promise<TestBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'mqtt-'));
  const port = Number(execFileSync('bash', [MQTT_SH, 'init', dir, String(await freePort())], { encoding: 'utf8' }).trim());
  // in the foreground (no pid file race): the child is the broker
  const child: ChildProcess = spawn(MOSQUITTO, ['-c', join(dir, 'mosquitto.conf')], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!(await accepting(port))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`mosquitto did not start on ${port}: ${readFileSync(join(dir, 'mosquitto.log'), 'utf8')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = `mqtt://127.0.0.1:${port}`;
  return {
    url,
    pid: child.pid!,
    platform: { username: 'platform', password: readFileSync(join(dir, 'platform-secret'), 'utf8').trim() },
    demoFleet: { username: 'demo-fleet', password: readFileSync(join(dir, 'demo-fleet-secret'), 'utf8').trim() },
    async addVehicle(vehicleId, password) {
      execFileSync('mosquitto_passwd', ['-b', join(dir, 'passwd'), vehicleId, password]);
      child.kill('SIGHUP');
      // the reload is done when the new credentials connect (the broker says nothing at this log level)
      const until = Date.now() + 5000;
      for (;;) {
        const c = await mqtt
          .connectAsync(url, { protocolVersion: 5, username: vehicleId, password, reconnectPeriod: 0, connectTimeout: 2000 })
          .catch(() => undefined);
        if (c) return void (await c.endAsync());
        if (Date.now() > until) throw new Error('mosquitto did not take the new password file');
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
