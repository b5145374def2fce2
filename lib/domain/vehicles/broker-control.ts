/**
 * The control API of Mosquitto's dynamic-security plugin, spoken as the platform's identity (its
 * role grants `$CONTROL/dynamic-security/#`): commands go to `$CONTROL/dynamic-security/v1` and the
 * broker answers every command on `…/v1/response` with the command's correlation data. Used by the
 * ops CLI (ops/admin/devices.ts) and the tests' broker (test/support/mqtt.ts).
 *
 * The plugin rewrites its whole file after every command, in the broker's only thread: each command
 * costs time in proportion to the identities the broker holds (1.2 s at 100,000 vehicles, measured
 * in docs/vehicle-identity.md), so this is for one identity at a time; bulk provisioning writes the
 * file (ops devices sync --file) before the broker starts.
 */
import { randomUUID } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import type { DynsecCommand } from './credentials.js';

const CONTROL_TOPIC = '$CONTROL/dynamic-security/v1';
const RESPONSE_TOPIC = `${CONTROL_TOPIC}/response`;

export interface DynsecResponse {
  command: string;
  error?: string;
  data?: Record<string, unknown>;
}

/** A command the broker refused, with the plugin's own words. */
export class BrokerControlError extends Error {
  constructor(
    message: string,
    readonly responses: DynsecResponse[],
  ) {
    super(message);
    this.name = 'BrokerControlError';
  }
}

export class BrokerControl {
  private readonly waiting = new Map<string, (r: DynsecResponse) => void>();

  private constructor(private readonly client: MqttClient) {
    client.on('message', (topic, payload) => {
      if (topic !== RESPONSE_TOPIC) return;
      let body: { responses?: Array<DynsecResponse & { correlationData?: string }> };
      try {
        body = JSON.parse(payload.toString()) as typeof body;
      } catch {
        return;
      }
      for (const r of body.responses ?? []) {
        const done = r.correlationData ? this.waiting.get(r.correlationData) : undefined;
        if (done) {
          this.waiting.delete(r.correlationData!);
          done(r);
        }
      }
    });
  }

  static async connect(opts: { url: string; username: string; password: string; timeoutMs?: number }): Promise<BrokerControl> {
    const client = await mqtt.connectAsync(opts.url, {
      protocolVersion: 5,
      username: opts.username,
      password: opts.password,
      clientId: `control-${randomUUID()}`,
      reconnectPeriod: 0,
      connectTimeout: opts.timeoutMs ?? 10_000,
    });
    const [granted] = await client.subscribeAsync(RESPONSE_TOPIC, { qos: 1 });
    if (!granted || granted.qos > 2) {
      await client.endAsync(true);
      throw new BrokerControlError(`${opts.username} may not use the broker's dynamic-security control API`, []);
    }
    return new BrokerControl(client);
  }

  /**
   * Runs the commands in order, in one control message; each answer in order. Errors the caller
   * accepts (`tolerate`, e.g. "Client not found" when deleting) come back in `error`; any other
   * error throws, after every command ran.
   */
  async run(commands: DynsecCommand[], opts: { tolerate?: RegExp; timeoutMs?: number } = {}): Promise<DynsecResponse[]> {
    if (!commands.length) return [];
    const tagged = commands.map((c) => ({ ...c, correlationData: randomUUID() }));
    const answers = tagged.map(
      (c) =>
        new Promise<DynsecResponse>((resolve, reject) => {
          const timer = setTimeout(() => {
            this.waiting.delete(c.correlationData);
            reject(new BrokerControlError(`the broker did not answer ${c.command} within ${opts.timeoutMs ?? 60_000} ms`, []));
          }, opts.timeoutMs ?? 60_000);
          this.waiting.set(c.correlationData, (r) => (clearTimeout(timer), resolve(r)));
        }),
    );
    await this.client.publishAsync(CONTROL_TOPIC, JSON.stringify({ commands: tagged }), { qos: 1 });
    const responses = await Promise.all(answers);
    const failed = responses.filter((r) => r.error && !opts.tolerate?.test(r.error));
    if (failed.length) throw new BrokerControlError(`the broker refused ${failed.map((r) => `${r.command}: ${r.error}`).join('; ')}`, responses);
    return responses;
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}
