/**
 * The vehicle protocol over MQTT 5, declared once (docs/vehicles.md; the AsyncAPI document at
 * /asyncapi.json is built from this and schemas/vehicles/messages.ts):
 *
 *   vehicles/{vehicle}/telemetry        vehicle → platform   VehicleTelemetry   QoS 1
 *   vehicles/{vehicle}/state            vehicle → platform   VehicleState       QoS 1
 *   vehicles/{vehicle}/commands         platform → vehicle   VehicleCommand     QoS 1, message expiry,
 *                                                                               response topic, correlation data
 *   vehicles/{vehicle}/replies/{gw}     vehicle → platform   VehicleReply       QoS 1, the command's correlation data
 *
 * `{vehicle}` is the vehicle's id (the MDS device_id, a UUID), which is also its MQTT user name:
 * the broker's ACL lets a vehicle publish and read only under its own `vehicles/{vehicle}/`. A reply
 * goes to the response topic its command named, under the vehicle's own prefix; `{gw}` is the gateway
 * process waiting for it (one per API or publisher process), which subscribes to
 * `vehicles/+/replies/{gw}`. The ingest processes share `vehicles/+/telemetry` and
 * `vehicles/+/state` through the shared subscription `$share/ingest/…`, so N of them split the
 * stream.
 */
import { isUuid } from '../../core/uuid.js';

const TOPIC_ROOT = 'vehicles';

/** Every message of the protocol goes at least once: QoS 1. */
export const QOS = 1 as const;

/** The shared-subscription group of the ingest processes. */
const INGEST_GROUP = 'ingest';

type VehicleChannel = 'telemetry' | 'state' | 'commands' | 'replies';

export const telemetryTopic = (vehicleId: string) => `${TOPIC_ROOT}/${vehicleId}/telemetry`;
export const stateTopic = (vehicleId: string) => `${TOPIC_ROOT}/${vehicleId}/state`;
export const commandTopic = (vehicleId: string) => `${TOPIC_ROOT}/${vehicleId}/commands`;
export const replyTopic = (vehicleId: string, gateway: string) => `${TOPIC_ROOT}/${vehicleId}/replies/${gateway}`;

/** What a gateway process subscribes to: the replies of every vehicle to its own commands. */
export const repliesFilter = (gateway: string) => `${TOPIC_ROOT}/+/replies/${gateway}`;

/** What the ingest processes share (one subscription each, the group splitting the messages). */
export const INGEST_FILTERS = [`$share/${INGEST_GROUP}/${TOPIC_ROOT}/+/telemetry`, `$share/${INGEST_GROUP}/${TOPIC_ROOT}/+/state`] as const;

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
