/**
 * The vehicle protocol's payloads (MQTT 5): what a vehicle (or the operator's IoT
 * backend speaking for it) publishes and what the platform sends it. Each is a JSON object, UTF-8,
 * without a BOM. The topics, QoS and properties are declared in
 * lib/domain/vehicles/protocol.ts. The vehicles' telemetry and state reports come with the ingest.
 *
 * Times are integer milliseconds since the epoch (as in MDS). A vehicle's payload
 * may carry members beyond these (a vendor's own), which the platform ignores.
 */
import type { FromSchema } from 'json-schema-to-ts';

const ts = { type: 'integer', minimum: 0, maximum: 8_640_000_000_000_000, description: 'ms since the epoch' } as const;

/** The commands of the vehicle gateway (lib/domain/gateway.ts names its calls by these). */
export const VEHICLE_COMMANDS = ['unlock', 'lock', 'set_speed'] as const;

/**
 * A command to one vehicle. It comes with the MQTT 5 response topic and correlation data the reply
 * goes back with, and a message expiry: a vehicle that gets it after that has no one waiting.
 */
export const VehicleCommandSchema = {
  $id: 'VehicleCommand',
  type: 'object',
  required: ['command', 'issued_at'],
  additionalProperties: false,
  properties: {
    command: { enum: VEHICLE_COMMANDS },
    max_speed_kph: { type: 'integer', minimum: 1, maximum: 100, description: 'set_speed only: the speed limit from now on' },
    issued_at: { ...ts, description: 'when the platform sent it, ms since the epoch' },
  },
  examples: [{ command: 'unlock', issued_at: 1764662400000 }],
} as const;
export type VehicleCommand = FromSchema<typeof VehicleCommandSchema>;

/**
 * The answer to a command, published to its response topic with its correlation data. `refused`
 * with a `temporary` reason (a jammed lock) tells the partner to retry later.
 */
export const VehicleReplySchema = {
  $id: 'VehicleReply',
  type: 'object',
  required: ['result'],
  properties: {
    result: { enum: ['ok', 'refused'] },
    reason: { type: 'string', maxLength: 200, description: 'why it refused, in the vendor’s words (logged, never shown to partners)' },
    temporary: { type: 'boolean', description: 'refused for now (a jammed lock, a busy controller): the same command may succeed later' },
  },
  examples: [{ result: 'ok' }, { result: 'refused', reason: 'lock_jammed', temporary: true }],
} as const;
export type VehicleReply = FromSchema<typeof VehicleReplySchema>;
