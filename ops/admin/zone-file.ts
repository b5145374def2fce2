/**
 * The zone file (docs/operations.md, "Zones"): the JSON Schemas of a zone feature's properties, of an
 * area feature's, of a vehicle type and of a price list, and the reading of a file that holds one zone
 * (a GeoJSON FeatureCollection), many (a JSON array of them) or many as NDJSON (one per line).
 * The schemas are the one declaration: the importer validates with them and fills the optional
 * fields of a vehicle type from their `default`s.
 */
import type { ErrorObject } from 'ajv';
import type { FromSchema } from 'json-schema-to-ts';
import { ZONE_ID_SCHEMA } from '../../lib/domain/zones.js';
import { SLEEP_WINDOW_SCHEMA } from '../../schemas/common.js';

const AREA_TYPES = ['operations', 'no-parking', 'parking-spot', 'slow-zone', 'no-riding', 'incentive', 'free-floating'] as const;

/** The id pattern of vehicle_types (migration 000001). */
const VEHICLE_TYPE_ID = { type: 'string', pattern: '^[a-z0-9_-]{1,32}$' } as const;

export const POLYGONAL_SCHEMA = { type: 'object', required: ['type', 'coordinates'], properties: { type: { enum: ['Polygon', 'MultiPolygon'] } } } as const;

/**
 * One vehicle type: a row of vehicle_types, shared by every zone (GBFS vehicle_types.json). The
 * optional fields default to the table's defaults; a file that declares a type declares all of it,
 * so re-importing it with another value updates the type for every zone.
 */
export const VEHICLE_TYPE_SCHEMA = {
  type: 'object',
  required: ['id', 'form_factor', 'propulsion_type', 'name', 'make', 'model', 'max_range_meters', 'max_speed_kph'],
  additionalProperties: false,
  properties: {
    id: VEHICLE_TYPE_ID,
    form_factor: { enum: ['scooter', 'bicycle'] },
    propulsion_type: { enum: ['electric', 'electric_assist', 'human'] },
    name: { type: 'string', minLength: 1 },
    make: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    color: { type: 'string', minLength: 1, default: 'black' },
    max_range_meters: { type: 'integer', minimum: 0 },
    max_speed_kph: { type: 'integer', minimum: 1 },
    rated_power_w: { type: 'integer', minimum: 0, default: 250 },
    wheel_count: { type: 'integer', minimum: 1, default: 2 },
    rider_capacity: { type: 'integer', minimum: 1, default: 1 },
  },
} as const;

/**
 * A zone's prices by vehicle type id, as the pricing table holds them: whole minor units of the
 * zone's currency, VAT included (partner-rental-api.md, Pricing).
 */
const PRICES_SCHEMA = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  patternProperties: {
    [VEHICLE_TYPE_ID.pattern]: {
      type: 'object',
      required: ['start_price', 'price_per_minute'],
      additionalProperties: false,
      properties: { start_price: { type: 'integer', minimum: 0 }, price_per_minute: { type: 'integer', minimum: 0 } },
    },
  },
} as const;

export const ZONE_PROPERTIES_SCHEMA = {
  type: 'object',
  required: ['kind', 'id', 'name', 'city', 'country', 'timezone', 'currency', 'vat_rate', 'parking_mode'],
  additionalProperties: false,
  properties: {
    kind: { const: 'zone' },
    id: ZONE_ID_SCHEMA,
    name: { type: 'string', minLength: 1 },
    city: { type: 'string', minLength: 1 },
    country: { type: 'string', pattern: '^[A-Z]{2}$' },
    timezone: { type: 'string', minLength: 1 },
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
    vat_rate: { type: 'number', minimum: 0, exclusiveMaximum: 1 },
    language: { type: 'string', minLength: 2 },
    parking_mode: { enum: ['free-floating', 'parking-spot'] },
    licence_verification_required: { type: 'boolean' },
    max_speed_kph: { type: 'integer', minimum: 1 },
    reduced_speed_kph: { type: 'integer', minimum: 1 },
    min_required_rides: { type: 'integer', minimum: 0 },
    speed_unit: { enum: ['km/h', 'mph'] },
    min_battery_percent: { type: 'integer', minimum: 0, maximum: 100 },
    unlock_distance_m: { type: 'integer', minimum: 1 },
    sleep_windows: { type: 'array', items: SLEEP_WINDOW_SCHEMA },
    status: { enum: ['operating', 'closed'] },
    /** the zone's first operating hour (UTC, YYYY-MM-DDTHH): its feeds are published from it */
    operating_since: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}$' },
    prices: PRICES_SCHEMA,
    vehicle_types: { type: 'array', items: VEHICLE_TYPE_SCHEMA },
  },
} as const;

export const AREA_PROPERTIES_SCHEMA = {
  type: 'object',
  required: ['area_type', 'name'],
  additionalProperties: false,
  properties: {
    area_type: { enum: AREA_TYPES },
    name: { type: 'string', minLength: 1 },
    vehicle_types: { type: 'array', items: { type: 'string' } },
    capacity: { type: 'integer', minimum: 0 },
    max_speed_kph: { type: 'integer', minimum: 1 },
  },
} as const;

export type ZoneProperties = FromSchema<typeof ZONE_PROPERTIES_SCHEMA>;
export type AreaProperties = FromSchema<typeof AREA_PROPERTIES_SCHEMA>;
export type VehicleTypeDeclaration = FromSchema<typeof VEHICLE_TYPE_SCHEMA>;
/** A vehicle type as the table holds it: the declaration with every optional field filled. */
export type VehicleTypeRow = Required<VehicleTypeDeclaration>;

/** A validated vehicle type with its omitted fields filled from the schema's defaults. */
export function withDefaults(t: VehicleTypeDeclaration): VehicleTypeRow {
  const out: Record<string, unknown> = { ...t };
  for (const [k, p] of Object.entries(VEHICLE_TYPE_SCHEMA.properties)) if (out[k] === undefined && 'default' in p) out[k] = p.default;
  return out as VehicleTypeRow;
}

/**
 * ajv's errors as one line; an enum or const names what it allows and an unknown property its name,
 * so the fix is in the message (zone files, clients files).
 */
export function schemaProblems(errors: ErrorObject[] | null | undefined, root = 'properties'): string {
  return (errors ?? [])
    .map((e) => {
      const p = (e.params ?? {}) as { additionalProperty?: string; allowedValues?: unknown[]; allowedValue?: unknown };
      const detail =
        p.additionalProperty !== undefined
          ? ` (${p.additionalProperty})`
          : p.allowedValues
            ? `: ${p.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
            : 'allowedValue' in p
              ? `: ${JSON.stringify(p.allowedValue)}`
              : '';
      return `${e.instancePath || root} ${e.message}${detail}`;
    })
    .join(', ');
}

/** One zone document of an input, with where it came from for the messages. */
export interface ZoneDocument {
  /** `zones.ndjson line 3`, `zones.json #2`, or the file name for a file of one zone */
  source: string;
  doc: unknown;
}

/**
 * The zone documents of one file's text: a FeatureCollection, a JSON array of them, or NDJSON (one
 * per line, blank lines ignored). A text that is none of these is one problem naming the line.
 */
export function readZoneDocuments(text: string, name: string): ZoneDocument[] | { problem: string } {
  let whole: unknown;
  try {
    whole = JSON.parse(text) as unknown;
  } catch {
    const lines = text.split('\n');
    const docs: ZoneDocument[] = [];
    for (const [i, line] of lines.entries()) {
      if (!line.trim()) continue;
      try {
        docs.push({ source: `${name} line ${i + 1}`, doc: JSON.parse(line) as unknown });
      } catch (err) {
        return {
          problem: `${name} line ${i + 1}: not JSON (${(err as Error).message}); a zone file is one FeatureCollection, a JSON array of them, or one per line (NDJSON)`,
        };
      }
    }
    return docs;
  }
  if (Array.isArray(whole)) return (whole as unknown[]).map((doc, i) => ({ source: `${name} #${i}`, doc }));
  return [{ source: name, doc: whole }];
}
