/**
 * The vehicle protocol over MQTT 5, declared once: the channels below (topic, direction, payload,
 * QoS and MQTT 5 properties) are what the gateway, the ingest and the simulators use through the
 * helpers of this module, and what the AsyncAPI document at /asyncapi.json (api/openapi/asyncapi.ts)
 * and docs/vehicles.md describe:
 *
 *   vehicles/{vehicleId}/telemetry              vehicle → platform   VehicleTelemetry   QoS 1
 *   vehicles/{vehicleId}/state                  vehicle → platform   VehicleState       QoS 1
 *   vehicles/{vehicleId}/commands               platform → vehicle   VehicleCommand     QoS 1, message expiry,
 *                                                                                       response topic, correlation data
 *   vehicles/{vehicleId}/replies/{gatewayId}    vehicle → platform   VehicleReply       QoS 1, the command's correlation data
 *
 * `{vehicleId}` is the vehicle's id (the MDS device_id, a UUID), which is also its MQTT user name:
 * the broker's ACL lets a vehicle publish and read only under its own `vehicles/{vehicleId}/`
 * (docs/vehicle-identity.md). A reply goes to the response topic its command named, under the
 * vehicle's own prefix; `{gatewayId}` is the gateway process waiting for it (one per API or
 * publisher process), which subscribes to `vehicles/+/replies/{gatewayId}`. The ingest processes
 * share `vehicles/+/telemetry` and `vehicles/+/state` through the shared subscription
 * `$share/ingest/…`, so N of them split the stream.
 */
import { isUuid } from '../../core/uuid.js';
import { VehicleCommandSchema, VehicleReplySchema, VehicleStateSchema, VehicleTelemetrySchema } from '../../../schemas/vehicles/messages.js';

const TOPIC_ROOT = 'vehicles';

/** Every message of the protocol goes at least once: QoS 1. */
export const QOS = 1 as const;

/** The shared-subscription group of the ingest processes. */
const INGEST_GROUP = 'ingest';

type VehicleChannel = 'telemetry' | 'state' | 'commands' | 'replies';

/** The topic levels that vary, each a single level. */
export const TOPIC_PARAMETERS = {
  vehicleId: {
    description:
      "The vehicle's id: the MDS `device_id`, a UUID in lower case. It is also the vehicle's MQTT user name, and the broker lets a vehicle use only its own.",
    examples: ['0b9c6a1e-3f1d-4a8e-9a53-6d2b8c1f4e70'],
  },
  gatewayId: {
    description:
      'The gateway process that sent the command and waits for its reply (one per API or publisher process): 1-64 letters, digits, `-` and `_`. A vehicle never builds it: it answers on the response topic of the command.',
    examples: ['api-host1-4711'],
  },
} as const;
type TopicParameter = keyof typeof TOPIC_PARAMETERS;

/** One channel of the protocol. Directions are the platform's point of view. */
export interface ChannelDeclaration {
  readonly channel: VehicleChannel;
  /** the topic, `{parameter}` for each level that varies (TOPIC_PARAMETERS) */
  readonly address: string;
  readonly parameters: readonly TopicParameter[];
  /** `receive`: the vehicles publish and the platform subscribes; `send`: the other way round */
  readonly action: 'send' | 'receive';
  /** the payload's JSON Schema (schemas/vehicles/messages.ts); its `$id` names the message */
  readonly payload: typeof VehicleTelemetrySchema | typeof VehicleStateSchema | typeof VehicleCommandSchema | typeof VehicleReplySchema;
  readonly qos: typeof QOS;
  /** no message of the protocol is retained: a retained command would unlock a vehicle at its next connect */
  readonly retain: false;
  /** the ingest processes share it (`$share/ingest/…`) */
  readonly sharedBy?: typeof INGEST_GROUP;
  /** a request: sent with a message expiry of the gateway's timeout (commandExpirySeconds), a response topic and correlation data */
  readonly request?: { readonly replyChannel: VehicleChannel };
  /** a reply: published to the request's response topic with the request's correlation data */
  readonly replyTo?: VehicleChannel;
  readonly summary: string;
}

export const CHANNELS: readonly ChannelDeclaration[] = [
  {
    channel: 'telemetry',
    address: `${TOPIC_ROOT}/{vehicleId}/telemetry`,
    parameters: ['vehicleId'],
    action: 'receive',
    payload: VehicleTelemetrySchema,
    qos: QOS,
    retain: false,
    sharedBy: INGEST_GROUP,
    summary: 'A position report: every 10 s on a ride, every few minutes parked.',
  },
  {
    channel: 'state',
    address: `${TOPIC_ROOT}/{vehicleId}/state`,
    parameters: ['vehicleId'],
    action: 'receive',
    payload: VehicleStateSchema,
    qos: QOS,
    retain: false,
    sharedBy: INGEST_GROUP,
    summary: 'A change of the vehicle’s own state (lock, charging, faults), and its state on every connect.',
  },
  {
    channel: 'commands',
    address: `${TOPIC_ROOT}/{vehicleId}/commands`,
    parameters: ['vehicleId'],
    action: 'send',
    payload: VehicleCommandSchema,
    qos: QOS,
    retain: false,
    request: { replyChannel: 'replies' },
    summary: 'A command to one vehicle (unlock, lock, set_speed), a request the vehicle answers on its response topic.',
  },
  {
    channel: 'replies',
    address: `${TOPIC_ROOT}/{vehicleId}/replies/{gatewayId}`,
    parameters: ['vehicleId', 'gatewayId'],
    action: 'receive',
    payload: VehicleReplySchema,
    qos: QOS,
    retain: false,
    replyTo: 'commands',
    summary: 'The answer to one command, on the command’s response topic with its correlation data.',
  },
];

const byChannel = new Map(CHANNELS.map((c) => [c.channel, c]));
function addressOf(channel: VehicleChannel): string {
  return byChannel.get(channel)!.address;
}

/** A channel's topic with its parameters filled in (`+` for a filter over every vehicle). */
function topicOf(channel: VehicleChannel, values: Partial<Record<TopicParameter, string>>): string {
  return addressOf(channel).replace(/\{(\w+)\}/g, (_, name: TopicParameter) => {
    const v = values[name];
    if (v === undefined) throw new Error(`${channel}: no value for {${name}}`);
    return v;
  });
}

export const telemetryTopic = (vehicleId: string) => topicOf('telemetry', { vehicleId });
export const stateTopic = (vehicleId: string) => topicOf('state', { vehicleId });
export const commandTopic = (vehicleId: string) => topicOf('commands', { vehicleId });
export const replyTopic = (vehicleId: string, gateway: string) => topicOf('replies', { vehicleId, gatewayId: gateway });

/** What a gateway process subscribes to: the replies of every vehicle to its own commands. */
export const repliesFilter = (gateway: string) => topicOf('replies', { vehicleId: '+', gatewayId: gateway });

/** What the ingest processes share (one subscription each, the group splitting the messages). */
export const INGEST_FILTERS: readonly string[] = CHANNELS.filter((c) => c.sharedBy === INGEST_GROUP).map(
  (c) => `$share/${INGEST_GROUP}/${topicOf(c.channel, { vehicleId: '+' })}`,
);

/**
 * The message expiry of a command (seconds, MQTT 5's unit): the gateway's timeout rounded up, at
 * least 1 s. A vehicle that comes back online after it never sees the command: nobody waits for its
 * answer any more, and an unlock that nobody waits for would leave a vehicle open.
 */
export const commandExpirySeconds = (timeoutMs: number) => Math.max(1, Math.ceil(timeoutMs / 1000));

/** A gateway id: letters, digits, `-` and `_` (it is one topic level). */
const GATEWAY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The vehicle and channel of a topic the platform receives on; undefined for any other topic (a
 * vehicle id that is not a UUID included: such a topic cannot be a vehicle's).
 */
export function parseVehicleTopic(topic: string): { vehicleId: string; channel: VehicleChannel } | undefined {
  const parts = topic.split('/');
  if (parts[0] !== TOPIC_ROOT || parts.length < 3 || !isUuid(parts[1])) return undefined;
  const channel = parts[2];
  if ((channel === 'telemetry' || channel === 'state' || channel === 'commands') && parts.length === 3) return { vehicleId: parts[1].toLowerCase(), channel };
  if (channel === 'replies' && parts.length === 4 && GATEWAY_ID.test(parts[3])) return { vehicleId: parts[1].toLowerCase(), channel };
  return undefined;
}
