/**
 * Schemas of the feeds document. Every record the feeds emit is a component built from the one
 * JSON Schema of that record (schemas/mds, schemas/insurance), the object the publisher validates
 * with and the record's TS type is derived from (`FromSchema`); a record nested in another (a
 * vehicle status' last event) is a `$ref` to its own component. File heads come from the same
 * schemas; the envelopes the code assembles by hand (realtime MDS, legacy vehicles) and the
 * error/token bodies are described here. GBFS files come from schemas/gbfs.
 */
import { GBFS_V2_SCHEMAS } from '../../schemas/gbfs/v2.js';
import { GBFS_V3_SCHEMAS, manifestV3Schema } from '../../schemas/gbfs/v3.js';
import { InsuranceHeadSchema, InsuranceTripSchema } from '../../schemas/insurance/trips.js';
import { timestampMs } from '../../schemas/mds/common.js';
import {
  LegacyHeadSchema,
  StatusChange04Schema,
  StatusChange12Schema,
  Trip04Schema,
  Trip12Schema,
  Vehicle04Schema,
  Vehicle12Schema,
} from '../../schemas/mds/legacy.js';
import { MdsPublicationSchema } from '../../schemas/mds/publications.js';
import {
  MdsEventSchema,
  MdsEventsHeadSchema,
  MdsTelemetrySchema,
  MdsTripSchema,
  MdsTripsHeadSchema,
  MdsVehicleSchema,
  MdsVehicleStatusSchema,
} from '../../schemas/mds/v2.js';
import { MdsIncidentSchema } from '../../schemas/mds/v21.js';
import { AuthorizationServerMetadataSchema } from '../../schemas/oauth/metadata.js';
import { JwksSchema } from '../../schemas/signatures/jwks.js';
import type { Schema } from './common.js';
import { components, oas, schemaRef } from './common.js';

/** Every record the feeds emit, by component name: its one JSON Schema (test/feed-record-shapes.test.ts). */
export const FEED_RECORD_SCHEMAS = {
  MdsTrip: MdsTripSchema,
  MdsEvent: MdsEventSchema,
  MdsTelemetry: MdsTelemetrySchema,
  MdsVehicle: MdsVehicleSchema,
  MdsVehicleStatus: MdsVehicleStatusSchema,
  InsuranceTrip: InsuranceTripSchema,
  Trip12: Trip12Schema,
  Trip04: Trip04Schema,
  StatusChange12: StatusChange12Schema,
  StatusChange04: StatusChange04Schema,
  Vehicle12: Vehicle12Schema,
  Vehicle04: Vehicle04Schema,
  MdsPublication: MdsPublicationSchema,
  MdsIncident: MdsIncidentSchema,
} as const;

const records = components(FEED_RECORD_SCHEMAS);
/** A `$ref` to a record's component (the declarations below nest records). */
const recordRef = (name: keyof typeof FEED_RECORD_SCHEMAS): Schema => schemaRef(name);

/** `{...head, [key]: [items]}` (or `{...head, data: {[key]: [items]}}` when `nested`) plus `tail`. */
function envelope(
  head: { required: readonly string[]; properties: object },
  key: string,
  item: keyof typeof FEED_RECORD_SCHEMAS,
  opts: { nested?: boolean; tail?: Record<string, Schema> } = {},
): Schema {
  const array = { type: 'array', items: recordRef(item) };
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
    additionalProperties: false,
    properties: {
      next: { type: ['string', 'null'], format: 'uri', description: 'the next page of the window (follow it unchanged); null on the last page' },
      first: { type: ['string', 'null'], format: 'uri', description: 'page[number] paging: page 1 under the same page[as_of]' },
      prev: { type: ['string', 'null'], format: 'uri', description: 'page[number] paging: the page before (the last page, past the end); null on page 1' },
      last: { type: ['string', 'null'], format: 'uri', description: 'page[number] paging: the last page under the same page[as_of]' },
    },
  },
};
/** The official MDS 2.0 head of the vehicle endpoints: plain integers (where the requirement's object form would fail the schema). */
const vehicleHead = {
  required: ['version', 'last_updated', 'ttl'],
  properties: {
    version: { const: '2.0.0' },
    last_updated: oas(timestampMs),
    ttl: { type: 'integer', minimum: 0, description: 'milliseconds; 0: always refresh' },
  },
};
const mdsHead = { required: MdsEventsHeadSchema.required, properties: MdsEventsHeadSchema.properties };

const DECLARED = {
  FeedError: {
    type: 'object',
    required: ['error', 'error_description', 'error_details'],
    description: 'The MDS error body, used by every feed (MDS, GBFS, insurance, legacy).',
    properties: {
      error: {
        enum: ['invalid_token', 'insufficient_scope', 'bad_param', 'not_found', 'not_acceptable', 'not_published', 'service_unavailable', 'internal_error'],
      },
      error_description: { type: 'string' },
      error_details: { type: 'array', items: { type: 'string' } },
    },
  },
  TokenForm: {
    type: 'object',
    required: ['grant_type'],
    properties: {
      grant_type: { const: 'client_credentials' },
      // as lib/feeds/clients.ts accepts ids; secrets are 43 characters (lib/domain/credentials/secrets.ts), the form at most 4096 bytes
      client_id: {
        type: 'string',
        maxLength: 128,
        pattern: '^[A-Za-z0-9._-]{1,128}$',
        description: 'only without an Authorization header (HTTP Basic is preferred)',
      },
      client_secret: { type: 'string', maxLength: 1024, description: 'only without an Authorization header' },
    },
  },
  AccessToken: {
    type: 'object',
    required: ['access_token', 'expires_in', 'token_type'],
    properties: { access_token: { type: 'string' }, expires_in: { type: 'integer', examples: [900] }, token_type: { const: 'bearer' } },
  },
  AuthorizationServerMetadata: oas(AuthorizationServerMetadataSchema),
  Jwks: oas(JwksSchema),
  OAuthError: {
    type: 'object',
    required: ['error', 'error_description'],
    properties: {
      error: { enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'slow_down', 'temporarily_unavailable'] },
      error_description: { type: 'string' },
    },
  },
  ...records.schemas,
  MdsTrips: envelope({ required: MdsTripsHeadSchema.required, properties: MdsTripsHeadSchema.properties }, 'trips', 'MdsTrip'),
  MdsEvents: envelope(mdsHead, 'events', 'MdsEvent', { tail: emptyLinks }),
  MdsTelemetryFile: envelope(mdsHead, 'telemetry', 'MdsTelemetry'),
  MdsPublications: {
    type: 'object',
    required: ['version', 'zone_id', 'publications'],
    properties: { version: { const: '2.0.0' }, zone_id: { type: 'string' }, publications: { type: 'array', items: recordRef('MdsPublication') } },
  },
  MdsEventsRecent: envelope(mdsHead, 'events', 'MdsEvent', { tail: pageLinks }),
  MdsIncidents: {
    ...envelope({ ...vehicleHead, properties: { ...vehicleHead.properties, version: { const: '2.1.0' } } }, 'incidents', 'MdsIncident', { tail: pageLinks }),
    description: 'MDS 2.1 (schemas/mds/v21.ts MdsIncidentsSchema): the near-realtime head of the vehicle endpoints, the page, links.next',
  },
  MdsVehiclesStatus: {
    ...envelope(vehicleHead, 'vehicles_status', 'MdsVehicleStatus'),
    description: 'links ({"next": null}) on the list, not on the single-device answer',
  },
  MdsVehicles: { ...envelope(vehicleHead, 'vehicles', 'MdsVehicle'), description: 'links ({"next": null}) on the list, not on the single-device answer' },
  InsuranceTrips: envelope(InsuranceHeadSchema, 'trips', 'InsuranceTrip'),
  LegacyTrips: {
    anyOf: [envelope(LegacyHeadSchema, 'trips', 'Trip12', { nested: true }), envelope(LegacyHeadSchema, 'trips', 'Trip04', { nested: true })],
    description: 'version 1.2.0 or 0.4.1, as Accept asked',
  },
  LegacyStatusChanges: {
    anyOf: [
      envelope(LegacyHeadSchema, 'status_changes', 'StatusChange12', { nested: true }),
      envelope(LegacyHeadSchema, 'status_changes', 'StatusChange04', { nested: true }),
    ],
    description: 'version 1.2.0 or 0.4.1, as Accept asked',
  },
  LegacyVehicles: {
    type: 'object',
    required: ['version', 'last_updated', 'ttl', 'data'],
    properties: {
      version: { enum: ['1.2.0', '0.4.1'] },
      last_updated: oas(timestampMs),
      ttl: { type: 'integer', minimum: 0 },
      data: {
        type: 'object',
        required: ['vehicles'],
        properties: { vehicles: { type: 'array', items: { anyOf: [recordRef('Vehicle12'), recordRef('Vehicle04')] } } },
      },
    },
  },
} satisfies Record<string, Schema>;

/** `system_information` → `SystemInformation`, for the compiler as for the document. */
type Pascal<S extends string> = S extends `${infer H}_${infer T}` ? `${Capitalize<H>}${Pascal<T>}` : Capitalize<S>;
const pascal = <S extends string>(s: S) => s.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase()) as Pascal<S>;

type V2File = keyof typeof GBFS_V2_SCHEMAS;
type V3File = keyof typeof GBFS_V3_SCHEMAS;

/** GBFS file schemas by document name (`GbfsV2SystemInformation`, …) and file. */
export const GBFS_FILES = {
  '2.2': (Object.keys(GBFS_V2_SCHEMAS) as V2File[]).map((file) => ({ file, schema: `GbfsV2${pascal(file)}` as const })),
  '3.0': (Object.keys(GBFS_V3_SCHEMAS) as V3File[]).map((file) => ({ file, schema: `GbfsV3${pascal(file)}` as const })),
};

const gbfs = Object.fromEntries([
  ...GBFS_FILES['2.2'].map(({ file, schema }) => [schema, oas(GBFS_V2_SCHEMAS[file])]),
  ...GBFS_FILES['3.0'].map(({ file, schema }) => [schema, oas(GBFS_V3_SCHEMAS[file])]),
]) as Record<(typeof GBFS_FILES)['2.2' | '3.0'][number]['schema'], Schema>;

/** Every component of the feeds' documents, by name: the records, the envelopes and bodies above, the GBFS files. */
export const FEED_SCHEMAS = { ...DECLARED, ...gbfs, GbfsV3Manifest: oas(manifestV3Schema) };

/** The name of a component of the feeds' documents. */
export type FeedSchemaName = keyof typeof FEED_SCHEMAS;

/**
 * A `$ref` to each component by its name (`FEED_REF.MdsTrips`): the endpoint tables and the
 * document's building blocks reference the feeds' schemas through these, so a name that is not a
 * component does not compile.
 */
export const FEED_REF = Object.fromEntries(Object.keys(FEED_SCHEMAS).map((name) => [name, schemaRef(name)])) as Readonly<Record<FeedSchemaName, Schema>>;
