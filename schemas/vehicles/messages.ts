/**
 * The vehicle protocol's payloads (MQTT 5): what a vehicle (or the operator's IoT
 * backend speaking for it) publishes and what the platform sends it. Each is a JSON object, UTF-8,
 * without a BOM. The topics, QoS and properties are declared in
 * lib/domain/vehicles/protocol.ts. A vehicle's telemetry and state reports are written by the ingest
 * processes (bin/ingest.ts), its command replies read by the gateway of the process that asked.
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

const position = {
  lat: { type: 'number', minimum: -90, maximum: 90, description: 'WGS 84 latitude, degrees' },
  lng: { type: 'number', minimum: -180, maximum: 180, description: 'WGS 84 longitude, degrees' },
} as const;
const battery = { type: 'integer', minimum: 0, maximum: 100, description: 'state of charge, percent' } as const;

/**
 * A position report, every 10 s on a ride and every few minutes parked. `ts` is when the vehicle took
 * the fix; one vehicle's reports are told apart by it (a redelivered report, with the same `ts`, is
 * stored once). A report that arrives late (the vehicle was offline) is stored at its `ts` and the
 * feeds' hours it falls in are published again.
 */
export const VehicleTelemetrySchema = {
  $id: 'VehicleTelemetry',
  type: 'object',
  required: ['ts', 'lat', 'lng', 'battery_percent'],
  properties: {
    ts: { ...ts, description: 'when the vehicle took the fix, ms since the epoch' },
    ...position,
    battery_percent: battery,
    accuracy_m: { type: 'number', minimum: 0, maximum: 10_000, description: 'horizontal accuracy of the fix, metres' },
    speed_kph: { type: 'number', minimum: 0, maximum: 200, description: 'ground speed' },
    heading: { type: 'number', minimum: 0, maximum: 360, description: 'degrees clockwise from north' },
  },
  examples: [{ ts: 1764662400000, lat: 52.5163, lng: 13.3777, battery_percent: 81, accuracy_m: 4.5, speed_kph: 17.2, heading: 93 }],
} as const;
export type VehicleTelemetry = FromSchema<typeof VehicleTelemetrySchema>;

/**
 * A change of the vehicle's own state, published when it happens (and on every connect): its lock,
 * whether it charges, and the faults it knows of. The platform derives the MDS events a vehicle's
 * own change implies (battery low and charged again, a fault that takes it out of service and its
 * repair).
 */
export const VehicleStateSchema = {
  $id: 'VehicleState',
  type: 'object',
  required: ['ts', 'locked'],
  properties: {
    ts: { ...ts, description: 'when the state changed, ms since the epoch' },
    locked: { type: 'boolean', description: 'the lock is closed' },
    battery_percent: battery,
    charging: { type: 'boolean' },
    faults: {
      type: 'array',
      maxItems: 20,
      uniqueItems: true,
      items: { type: 'string', pattern: '^[a-z0-9_]{1,40}$' },
      description: 'the faults the vehicle knows of now, in the vendor’s codes (an empty list: none)',
    },
  },
  examples: [{ ts: 1764662400000, locked: true, battery_percent: 81, charging: false, faults: [] }],
} as const;
export type VehicleState = FromSchema<typeof VehicleStateSchema>;
