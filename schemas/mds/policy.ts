/**
 * The MDS 2.0 Policy and Geography documents a city publishes and the publisher reads
 * (publisher/policy/read.ts): `GET /policies` or `policies.json`, `GET /geographies` or
 * `geographies.json`. Our own description of the official models (mds-openapi v2.0 `models/policy`,
 * `models/policy-rule`, `models/geography`, `reference/{policy,geography}.yaml`); test/city-policy.test.ts
 * checks that the official schemas and these accept and refuse the same documents. Two deliberate
 * differences, both where the official file is broken: the time of day (`data-types/iso-time`) is
 * anchored (upstream's pattern matches any text that contains a time), and a rule's `states` lists
 * its events by name (upstream's `patternProperties: {"": …}` is the same thing, written for any key).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { timestampMs, uuid, VEHICLE_STATES_20, VEHICLE_TYPES_20, PROPULSION_TYPES_20, EVENT_TYPES_20 } from './common.js';

const uuidArray = { type: 'array', uniqueItems: true, items: uuid } as const;
const nullableInt = { type: ['integer', 'null'] } as const;
/** data-types/iso-time, anchored: hh:mm:ss */
const ISO_TIME_PATTERN = '^([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d$';
export const POLICY_DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

const common = {
  name: { type: 'string', maxLength: 255 },
  rule_id: uuid,
  rule_type: { type: 'string' },
  geographies: { ...uuidArray, minItems: 1 },
  states: {
    type: 'object',
    propertyNames: { enum: VEHICLE_STATES_20 },
    additionalProperties: { type: 'array', uniqueItems: true, items: { enum: EVENT_TYPES_20 } },
  },
  rule_units: { type: ['string', 'null'] },
  accessibility_options: { type: ['array', 'null'] },
  vehicle_types: { type: 'array', uniqueItems: true, items: { enum: VEHICLE_TYPES_20 } },
  propulsion_types: { type: 'array', uniqueItems: true, items: { enum: PROPULSION_TYPES_20 } },
  minimum: nullableInt,
  maximum: nullableInt,
  inclusive_minimum: { type: ['boolean', 'null'] },
  inclusive_maximum: { type: ['boolean', 'null'] },
  rate_amount: nullableInt,
  rate_recurrence: { type: ['string', 'null'] },
  rate_applies_when: { enum: ['in_bounds', 'out_of_bounds', null] },
  start_time: { type: 'string', pattern: ISO_TIME_PATTERN },
  end_time: { type: 'string', pattern: ISO_TIME_PATTERN },
  days: { type: 'array', uniqueItems: true, items: { enum: POLICY_DAYS } },
  messages: { type: ['object', 'null'], additionalProperties: { type: 'string' } },
  value_url: { type: ['string', 'null'], format: 'uri' },
} as const;

/** models/policy-rule: the common fields, then one branch per rule type (its units and recurrences). */
export const PolicyRuleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'rule_id', 'rule_type', 'geographies', 'states'],
  properties: common,
  oneOf: [
    {
      required: ['rule_units'],
      properties: { rule_type: { const: 'count' }, rule_units: { const: 'devices' }, rate_recurrence: { enum: ['once_on_match', 'once_on_unmatch'] } },
    },
    {
      required: ['rule_units'],
      properties: { rule_type: { const: 'speed' }, rule_units: { enum: ['mph', 'kph'] }, rate_recurrence: { enum: ['once_on_match', 'once_on_unmatch'] } },
    },
    {
      required: ['rule_units'],
      properties: {
        rule_type: { const: 'time' },
        rule_units: { enum: ['seconds', 'minutes', 'hours', 'days'] },
        rate_recurrence: { enum: ['each_time_unit', 'per_complete_time_unit'] },
      },
    },
    {
      properties: {
        rule_type: { const: 'user' },
        rule_units: { type: 'null' },
        rate_amount: { type: 'null' },
        rate_recurrence: { type: 'null' },
        rate_applies_when: { type: 'null' },
      },
    },
  ],
} as const;

/** models/policy */
export const PolicySchema = {
  type: 'object',
  required: ['name', 'mode_id', 'policy_id', 'description', 'start_date', 'published_date', 'rules'],
  properties: {
    name: { type: 'string', maxLength: 255 },
    mode_id: { enum: ['car-share', 'delivery-robots', 'micromobility', 'passenger-services'] },
    policy_id: uuid,
    provider_ids: uuidArray,
    description: { type: 'string', maxLength: 255 },
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
    start_date: timestampMs,
    end_date: timestampMs,
    published_date: timestampMs,
    prev_policies: uuidArray,
    rules: { type: 'array', minItems: 1, items: PolicyRuleSchema },
  },
} as const;

/** reference/policy.yaml GET /policies (and policies.json): version, last_updated, policies */
export const PolicyDocumentSchema = {
  type: 'object',
  required: ['version', 'last_updated', 'policies'],
  properties: {
    version: { type: 'string', pattern: '^2\\.0\\.[0-9]+$' },
    last_updated: timestampMs,
    end_date: timestampMs,
    policies: { type: 'array', items: PolicySchema },
  },
} as const;

const position = { type: 'array', minItems: 2, items: { type: 'number' } } as const;
const ring = { type: 'array', minItems: 4, items: position } as const;

/** data-types/geojson-featurecollection: the features whose polygons a rule covers */
const FeatureCollectionSchema = {
  type: 'object',
  required: ['type', 'features'],
  properties: {
    type: { const: 'FeatureCollection' },
    features: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'properties', 'geometry'],
        properties: {
          type: { const: 'Feature' },
          properties: { type: ['object', 'null'] },
          geometry: {
            type: 'object',
            required: ['type', 'coordinates'],
            properties: {
              type: { enum: ['Polygon', 'MultiPolygon', 'Point', 'MultiPoint', 'LineString', 'MultiLineString'] },
              coordinates: { type: 'array' },
            },
            if: { properties: { type: { const: 'Polygon' } } },
            then: { properties: { coordinates: { type: 'array', minItems: 1, items: ring } } },
            else: {
              if: { properties: { type: { const: 'MultiPolygon' } } },
              then: { properties: { coordinates: { type: 'array', minItems: 1, items: { type: 'array', minItems: 1, items: ring } } } },
            },
          },
        },
      },
    },
  },
} as const;

/** models/geography */
export const GeographySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'geography_id', 'geography_json', 'published_date'],
  properties: {
    name: { type: 'string', maxLength: 255 },
    description: { type: 'string', maxLength: 255 },
    geography_type: { type: 'string' },
    geography_id: uuid,
    geography_json: FeatureCollectionSchema,
    effective_date: timestampMs,
    published_date: timestampMs,
    retire_date: timestampMs,
    prev_geographies: uuidArray,
  },
} as const;

/** reference/geography.yaml GET /geographies (and geographies.json): version, last_updated, geographies */
export const GeographyDocumentSchema = {
  type: 'object',
  required: ['version', 'last_updated', 'geographies'],
  properties: {
    version: { type: 'string', pattern: '^2\\.0\\.[0-9]+$' },
    last_updated: timestampMs,
    geographies: { type: 'array', items: GeographySchema },
  },
} as const;

export type PolicyDocument = FromSchema<typeof PolicyDocumentSchema>;
export type Policy = FromSchema<typeof PolicySchema>;
export type PolicyRule = FromSchema<typeof PolicyRuleSchema>;
export type GeographyDocument = FromSchema<typeof GeographyDocumentSchema>;
export type Geography = FromSchema<typeof GeographySchema>;
