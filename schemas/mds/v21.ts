/**
 * MDS 2.1 as we emit it: the Incident record and the /incidents answer (MDS PR #944:
 * data-types.md "Incidents", provider/README.md "Incidents"), and the telemetry member 2.1 adds,
 * `incident_ids` (data-types.md "Telemetry"). There is no official 2.1 JSON Schema yet (mds-openapi
 * has only v2.0), so these follow the specification's tables member by member; the feeds document
 * publishes them (api/openapi/records-feeds.ts) and the tests validate every answer with them.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { nonNegativeInt, timestampMs, uuid } from './common.js';

/** data-types.md Incidents, `incident_type`: "One of …", verbatim and in the specification's order. */
export const INCIDENT_TYPES_21 = [
  'unplanned_stop',
  'remote_takeover',
  'tip_over',
  'harsh_stopping',
  'harsh_starting',
  'near_miss',
  'vandalism',
  'crash',
] as const;
export type IncidentType = (typeof INCIDENT_TYPES_21)[number];

/**
 * An Incident. It has no time, place or device: "The time of incident occurance is found in the
 * Telemetry data points that reference this `incident_id`" (the points' `incident_ids`).
 */
export const MdsIncidentSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['incident_id', 'incident_type', 'publication_time', 'last_updated'],
  properties: {
    incident_id: uuid,
    incident_type: { enum: INCIDENT_TYPES_21 },
    publication_time: { ...timestampMs, description: 'when the incident became available through /incidents' },
    last_updated: { ...timestampMs, description: 'when the incident was last updated in /incidents' },
    description: { type: 'string', maxLength: 5000 },
    severity: { type: 'string', maxLength: 255 },
    report_id: { type: 'string', maxLength: 255, description: 'identifier of an external report (ours: the TOMP support ticket id)' },
    report_type: { type: 'string', maxLength: 255 },
    contact_info: { type: 'string', maxLength: 500 },
    preliminary: { type: 'boolean', description: 'true: more details or validation to come (a TOMP ticket not resolved yet)' },
  },
} as const;
export type MdsIncident = FromSchema<typeof MdsIncidentSchema>;

/** `incident_ids` of a telemetry point (2.1: "Array of one or more Incident IDs"): left out when none. */
export const incidentIds = { type: 'array', minItems: 1, uniqueItems: true, items: uuid } as const;

/**
 * The /incidents answer: the 2.1 response wrapper (`version`), the near-realtime head of the vehicle
 * endpoints (integer `last_updated`, `ttl`), the page and its JSON:API links (`next`, null on the last
 * page; `first`, `prev`, `last` too when paged by `page[number]`), as /events/recent pages.
 */
export const MdsIncidentsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'last_updated', 'ttl', 'incidents', 'links'],
  properties: {
    version: { const: '2.1.0' },
    last_updated: timestampMs,
    ttl: { ...nonNegativeInt, description: 'milliseconds; 0: always refresh' },
    incidents: { type: 'array', items: MdsIncidentSchema },
    links: {
      type: 'object',
      additionalProperties: false,
      required: ['next'],
      // next always; first, prev and last on a page[number] page (JSON:API)
      properties: {
        first: { type: 'string', maxLength: 4096 },
        prev: { anyOf: [{ type: 'string', maxLength: 4096 }, { type: 'null' }] },
        next: { anyOf: [{ type: 'string', maxLength: 4096 }, { type: 'null' }] },
        last: { type: 'string', maxLength: 4096 },
      },
    },
  },
} as const;
