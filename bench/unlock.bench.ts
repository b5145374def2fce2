/**
 * Unlock cost benchmark (issue 41): what an unlock over MQTT adds to a rental start beyond the
 * vehicle's own answer time. POST /v1/rental/start through the partner API (in-process, over HTTP
 * on loopback), with
 *   - the MQTT gateway (lib/domain/vehicles/mqtt-gateway.ts), the real Mosquitto of the tests
 *     (test/support/mqtt.ts) and vehicles that are MQTT 5 clients answering each command after d ms;
 *   - the simulated gateway answering after the same d ms (SimulatedGateway `delayMs`),
 * for d = 0 and 500 ms (BENCH_UNLOCK_DELAYS). Workers (users of one partner) each start and end
 * rentals on their own vehicle, one after the other, for BENCH_UNLOCK_STARTS (240) starts per case;
 * only the starts are timed. One worker at d = 0 and 8 at d > 0: the machine stays below saturation
 * in both (8 workers at d = 0 measure this 2-core machine's queue, API, broker and the vehicles'
 * clients sharing it, not what the unlock adds). Goal: the MQTT start's p50 at most 10 ms above the simulated start's at the same
 * d (everything else a start does is the same code on the same database).
 *
 * Runs in a fresh database cloned from the migrated template; `node --import tsx bench/unlock.bench.ts`
 * runs it directly.
 */
import http from 'node:http';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { buildApp } from '../api/app.js';
import { systemClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import type { AppContext } from '../lib/domain/context.js';
import { SimulatedGateway, type VehicleGateway } from '../lib/domain/gateway.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import { commandTopic, QOS } from '../lib/domain/vehicles/protocol.js';
import { cloneDatabase } from '../test/support/db.js';
import { startBroker, type TestBroker } from '../test/support/mqtt.js';
import { insertPartner, insertUser, insertVehicle, insertZone } from '../test/support/partner-fixtures.js';
import { runIfMain } from './main.js';
import type { BenchResult } from './types.js';
import { percentile } from './breadth-probes.js';

const DELAYS = (process.env.BENCH_UNLOCK_DELAYS ?? '0,500').split(',').map(Number);
const STARTS = Number(process.env.BENCH_UNLOCK_STARTS ?? 240);
/** workers at a delay: one back-to-back at d = 0, 8 at d > 0 (see above) */
const workersAt = (d: number) => (d === 0 ? 1 : 8);
const GOAL_MS = 10;

/** nearest rank (bench/breadth-probes.ts); NaN for none */
const pct = (values: number[], q: number) => percentile(values, q) ?? NaN;

const round = (v: number) => Math.round(v * 100) / 100;

/** A vehicle as an MQTT 5 client of its own, answering every command ok after `delayMs`. */
async function mqttVehicle(broker: TestBroker, id: string, delayMs: number): Promise<MqttClient> {
  await broker.addVehicle(id, `pw-${id}`);
  const c = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: id, password: `pw-${id}`, reconnectPeriod: 0 });
  c.on('message', (_topic, _payload, packet) => {
    const { responseTopic, correlationData } = packet.properties ?? {};
    if (!responseTopic) return;
    const reply = () =>
      void c.publishAsync(responseTopic, JSON.stringify({ result: 'ok' }), { qos: QOS, properties: { correlationData } }).catch(() => undefined);
    if (delayMs > 0) setTimeout(reply, delayMs);
    else reply();
  });
  await c.subscribeAsync(commandTopic(id), { qos: QOS });
  return c;
}

/** The start times (ms) of STARTS rentals through the API with `gateway`, one worker per vehicle. */
async function measure(base: AppContext, gateway: VehicleGateway, vehicles: string[]): Promise<number[]> {
  const workers = vehicles.length;
  const partner = await insertPartner(base.db);
  const handle = buildApp({ ...base, gateway }).callback();
  const server = http.createServer((req, res) => void handle(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const post = async (path: string, body: object) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': partner.key },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { data?: Array<{ id: string }> };
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const times: number[] = [];
  try {
    await Promise.all(
      vehicles.map(async (vehicleId, w) => {
        const userId = await insertUser(base.db, partner.id);
        for (let i = w; i < STARTS + workers; i += workers) {
          const t0 = performance.now();
          const started = await post('/v1/rental/start', { userId, vehicleId, userLicenseValidated: true });
          // the first round of each worker warms the key cache and the connections: not counted
          if (i >= workers) times.push(performance.now() - t0);
          await post(`/v1/rental/${started.data![0].id}/end`, {});
        }
      }),
    );
  } finally {
    server.close();
  }
  return times;
}

export async function run(): Promise<BenchResult> {
  const database = await cloneDatabase();
  const storeDir = mkdtempSync(join(tmpdir(), 'bench-unlock-'));
  const log = createLogger('silent');
  const config = testConfig({ DATABASE_URL: database.url, STORE_URL: `file://${storeDir}`, LOG_LEVEL: 'silent' });
  const db = new Db(config.databaseUrl, log, { max: config.databasePoolSize });
  const store = await openStore(config);
  const broker = await startBroker();
  const clients: MqttClient[] = [];
  try {
    const base: AppContext = { config, db, store, log, clock: systemClock, gateway: new SimulatedGateway() };
    const zone = await insertZone(db);
    const metrics: BenchResult['metrics'] = {};
    const goals: BenchResult['goals'] = [];
    for (const d of DELAYS) {
      const mqttVehicles = await Promise.all(Array.from({ length: workersAt(d) }, () => insertVehicle(db, zone)));
      for (const v of mqttVehicles) clients.push(await mqttVehicle(broker, v.id, d));
      const gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: `bench-${d}`, timeoutMs: 10_000 + d, log });
      let viaMqtt: number[];
      try {
        viaMqtt = await measure(
          base,
          gateway,
          mqttVehicles.map((v) => v.id),
        );
      } finally {
        await gateway.close();
      }
      const simVehicles = await Promise.all(Array.from({ length: workersAt(d) }, () => insertVehicle(db, zone)));
      const simulated = await measure(
        base,
        new SimulatedGateway({ delayMs: d, timeoutMs: 10_000 + d }),
        simVehicles.map((v) => v.id),
      );
      for (const [name, times] of [
        ['mqtt', viaMqtt],
        ['simulated', simulated],
      ] as const) {
        metrics[`d=${d} ms, ${name}: start p50 ms`] = round(pct(times, 50));
        metrics[`d=${d} ms, ${name}: start p99 ms`] = round(pct(times, 99));
        metrics[`d=${d} ms, ${name}: p50 beyond d ms`] = round(pct(times, 50) - d);
      }
      const metric = `d=${d} ms: MQTT unlock adds to the start's p50, ms`;
      metrics[metric] = round(pct(viaMqtt, 50) - pct(simulated, 50));
      goals.push({ metric, goal: `≤ ${GOAL_MS}`, met: metrics[metric] <= GOAL_MS });
    }
    return {
      name: 'unlock',
      metrics,
      goals,
      notes: [
        `${STARTS} timed starts per case, ${DELAYS.map((d) => `${workersAt(d)} worker(s) at d=${d} ms`).join(', ')}, each starting and ending rentals on its own vehicle; the end (lock) is not timed`,
        'mqtt: the MQTT gateway, Mosquitto on loopback, vehicles as MQTT 5 clients answering after d; simulated: SimulatedGateway answering after d',
        "p50 beyond d: the start's p50 minus the vehicle's answer time (the start's own database work included)",
      ],
    };
  } finally {
    await Promise.all(clients.map((c) => c.endAsync(true)));
    await broker.close();
    await store.close();
    await db.close();
    await database.drop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, run);
