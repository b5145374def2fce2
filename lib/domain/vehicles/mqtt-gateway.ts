/**
 * The vehicle gateway over MQTT 5 (lib/domain/vehicles/protocol.ts): each command is a request to one
 * vehicle and waits for its reply. The request carries the MQTT 5 response topic (this process's own
 * `vehicles/{vehicle}/replies/{gateway}`) and correlation data (16 random bytes), and a message
 * expiry of the timeout, so that a vehicle that comes back online later does not act on a command
 * nobody waits for any more.
 *
 * The answers, as the engine maps them (lib/domain/rentals/engine.ts):
 * - `ok` → the call resolves;
 * - `refused` → GatewayError `refused` (FailedToUnlockVehicle on start, FailedToEndRental on end),
 *   `temporary` when the vehicle says so (a jammed lock: TOMP answers 503 with Retry-After);
 * - no reply within the timeout, the broker unreachable, or a reply that is not a VehicleReply →
 *   GatewayError `unreachable` (FailedToUpdateVehicle).
 *
 * A reply is matched by its correlation data and must come from the vehicle the command went to (the
 * topic names it, and the broker's ACL lets a vehicle publish only under its own prefix). A late
 * reply, or one nobody asked for, is dropped.
 */
import { randomBytes } from 'node:crypto';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { compile, describeErrors } from '../../core/validate.js';
import type { Logger } from '../../core/log.js';
import { VehicleReplySchema, type VehicleCommand, type VehicleReply } from '../../../schemas/vehicles/messages.js';
import { GatewayError, type GatewayCommand, type VehicleGateway } from '../gateway.js';
import { commandExpirySeconds, commandTopic, parseVehicleTopic, QOS, repliesFilter, replyTopic } from './protocol.js';

export interface MqttGatewayOptions {
  url: string;
  username: string;
  password: string;
  /** this process's id among the gateways (one topic level): its replies come to it alone */
  gatewayId: string;
  /** how long a command waits for the vehicle's reply (GATEWAY_TIMEOUT_MS) */
  timeoutMs: number;
  log: Logger;
}

interface Pending {
  vehicleId: string;
  command: GatewayCommand;
  resolve: () => void;
  reject: (err: GatewayError) => void;
  timer: NodeJS.Timeout;
}

const validReply = compile<VehicleReply>(VehicleReplySchema);

/** TCP_NODELAY on the client's current socket (TCP or TLS; a WebSocket stream has no such call). */
function noDelay(client: MqttClient): void {
  (client.stream as unknown as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
}

export class MqttGateway implements VehicleGateway {
  private readonly pending = new Map<string, Pending>();

  private constructor(
    private readonly client: MqttClient,
    private readonly opts: MqttGatewayOptions,
  ) {
    client.on('message', (topic, payload, packet) => this.onReply(topic, payload, packet.properties?.correlationData));
    // every (re)connection's socket without Nagle's algorithm: MQTT.js writes a packet in several
    // small writes, and the broker's delayed ACK then holds each command ~40 ms (BENCH=unlock: 43 ms
    // a round trip with it, 0.5–2 ms without)
    noDelay(client);
    client.on('connect', () => noDelay(client));
    // MQTT.js reconnects by itself; while it does, commands fail fast as unreachable (send)
    client.on('error', (err) => opts.log.warn({ err, component: 'mqtt-gateway' }, 'vehicle broker connection error'));
  }

  /**
   * Connects and subscribes to this gateway's replies (again on every reconnection: the session is
   * clean). Resolves once the first connection is subscribed, or, when the broker cannot be reached
   * within the connect timeout, at once with a gateway that keeps trying: a process starting while
   * its broker is down serves everything else, and its commands fail as unreachable until the
   * broker is back. A broker that refuses the platform's credentials or its subscription is the
   * operator's to fix: that rejects.
   */
  static async connect(opts: MqttGatewayOptions): Promise<MqttGateway> {
    const options: IClientOptions = {
      protocolVersion: 5,
      username: opts.username,
      password: opts.password,
      clientId: `gateway-${opts.gatewayId}`,
      reconnectPeriod: 1000,
      connectTimeout: 5000,
      resubscribe: false,
    };
    const client = mqtt.connect(opts.url, options);
    const gateway = new MqttGateway(client, opts);
    const first = new Promise<void>((resolve, reject) => {
      client.on('connect', () => {
        client.subscribe(repliesFilter(opts.gatewayId), { qos: QOS }, (err, granted) => {
          const qos = granted?.[0]?.qos;
          if (!err && qos === QOS) return resolve();
          const refused = new Error(`the vehicle broker refused the gateway's reply subscription (${err?.message ?? qos})`);
          opts.log.error({ err: refused, component: 'mqtt-gateway' }, 'gateway without replies: every command will time out');
          reject(refused);
        });
      });
      client.once('error', (err: Error & { code?: unknown }) => {
        // a CONNACK's refusal (bad user name or password, not authorised) has a numeric reason code
        if (typeof err.code === 'number') reject(err);
      });
      setTimeout(() => {
        opts.log.warn({ component: 'mqtt-gateway', url: opts.url }, 'vehicle broker not reachable yet: commands fail as unreachable until it is');
        resolve();
      }, options.connectTimeout).unref();
    });
    try {
      await first;
    } catch (err) {
      await client.endAsync(true);
      throw err;
    }
    return gateway;
  }

  unlock(vehicleId: string) {
    return this.send(vehicleId, { command: 'unlock', issued_at: Date.now() });
  }
  lock(vehicleId: string) {
    return this.send(vehicleId, { command: 'lock', issued_at: Date.now() });
  }
  setMaxSpeed(vehicleId: string, kph: number) {
    return this.send(vehicleId, { command: 'set_speed', max_speed_kph: Math.round(kph), issued_at: Date.now() });
  }

  /** Disconnects; commands still waiting fail as unreachable. */
  async close(): Promise<void> {
    for (const [key, p] of this.pending) this.settle(key, p, new GatewayError(`${p.command} abandoned: the gateway is closing`, 'unreachable', p.command));
    // forced: every command is settled already, and a graceful end would wait for the broker's
    // acknowledgements of what nobody waits for any more
    await this.client.endAsync(true);
  }

  private send(vehicleId: string, command: VehicleCommand): Promise<void> {
    const name = command.command;
    // not connected: fail now, rather than queue a command that the vehicle would get after its
    // caller was told it failed
    if (!this.client.connected) return Promise.reject(new GatewayError(`${name} not sent: the vehicle broker is not connected`, 'unreachable', name));
    const correlation = randomBytes(16);
    const key = correlation.toString('hex');
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        const p = this.pending.get(key);
        if (p) this.settle(key, p, new GatewayError(`${name} timed out after ${this.opts.timeoutMs} ms`, 'unreachable', name));
      }, this.opts.timeoutMs);
      this.pending.set(key, { vehicleId, command: name, resolve, reject, timer });
      this.client
        .publishAsync(commandTopic(vehicleId), JSON.stringify(command), {
          qos: QOS,
          properties: {
            responseTopic: replyTopic(vehicleId, this.opts.gatewayId),
            correlationData: correlation,
            messageExpiryInterval: commandExpirySeconds(this.opts.timeoutMs),
            contentType: 'application/json',
          },
        })
        .catch((err: unknown) => {
          const p = this.pending.get(key);
          if (p) this.settle(key, p, new GatewayError(`${name} not sent: ${err instanceof Error ? err.message : String(err)}`, 'unreachable', name));
        });
    });
  }

  private settle(key: string, p: Pending, err?: GatewayError): void {
    this.pending.delete(key);
    clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve();
  }

  private onReply(topic: string, payload: Buffer, correlation: Buffer | undefined): void {
    const at = parseVehicleTopic(topic);
    const key = correlation?.toString('hex');
    const p = key === undefined ? undefined : this.pending.get(key);
    if (!p || !at || at.channel !== 'replies' || at.vehicleId !== p.vehicleId.toLowerCase()) {
      this.opts.log.debug({ component: 'mqtt-gateway', topic }, 'reply nobody waits for (late, unknown or from another vehicle): dropped');
      return;
    }
    let reply: unknown;
    try {
      reply = JSON.parse(payload.toString('utf8'));
    } catch {
      reply = undefined;
    }
    if (!validReply(reply)) {
      this.opts.log.warn(
        { component: 'mqtt-gateway', vehicleId: p.vehicleId, detail: describeErrors(validReply.errors) },
        'vehicle reply is not a VehicleReply',
      );
      this.settle(key!, p, new GatewayError(`vehicle answered ${p.command} unintelligibly`, 'unreachable', p.command));
      return;
    }
    if (reply.result === 'ok') this.settle(key!, p);
    else {
      const err = new GatewayError(`vehicle refused ${p.command}${reply.reason ? `: ${reply.reason}` : ''}`, 'refused', p.command, {
        temporary: reply.temporary === true,
      });
      this.settle(key!, p, err);
    }
  }
}
