/**
 * The demo's vehicles as MQTT 5 vehicles (lib/domain/vehicles/protocol.ts): one connection that
 * speaks for the whole simulated fleet, as a vendor's IoT backend does for its vehicles. It hears
 * every vehicle's commands and answers each on the response topic with the command's correlation
 * data, after a cellular round trip (ANSWER_MS); it publishes what the live simulator's vehicles
 * report (ops/sim/live.ts): positions on a ride, their battery after a swap, their lock.
 *
 * A vehicle can be told to refuse its commands or to stay silent, to show the requirement's error
 * rows in the demo (FailedToUnlockVehicle, FailedToUpdateVehicle, TOMP's 503): `ops demo-vehicle
 * <code> refuse|silent|ok` writes the behaviour file (DEMO_VEHICLES_FILE, .data/demo-vehicles.json by
 * default), which the fleet reads again whenever it changes.
 */
import { readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import type { Logger } from '../../lib/core/log.js';
import { commandTopic, parseVehicleTopic, QOS, stateTopic, telemetryTopic } from '../../lib/domain/vehicles/protocol.js';
import type { VehicleReply, VehicleState, VehicleTelemetry } from '../../schemas/vehicles/messages.js';

export type DemoBehaviour = 'ok' | 'refuse' | 'silent';

/** How long a simulated vehicle takes to answer a command: a cellular round trip and its controller. */
const ANSWER_MS = { min: 150, max: 600 };

export interface MqttFleetOptions {
  url: string;
  username: string;
  password: string;
  log: Logger;
  /** vehicle id → code, for the behaviour file (which names vehicles by the code on their handlebar) */
  codes: ReadonlyMap<string, string>;
  /** the behaviour file (DEMO_VEHICLES_FILE) */
  behaviourFile: string;
}

export class MqttFleet {
  private behaviour = new Map<string, DemoBehaviour>();
  private behaviourMtime = -1;

  private constructor(
    private readonly client: MqttClient,
    private readonly opts: MqttFleetOptions,
  ) {
    client.on('message', (topic, payload, packet) => this.onCommand(topic, payload, packet.properties?.responseTopic, packet.properties?.correlationData));
    client.on('error', (err) => opts.log.warn({ err, component: 'mqtt-fleet' }, 'fleet broker connection error'));
  }

  static async connect(opts: MqttFleetOptions): Promise<MqttFleet> {
    const client = await mqtt.connectAsync(opts.url, {
      protocolVersion: 5,
      username: opts.username,
      password: opts.password,
      clientId: `demo-fleet-${process.pid}`,
      reconnectPeriod: 1000,
    });
    const fleet = new MqttFleet(client, opts);
    // every vehicle's commands: `+` is one vehicle id
    await client.subscribeAsync(commandTopic('+'), { qos: QOS });
    return fleet;
  }

  /** A position report of a vehicle (QoS 1: resolves once the broker has it). */
  async report(vehicleId: string, t: VehicleTelemetry): Promise<void> {
    await this.client.publishAsync(telemetryTopic(vehicleId), JSON.stringify(t), { qos: QOS });
  }

  async state(vehicleId: string, s: VehicleState): Promise<void> {
    await this.client.publishAsync(stateTopic(vehicleId), JSON.stringify(s), { qos: QOS });
  }

  async close(): Promise<void> {
    await this.client.endAsync();
  }

  private behaviourOf(vehicleId: string): DemoBehaviour {
    try {
      const { mtimeMs } = statSync(this.opts.behaviourFile);
      if (mtimeMs !== this.behaviourMtime) {
        this.behaviourMtime = mtimeMs;
        const byCode = JSON.parse(readFileSync(this.opts.behaviourFile, 'utf8')) as Record<string, DemoBehaviour>;
        this.behaviour = new Map(Object.entries(byCode));
      }
    } catch {
      // no file (or a broken one): every vehicle answers
      this.behaviour = new Map();
    }
    const code = this.opts.codes.get(vehicleId);
    return (code && this.behaviour.get(code)) || 'ok';
  }

  private onCommand(topic: string, payload: Buffer, responseTopic: string | undefined, correlationData: Buffer | undefined): void {
    const at = parseVehicleTopic(topic);
    if (!at || at.channel !== 'commands' || !responseTopic) return;
    let command: string;
    try {
      command = (JSON.parse(payload.toString('utf8')) as { command: string }).command;
    } catch {
      return;
    }
    const behaviour = this.behaviourOf(at.vehicleId);
    if (behaviour === 'silent') return;
    const reply: VehicleReply = behaviour === 'refuse' ? { result: 'refused', reason: 'lock_jammed', temporary: true } : { result: 'ok' };
    const delay = ANSWER_MS.min + Math.random() * (ANSWER_MS.max - ANSWER_MS.min);
    setTimeout(() => {
      void (async () => {
        await this.client.publishAsync(responseTopic, JSON.stringify(reply), { qos: QOS, properties: { correlationData } });
        // the vehicle says what its lock is now
        if (reply.result === 'ok' && (command === 'unlock' || command === 'lock'))
          await this.state(at.vehicleId, { ts: Date.now(), locked: command === 'lock', faults: [] });
      })().catch((err: unknown) => this.opts.log.debug({ err, vehicleId: at.vehicleId }, 'fleet answer not sent'));
    }, delay);
  }
}

/** Writes a vehicle's demo behaviour into the file the fleet reads (`ops demo-vehicle`). */
export function setDemoBehaviour(file: string, code: string, behaviour: DemoBehaviour): Record<string, DemoBehaviour> {
  let all: Record<string, DemoBehaviour> = {};
  try {
    all = JSON.parse(readFileSync(file, 'utf8')) as Record<string, DemoBehaviour>;
  } catch {
    // none yet
  }
  if (behaviour === 'ok') delete all[code];
  else all[code] = behaviour;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(all, null, 2));
  return all;
}
