/**
 * Schemas of the feeds document. Records and file heads come from the schemas the publisher
 * validates with (schemas/mds, schemas/insurance, schemas/gbfs); envelopes the code assembles by
 * hand (realtime MDS, legacy vehicles) and the error/token bodies are described here.
 */
import { GBFS_V2_SCHEMAS } from '../../schemas/gbfs/v2.js';
import { GBFS_V3_SCHEMAS, manifestV3Schema } from '../../schemas/gbfs/v3.js';
import { InsuranceHeadSchema, InsuranceTripSchema } from '../../schemas/insurance/trips.js';
import { featurePoint, location, timestampMs, uuid } from '../../schemas/mds/common.js';
import { LegacyHeadSchema, StatusChange04Schema, StatusChange12Schema, Trip04Schema, Trip12Schema } from '../../schemas/mds/legacy.js';
import { MdsEventSchema, MdsEventsHeadSchema, MdsTripSchema, MdsTripsHeadSchema } from '../../schemas/mds/v2.js';
import { AuthorizationServerMetadataSchema } from '../../schemas/oauth/metadata.js';
import type { Schema } from './common.js';
import { oas, schemaRef } from './common.js';

/** `{...head, [key]: [items]}` (or `{...head, data: {[key]: [items]}}` when `nested`) plus `tail`. */
function envelope(head: { required: readonly string[]; properties: object }, key: string, item: string, opts: { nested?: boolean; tail?: Record<string, Schema> } = {}): Schema {
  const array = { type: 'array', items: schemaRef(item) };
  const body = opts.nested ? { data: { type: 'object', required: [key], properties: { [key]: array } } } : { [key]: array };
  return {
    type: 'object',
    required: [...head.required, opts.nested ? 'data' : key, ...Object.keys(opts.tail ?? {})],
    properties: { ...(oas(head.properties) as object), ...body, ...(opts.tail ?? {}) },
  };
}

const emptyLinks = { links: { type: 'object', maxProperties: 0, description: 'always empty: nothing is paginated' } };
const pageLinks = {
  links: {
    type: 'object',
    required: ['next'],
    properties: { next: { type: ['string', 'null'], format: 'uri', description: 'the next page of the window (follow it unchanged); null on the last page' } },
  },
};
/** The official MDS 2.0 head of the vehicle endpoints: plain integers (where the requirement's object form would fail the schema). */
const vehicleHead = {
  required: ['version', 'last_updated', 'ttl'],
  properties: { version: { const: '2.0.0' }, last_updated: oas(timestampMs), ttl: { type: 'integer', minimum: 0, description: 'milliseconds; 0: always refresh' } },
};
const mdsHead = { required: MdsEventsHeadSchema.required, properties: MdsEventsHeadSchema.properties };

const telemetry: Schema = {
  type: 'object',
  required: ['telemetry_id', 'device_id', 'provider_id', 'timestamp', 'location', 'journey_id', 'trip_ids'],
  properties: {
    telemetry_id: oas(uuid),
    device_id: oas(uuid),
    provider_id: oas(uuid),
    timestamp: oas(timestampMs),
    location: oas(location),
    battery_percent: { type: 'integer', minimum: 0, maximum: 100 },
    journey_id: { type: ['string', 'null'] },
    trip_ids: { type: ['array', 'null'], items: oas(uuid) },
  },
};

const legacyVehicle = (v: '1.2' | '0.4'): Schema => ({
  type: 'object',
  required: ['provider_name', 'provider_id', 'device_id', 'vehicle_id', 'vehicle_type', v === '1.2' ? 'propulsion_types' : 'propulsion_type', 'last_event_time', 'last_event_location', 'battery_pct'],
  properties: {
    provider_name: { type: 'string' },
    provider_id: oas(uuid),
    device_id: oas(uuid),
    vehicle_id: { type: 'string', description: 'the code printed on the vehicle' },
    vehicle_type: { enum: ['scooter', 'bicycle'] },
    [v === '1.2' ? 'propulsion_types' : 'propulsion_type']: { type: 'array', items: { enum: ['electric', 'electric_assist', 'human'] } },
    last_event_time: oas(timestampMs),
    ...(v === '1.2'
      ? { last_vehicle_state: { type: 'string' }, last_event_types: { type: 'array', items: { type: 'string' } } }
      : { last_event_type: { enum: ['available', 'reserved', 'unavailable'] }, last_event_type_reason: { type: 'string' } }),
    last_event_location: oas(featurePoint),
    current_location: { ...oas(featurePoint), description: 'when the vehicle is not on a trip and has moved since its last event' },
    battery_pct: { type: ['number', 'null'], minimum: 0, maximum: 1 },
  },
});

export const FEED_SCHEMAS: Record<string, Schema> = {
  FeedError: {
    type: 'object',
    required: ['error', 'error_description', 'error_details'],
    description: 'The MDS error body, used by every feed (MDS, GBFS, insurance, legacy).',
    properties: {
      error: { enum: ['invalid_token', 'insufficient_scope', 'bad_param', 'not_found', 'not_acceptable', 'not_published', 'service_unavailable', 'internal_error'] },
      error_description: { type: 'string' },
      error_details: { type: 'array', items: { type: 'string' } },
    },
  },
  TokenForm: {
    type: 'object',
    required: ['grant_type'],
    properties: {
      grant_type: { const: 'client_credentials' },
      // as lib/auth/feed-clients.ts accepts ids; secrets are 43 characters (lib/auth/secrets.ts), the form at most 4096 bytes
      client_id: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9._-]{1,128}$', description: 'only without an Authorization header (HTTP Basic is preferred)' },
      client_secret: { type: 'string', maxLength: 1024, description: 'only without an Authorization header' },
    },
  },
  AccessToken: {
    type: 'object',
    required: ['access_token', 'expires_in', 'token_type'],
    properties: { access_token: { type: 'string' }, expires_in: { type: 'integer', examples: [900] }, token_type: { const: 'bearer' } },
  },
  AuthorizationServerMetadata: oas(AuthorizationServerMetadataSchema),
  OAuthError: {
    type: 'object',
    required: ['error', 'error_description'],
    properties: { error: { enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'slow_down', 'temporarily_unavailable'] }, error_description: { type: 'string' } },
  },
  MdsTrip: oas(MdsTripSchema),
  MdsEvent: oas(MdsEventSchema),
  MdsTelemetry: telemetry,
  MdsVehicle: {
    type: 'object',
    required: ['device_id', 'provider_id', 'vehicle_id', 'vehicle_type', 'propulsion_types', 'maximum_speed'],
    properties: {
      device_id: oas(uuid),
      provider_id: oas(uuid),
      vehicle_id: { type: 'string', description: 'the short code printed on the vehicle' },
      vehicle_type: { type: 'string', examples: ['scooter_standing'] },
      propulsion_types: { type: 'array', items: { type: 'string' }, examples: [['electric']] },
      maximum_speed: { type: 'integer' },
      vehicle_attributes: { type: 'object', properties: { make: { type: 'string' }, model: { type: 'string' } } },
      accessibility_attributes: { type: 'array', items: { type: 'string' } },
    },
  },
  MdsVehicleStatus: {
    type: 'object',
    required: ['device_id', 'provider_id', 'last_event', 'last_telemetry'],
    properties: { device_id: oas(uuid), provider_id: oas(uuid), last_event: schemaRef('MdsEvent'), last_telemetry: schemaRef('MdsTelemetry') },
  },
  MdsTrips: envelope({ required: MdsTripsHeadSchema.required, properties: MdsTripsHeadSchema.properties }, 'trips', 'MdsTrip'),
  MdsEvents: envelope(mdsHead, 'events', 'MdsEvent', { tail: emptyLinks }),
  MdsTelemetryFile: envelope(mdsHead, 'telemetry', 'MdsTelemetry'),
  MdsPublications: {
    type: 'object',
    required: ['version', 'zone_id', 'publications'],
    properties: {
      version: { const: '2.0.0' },
      zone_id: { type: 'string' },
      publications: {
        type: 'array',
        items: {
          type: 'object',
          required: ['feed', 'hour', 'state', 'record_count', 'sha256', 'first_publication_time', 'last_publication_time', 'republish_count'],
          properties: {
            feed: { type: 'string', examples: ['mds-2.0-trips'] },
            hour: { type: 'string', examples: ['2026-11-21T09'] },
            state: { enum: ['published', 'republishing', 'pending'] },
            record_count: { type: ['integer', 'null'] },
            sha256: { type: ['string', 'null'], description: 'sha256 (hex) of the gzip file as stored' },
            first_publication_time: { type: ['integer', 'null'] },
            last_publication_time: { type: ['integer', 'null'] },
            republish_count: { type: 'integer', minimum: 0 },
          },
        },
      },
    },
  },
  MdsEventsRecent: envelope(mdsHead, 'events', 'MdsEvent', { tail: pageLinks }),
  MdsVehiclesStatus: { ...envelope(vehicleHead, 'vehicles_status', 'MdsVehicleStatus'), description: 'links ({"next": null}) on the list, not on the single-device answer' },
  MdsVehicles: { ...envelope(vehicleHead, 'vehicles', 'MdsVehicle'), description: 'links ({"next": null}) on the list, not on the single-device answer' },
  InsuranceTrip: oas(InsuranceTripSchema),
  InsuranceTrips: envelope(InsuranceHeadSchema, 'trips', 'InsuranceTrip'),
  Trip12: oas(Trip12Schema),
  Trip04: oas(Trip04Schema),
  StatusChange12: oas(StatusChange12Schema),
  StatusChange04: oas(StatusChange04Schema),
  Vehicle12: legacyVehicle('1.2'),
  Vehicle04: legacyVehicle('0.4'),
  LegacyTrips: { anyOf: [envelope(LegacyHeadSchema, 'trips', 'Trip12', { nested: true }), envelope(LegacyHeadSchema, 'trips', 'Trip04', { nested: true })], description: 'version 1.2.0 or 0.4.1, as Accept asked' },
  LegacyStatusChanges: {
    anyOf: [envelope(LegacyHeadSchema, 'status_changes', 'StatusChange12', { nested: true }), envelope(LegacyHeadSchema, 'status_changes', 'StatusChange04', { nested: true })],
    description: 'version 1.2.0 or 0.4.1, as Accept asked',
  },
  LegacyVehicles: {
    type: 'object',
    required: ['version', 'last_updated', 'ttl', 'data'],
    properties: {
      version: { enum: ['1.2.0', '0.4.1'] },
      last_updated: oas(timestampMs),
      ttl: { type: 'integer', minimum: 0 },
      data: { type: 'object', required: ['vehicles'], properties: { vehicles: { type: 'array', items: { anyOf: [schemaRef('Vehicle12'), schemaRef('Vehicle04')] } } } },
    },
  },
};

const pascal = (s: string) => s.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());

/** GBFS file schemas by document name (`GbfsV2SystemInformation`, …) and file. */
export const GBFS_FILES = {
  '2.2': Object.keys(GBFS_V2_SCHEMAS).map((file) => ({ file, schema: `GbfsV2${pascal(file)}` })),
  '3.0': Object.keys(GBFS_V3_SCHEMAS).map((file) => ({ file, schema: `GbfsV3${pascal(file)}` })),
} as const;

for (const { file, schema } of GBFS_FILES['2.2']) FEED_SCHEMAS[schema] = oas(GBFS_V2_SCHEMAS[file as keyof typeof GBFS_V2_SCHEMAS]);
for (const { file, schema } of GBFS_FILES['3.0']) FEED_SCHEMAS[schema] = oas(GBFS_V3_SCHEMAS[file as keyof typeof GBFS_V3_SCHEMAS]);
FEED_SCHEMAS.GbfsV3Manifest = oas(manifestV3Schema);
