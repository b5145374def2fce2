/**
 * The AsyncAPI 3.0 document of the vehicle protocol (MQTT 5), built from its one declaration: the
 * channels, topic parameters and QoS of lib/domain/vehicles/protocol.ts and the payload schemas of
 * schemas/vehicles/messages.ts, which the gateway, the ingest and the simulators use. Operations are
 * the platform's: it receives telemetry and state, and sends commands whose reply comes back on the
 * response topic with the command's correlation data. Served at GET /asyncapi.json (api/docs) and
 * exported to docs/asyncapi/vehicles.json by bin/export-openapi.ts; docs/vehicles.md is the guide.
 *
 * MQTT 5 carries the response topic, the correlation data and the message expiry as PUBLISH
 * properties. AsyncAPI's MQTT bindings (0.2.0) name them, and its runtime expressions reach only a
 * message's `header` or `payload`, so the properties are also declared as the message's headers:
 * the correlation id and the reply address point there.
 */
import { CHANNELS, commandExpirySeconds, TOPIC_PARAMETERS, type ChannelDeclaration } from '../../lib/domain/vehicles/protocol.js';

type Json = Record<string, unknown>;

export interface AsyncApiDocument {
  asyncapi: '3.0.0';
  info: { title: string; version: string; description: string };
  defaultContentType: string;
  servers: Record<string, Json>;
  channels: Record<string, Json>;
  operations: Record<string, Json>;
  components: { messages: Record<string, Json>; parameters: Record<string, Json>; securitySchemes: Record<string, Json>; correlationIds: Record<string, Json> };
}

const BINDING_VERSION = '0.2.0';

/** scripts/mqtt.sh's default port for the embedded broker (EMBEDDED_MQTT_PORT; the next free one when taken). */
const EMBEDDED_PORT = '18830';

const ref = ($ref: string) => ({ $ref });
const messageName = (c: ChannelDeclaration) => c.payload.$id;
const operationId = (c: ChannelDeclaration) => `${c.action}${c.channel[0].toUpperCase()}${c.channel.slice(1)}`;
const messageRef = (c: ChannelDeclaration) => ref(`#/channels/${c.channel}/messages/${messageName(c)}`);

/** The payload schema as AsyncAPI takes it (a JSON Schema draft 07 superset): its `$id` is the message's name instead. */
function payloadOf(c: ChannelDeclaration): Json {
  const { $id, ...schema } = c.payload;
  return { title: $id, ...schema };
}

const CORRELATION_DATA = {
  type: 'string',
  format: 'binary',
  description: 'MQTT 5 Correlation Data: 16 random bytes chosen by the gateway for this command. The reply carries them back unchanged.',
} as const;

function headersOf(c: ChannelDeclaration, expirySeconds: number): Json | undefined {
  if (c.request) {
    const reply = CHANNELS.find((r) => r.channel === c.request!.replyChannel)!;
    return {
      type: 'object',
      description: 'The MQTT 5 PUBLISH properties the platform sets on every command (not part of the payload).',
      required: ['responseTopic', 'correlationData', 'messageExpiryInterval'],
      properties: {
        responseTopic: {
          type: 'string',
          description: `MQTT 5 Response Topic: where the vehicle publishes its reply, \`${reply.address}\` (under the vehicle's own prefix). Publish the reply to this topic as it is; never build it.`,
        },
        correlationData: CORRELATION_DATA,
        messageExpiryInterval: {
          type: 'integer',
          const: expirySeconds,
          description: `MQTT 5 Message Expiry Interval, seconds: the gateway's timeout (GATEWAY_TIMEOUT_MS) rounded up. The broker drops a command that has waited longer; the broker may lower it on delivery by the time the command waited.`,
        },
        contentType: { type: 'string', const: 'application/json', description: 'MQTT 5 Content Type' },
      },
    };
  }
  if (c.replyTo)
    return {
      type: 'object',
      description: 'The MQTT 5 PUBLISH properties the vehicle sets on its reply (not part of the payload).',
      required: ['correlationData'],
      properties: { correlationData: { ...CORRELATION_DATA, description: 'MQTT 5 Correlation Data: the bytes of the command this answers, unchanged.' } },
    };
  return undefined;
}

function messageOf(c: ChannelDeclaration, expirySeconds: number): Json {
  const headers = headersOf(c, expirySeconds);
  const correlated = Boolean(c.request ?? c.replyTo);
  return {
    name: messageName(c),
    title: messageName(c),
    summary: c.summary,
    contentType: 'application/json',
    payload: payloadOf(c),
    ...(headers ? { headers } : {}),
    ...(correlated ? { correlationId: ref('#/components/correlationIds/command') } : {}),
    bindings: {
      mqtt: {
        ...(c.request
          ? {
              contentType: 'application/json',
              correlationData: CORRELATION_DATA,
              responseTopic: CHANNELS.find((r) => r.channel === c.request!.replyChannel)!.address,
            }
          : {}),
        ...(c.replyTo ? { correlationData: CORRELATION_DATA } : {}),
        bindingVersion: BINDING_VERSION,
      },
    },
    examples: c.payload.examples.map((payload, i) => ({ name: `${c.channel}-${i + 1}`, payload })),
  };
}

function operationOf(c: ChannelDeclaration, expirySeconds: number): Json {
  const mqtt = { qos: c.qos, retain: c.retain, ...(c.request ? { messageExpiryInterval: expirySeconds } : {}), bindingVersion: BINDING_VERSION };
  const shared = c.sharedBy ? `$share/${c.sharedBy}/${c.address.replace('{vehicleId}', '+')}` : undefined;
  const reply = c.request ? CHANNELS.find((r) => r.channel === c.request!.replyChannel)! : undefined;
  return {
    action: c.action,
    channel: ref(`#/channels/${c.channel}`),
    summary: c.summary,
    ...(shared
      ? {
          description: `The ingest processes receive it through the shared subscription \`${shared}\`: each message goes to one of them, which acknowledges it (PUBACK) only after it is stored.`,
          'x-shared-subscription': shared,
        }
      : {}),
    ...(c.request
      ? {
          description: `The platform's gateway publishes the command with a response topic, correlation data and a message expiry of ${expirySeconds} s, and waits that long for the reply: none in time is FailedToUpdateVehicle, \`refused\` is FailedToUnlockVehicle on a rental's start and FailedToEndRental on its end (docs/vehicles.md).`,
        }
      : {}),
    messages: [messageRef(c)],
    bindings: { mqtt },
    ...(reply
      ? {
          reply: {
            address: {
              location: '$message.header#/responseTopic',
              description: "the command's MQTT 5 Response Topic",
            },
            channel: ref(`#/channels/${reply.channel}`),
            messages: [messageRef(reply)],
          },
        }
      : {}),
  };
}

/**
 * The document for a gateway timeout of `gatewayTimeoutMs` (GATEWAY_TIMEOUT_MS), which sets the
 * commands' message expiry.
 */
export function vehiclesAsyncApiDocument(opts: { gatewayTimeoutMs: number }): AsyncApiDocument {
  const expiry = commandExpirySeconds(opts.gatewayTimeoutMs);
  const security = [ref('#/components/securitySchemes/vehicle'), ref('#/components/securitySchemes/platform')];
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Vehicle protocol (MQTT 5)',
      version: '1.0.0',
      description: [
        'How vehicles, or the operator’s IoT backend speaking for them, talk to the platform: MQTT 5 with per-vehicle topics, JSON payloads, QoS 1 everywhere and nothing retained.',
        '',
        'A vehicle connects with its own credentials: its MQTT user name is its id (the MDS `device_id`) and the broker lets it publish only its own telemetry, state and replies and receive only its own commands. The platform connects with a separate service identity.',
        '',
        'Commands are MQTT 5 requests: each carries a response topic, correlation data and a message expiry; the vehicle answers on that response topic with that correlation data.',
        '',
        'The integration guide, with examples that the test suite runs, is docs/vehicles.md in the repository; identities and ACLs are in docs/vehicle-identity.md.',
      ].join('\n'),
    },
    defaultContentType: 'application/json',
    servers: {
      embedded: {
        host: `127.0.0.1:{port}`,
        protocol: 'mqtt',
        protocolVersion: '5',
        title: 'The embedded broker',
        description:
          'The project-local Mosquitto of `make run` and `make test` (scripts/mqtt.sh), on loopback only. Unused when MQTT_URL names another broker.',
        variables: { port: { default: EMBEDDED_PORT, description: 'its port: 18830 (EMBEDDED_MQTT_PORT), or the next free one when that is taken' } },
        security,
      },
      production: {
        host: '{host}:{port}',
        protocol: 'mqtts',
        protocolVersion: '5',
        title: 'The operator’s broker',
        description:
          'Any MQTT 5 broker with shared subscriptions, QoS 1 sessions and per-client ACLs (EMQX, HiveMQ, VerneMQ, AWS IoT Core): what the platform needs from it is in docs/vehicles.md.',
        variables: {
          host: { default: 'mqtt.example.com', description: 'the broker’s host name, given by the operator' },
          port: { default: '8883', description: 'MQTT over TLS' },
        },
        security,
      },
    },
    channels: Object.fromEntries(
      CHANNELS.map((c) => [
        c.channel,
        {
          address: c.address,
          title: c.channel,
          summary: c.summary,
          messages: { [messageName(c)]: ref(`#/components/messages/${messageName(c)}`) },
          parameters: Object.fromEntries(c.parameters.map((p) => [p, ref(`#/components/parameters/${p}`)])),
        },
      ]),
    ),
    // a reply is not an operation of its own: it is the reply of the command it answers
    operations: Object.fromEntries(CHANNELS.filter((c) => !c.replyTo).map((c) => [operationId(c), operationOf(c, expiry)])),
    components: {
      messages: Object.fromEntries(CHANNELS.map((c) => [messageName(c), messageOf(c, expiry)])),
      parameters: Object.fromEntries(Object.entries(TOPIC_PARAMETERS).map(([name, p]) => [name, { description: p.description, examples: [...p.examples] }])),
      securitySchemes: {
        vehicle: {
          type: 'userPassword',
          description:
            'A vehicle’s own credentials: the user name is the vehicle’s id, the password its own (ops devices create / rotate; the platform keeps only its hash). A vendor bridge (`bridge-…`) may speak for many vehicles.',
        },
        platform: {
          type: 'userPassword',
          description: 'The platform’s service identity (MQTT_USERNAME, default `platform`), separate from every vehicle’s.',
        },
      },
      correlationIds: {
        command: {
          description: 'A reply belongs to the command whose MQTT 5 Correlation Data it carries back.',
          location: '$message.header#/correlationData',
        },
      },
    },
  };
}
