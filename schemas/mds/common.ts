/** Building blocks of the MDS record schemas (our own; the official ones are checked in tests). */
import type { FromSchema } from 'json-schema-to-ts';

export { UUID_SCHEMA as uuid } from '../common.js';
/** integer milliseconds since the Unix epoch, not before 2018 (MDS minimum) */
export const timestampMs = { type: 'integer', minimum: 1514764800000 } as const;
export const nonNegativeInt = { type: 'integer', minimum: 0 } as const;
export const percent = { type: 'integer', minimum: 0, maximum: 100 } as const;

export const location = {
  type: 'object',
  additionalProperties: false,
  required: ['lat', 'lng'],
  properties: { lat: { type: 'number', minimum: -90, maximum: 90 }, lng: { type: 'number', minimum: -180, maximum: 180 } },
} as const;

export const featurePoint = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'properties', 'geometry'],
  properties: {
    type: { const: 'Feature' },
    properties: { type: 'object', additionalProperties: false, required: ['timestamp'], properties: { timestamp: timestampMs } },
    geometry: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'coordinates'],
      properties: {
        type: { const: 'Point' },
        coordinates: {
          type: 'array',
          minItems: 2,
          maxItems: 2,
          items: [
            { type: 'number', minimum: -180, maximum: 180 },
            { type: 'number', minimum: -90, maximum: 90 },
          ],
          // never applies (maxItems 2), but gives the array a type for readers of the OpenAPI document (`items` there)
          additionalItems: { type: 'number' },
        },
      },
    },
  },
} as const;
/** GeoJSON Feature Point with the timestamp property (MDS_Feature_Point of 1.2.0 and 0.4.1). */
export type FeaturePoint = FromSchema<typeof featurePoint>;

export const VEHICLE_STATES_20 = ['removed', 'available', 'non_operational', 'reserved', 'on_trip', 'non_contactable', 'missing', 'elsewhere'] as const;

/** MDS 2.0 data-types/event-type: every event a Policy rule's `states` may name. */
export const EVENT_TYPES_20 = [
  'agency_drop_off',
  'agency_pick_up',
  'battery_charged',
  'battery_low',
  'changed_geographies',
  'charging_end',
  'charging_start',
  'comms_lost',
  'comms_restored',
  'compliance_pick_up',
  'customer_cancellation',
  'decommissioned',
  'driver_cancellation',
  'fueling_end',
  'fueling_start',
  'located',
  'maintenance',
  'maintenance_end',
  'maintenance_pick_up',
  'not_located',
  'off_hours',
  'on_hours',
  'order_drop_off',
  'order_pick_up',
  'passenger_cancellation',
  'provider_cancellation',
  'provider_drop_off',
  'rebalance_pick_up',
  'recommission',
  'remote_end',
  'remote_start',
  'reservation_cancel',
  'reservation_start',
  'reservation_stop',
  'service_end',
  'service_start',
  'system_resume',
  'system_suspend',
  'trip_cancel',
  'trip_end',
  'trip_enter_jurisdiction',
  'trip_leave_jurisdiction',
  'trip_pause',
  'trip_resume',
  'trip_start',
  'trip_stop',
  'unspecified',
] as const;

/** MDS 2.0 data-types/vehicle-type: what a record may say (ours map into it: lib/feeds/mds/records.ts). */
export const VEHICLE_TYPES_20 = [
  'bicycle',
  'bus',
  'cargo_bicycle',
  'car',
  'delivery_robot',
  'moped',
  'motorcycle',
  'scooter_standing',
  'scooter_seated',
  'truck',
  'other',
] as const;

/**
 * Our form factors in MDS 2.0's vehicle_type vocabulary (GBFS 3 form_factor): what our records say
 * (lib/feeds/mds/records.ts) and which of our vehicles a city Policy rule's `vehicle_types` names
 * (lib/domain/policy/mapping.ts).
 */
export const MDS_VEHICLE_TYPES = { scooter: 'scooter_standing', bicycle: 'bicycle' } as const;

/** A form factor of ours in MDS 2.0's vehicle_type vocabulary; anything else is `other`. */
export function mdsVehicleType(formFactor: string): (typeof VEHICLE_TYPES_20)[number] {
  return Object.hasOwn(MDS_VEHICLE_TYPES, formFactor) ? MDS_VEHICLE_TYPES[formFactor as keyof typeof MDS_VEHICLE_TYPES] : 'other';
}

/** MDS 2.0 data-types/propulsion-type. */
export const PROPULSION_TYPES_20 = [
  'human',
  'electric_assist',
  'electric',
  'combustion',
  'combustion_diesel',
  'hybrid',
  'hydrogen_fuel_cell',
  'plug_in_hybrid',
] as const;
