/**
 * One entry of the publications index (GET …/mds/{zoneID}/publications, issue 16): the state of one
 * hourly file of the zone. The one description of the entry: the feeds' OpenAPI document publishes
 * it (api/openapi/records-feeds.ts) and the answer's type derives from it.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { TIME_HOUR_SCHEMA } from '../common.js';

const msOrNull = { type: ['integer', 'null'], minimum: 0 } as const;

export const MdsPublicationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['feed', 'hour', 'state', 'record_count', 'sha256', 'first_publication_time', 'last_publication_time', 'republish_count'],
  properties: {
    feed: { type: 'string', examples: ['mds-2.0-trips'] },
    hour: { ...TIME_HOUR_SCHEMA, examples: ['2026-11-21T09'] },
    state: { enum: ['published', 'republishing', 'pending'] },
    record_count: { type: ['integer', 'null'], minimum: 0 },
    sha256: { type: ['string', 'null'], pattern: '^[0-9a-f]{64}$', description: 'sha256 (hex) of the gzip file as stored' },
    first_publication_time: msOrNull,
    last_publication_time: msOrNull,
    republish_count: { type: 'integer', minimum: 0 },
  },
} as const;
export type MdsPublication = FromSchema<typeof MdsPublicationSchema>;
