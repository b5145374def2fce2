/**
 * The main host's feed table (data-feeds.md; docs/feeds-access.md): the token endpoint, MDS 2.0,
 * GBFS 3.0 and 2.2, insurance trips. The router (./router.ts) mounts it, the feeds document
 * (api/openapi/feeds.ts) describes it, and its hourly-file rows are the hot path's routes. Order
 * is route precedence (`/vehicles/status` before `/vehicles/{deviceID}`).
 */
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX } from './paging-limits.js';
import { V2_FILES, V3_FILES } from '../../lib/feeds/gbfs/files.js';
import type { ParamSpec, ResponseSpec } from '../kit/endpoints.js';
import type { Schema } from '../openapi/common.js';
import { FEED_REF, GBFS_FILES } from '../openapi/records-feeds.js';
import { INSURANCE_2_0, MDS_2_0, MDS_2_1 } from './accept.js';
import { mdsIncidents } from './incidents.js';
import { INCIDENT_TYPES_21 } from '../../schemas/mds/v21.js';
import { timeHour, tokenEndpoint, ZONE_PARAM, type FeedEndpoint, type HourFileSpec } from './endpoint.js';
import { notYetAvailable202, serveHourFile } from './files.js';
import { mdsGate } from './gates.js';
import { gbfsManifest, gbfsV2File, gbfsV2FileInLanguage, gbfsV3File } from './gbfs.js';
import { insuranceTrips } from './insurance.js';
import { single, timeHourParam } from './params.js';
import { publicationsIndex } from './publications-index.js';
import { mdsEventsRecent, mdsVehicles, mdsVehicleStatus } from './realtime.js';
import { monthlyReport } from './reports.js';
import { oauthMetadataEndpoint } from './discovery.js';
import { jwksEndpoint } from './jwks.js';

const MDS = MDS_2_0.contentType;
const BASE = '/v1/partner-apis/mds/{zoneID}';

const ms = (description: string): ParamSpec => ({
  description: `${description}, integer milliseconds since the Unix epoch`,
  schema: { type: 'string', maxLength: 15, pattern: '^[0-9]{1,15}$' },
  required: true,
});
// as api/feeds/paging.ts decodes a cursor or a pin: base64url payload, a dot, base64url signature, 1024 characters at most
const SIGNED = { type: 'string', maxLength: 1024, pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$' } as const;
const PAGE_SIZE: ParamSpec = {
  description: `JSON:API (MDS 2.1): events per page, 1 to ${EVENTS_PAGE_MAX} (default ${EVENTS_PAGE_DEFAULT}); the same as \`limit\`, and a different value beside it is a 400`,
  schema: { type: 'integer', format: 'int32', minimum: 1, maximum: EVENTS_PAGE_MAX },
};
const PAGE_NUMBER: ParamSpec = {
  description:
    'JSON:API (MDS 2.1): the page, from 1, of `page[size]` events in (timestamp, event_id) order; past the last page an empty page. Not with `cursor` (400)',
  schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 1_000_000 },
};
export const PAGE_PARAMS: Record<string, ParamSpec> = {
  limit: {
    description: `events per page, 1 to ${EVENTS_PAGE_MAX} (default ${EVENTS_PAGE_DEFAULT})`,
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: EVENTS_PAGE_MAX },
  },
  cursor: {
    description: 'from the previous page’s next link, unchanged (signed: it pins the zone, window, limit and the set of events of the first page)',
    schema: SIGNED,
  },
  'page[size]': PAGE_SIZE,
  'page[number]': PAGE_NUMBER,
  'page[as_of]': {
    description:
      'from a page link (first, prev, next, last), unchanged: it pins the set of events of the window as of its first page (signed: the zone, window, cut-off and event count), so page N is the same page whenever it is asked for. Without it a `page[number]` request counts the window as it is then. Not with `cursor` (400)',
    schema: SIGNED,
  },
};
/** The vehicle lists are one page: JSON:API clients may send these, and only page 1 exists. */
export const ONE_PAGE_PARAMS: Record<string, ParamSpec> = {
  'page[size]': { ...PAGE_SIZE, description: 'accepted for JSON:API clients; the list is one page holding every vehicle whatever the size (links.next null)' },
  'page[number]': {
    ...PAGE_NUMBER,
    description: 'accepted for JSON:API clients; only 1 exists (another number is a 400)',
    schema: { ...PAGE_NUMBER.schema, maximum: 1 },
  },
};
export const PAGING =
  `Paged, two ways. \`limit\`/\`cursor\`: at most \`limit\` events per page in (timestamp, event_id) order; follow the next link unchanged until it is null. ` +
  '`page[size]`/`page[number]` (JSON:API, as MDS 2.1 recommends): page `page[number]` of `page[size]` events, with first, prev, next and last links that keep `page[number]`, the size parameter the request used and a `page[as_of]` pin. ' +
  'Either way every event of the window that was recorded when the first page was asked for comes exactly once, however many arrive meanwhile (a new traversal sees those), and under one pin page N is always the same page. ' +
  'Mixing the styles (`cursor` with `page[number]` or `page[as_of]`), `limit` and `page[size]` with different values, or another `page[…]` parameter is a 400. ';
const optionalMs = (description: string): ParamSpec => ({
  description: `${description}, integer milliseconds since the Unix epoch`,
  schema: { type: 'string', maxLength: 15, pattern: '^[0-9]{1,15}$' },
});
const DEVICE = { deviceID: { description: 'the MDS device_id (UUID)', schema: { type: 'string', format: 'uuid', maxLength: 36 } } };

const mdsOk = (description: string, record: Schema): Record<number, ResponseSpec> => ({ 200: { description, content: { [MDS]: record } } });
const mdsAccess = (endpoint: 'trips' | 'events' | 'telemetry'): HourFileSpec['access'] => {
  const access = { family: 'mds', version: '2.0', endpoint } as const;
  return () => access;
};

/** An MDS 2.0 hour file: the gate, the hour, the publication index, 202 while not published. */
function mdsHourFile(spec: { feed: 'mds_trips' | 'mds_events' | 'mds_telemetry'; param: string; endpoint: 'trips' | 'events' | 'telemetry' }) {
  return {
    hourFile: { feed: spec.feed, param: spec.param, offers: [MDS_2_0], fallback: MDS_2_0, access: mdsAccess(spec.endpoint) },
    feed: { file: true, notPublished202: true, accept: [MDS] },
    handle: async (deps: Parameters<FeedEndpoint['handle']>[0], ctx: Parameters<FeedEndpoint['handle']>[1]) => {
      const zone = await mdsGate(deps, ctx, spec.endpoint);
      const hour = timeHourParam(spec.param, single(ctx.query, spec.param));
      await serveHourFile(deps, ctx, { feed: spec.feed, version: '2.0', zone, hour, contentType: MDS, notPublished: notYetAvailable202 });
    },
  };
}

const gbfsFiles = (version: '2.2' | '3.0') => {
  const files = version === '3.0' ? V3_FILES : V2_FILES;
  return { description: `a GBFS ${version} file name`, schema: { type: 'string', enum: [...files] } };
};
const gbfsOk = (description: string, version: '2.2' | '3.0'): Record<number, ResponseSpec> => ({
  // anyOf: the files share their head (version, ttl, last_updated), so one body can match several schemas
  200: { description, content: { 'application/json': { anyOf: GBFS_FILES[version].map((f) => ({ title: `${f.file}.json`, ...FEED_REF[f.schema] })) } } },
});

const INSURANCE_ACCESS = { family: 'insurance', endpoint: 'trips' } as const;

export const FEED_ENDPOINTS: readonly FeedEndpoint[] = [
  tokenEndpoint('feedToken', '/v1/partner-apis/token', 'main host'),
  oauthMetadataEndpoint('feedOAuthMetadata', 'main', '/v1/partner-apis/token'),
  jwksEndpoint('feedJwks'),
  {
    operationId: 'mdsTrips',
    method: 'get',
    path: `${BASE}/trips`,
    summary: 'Trips of one UTC hour',
    description:
      'Trips that ended in the hour. A future hour, or one before the zone existed, is 404; a published hour without trips is 200 with an empty array.',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: { end_time: timeHour('the hour the trips ended in') },
    responses: mdsOk('the trips of the hour', FEED_REF.MdsTrips),
    errors: [{ 400: ['missing or malformed end_time, malformed zone id'], 404: ['unknown zone, future hour, or hour before the zone existed'] }],
    ...mdsHourFile({ feed: 'mds_trips', param: 'end_time', endpoint: 'trips' }),
  },
  {
    operationId: 'mdsVehiclesStatus',
    method: 'get',
    path: `${BASE}/vehicles/status`,
    summary: 'Status of all vehicles of the zone',
    description: 'The most recent event and telemetry of each vehicle.',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: ONE_PAGE_PARAMS,
    responses: mdsOk('the vehicle status records', FEED_REF.MdsVehiclesStatus),
    errors: [{ 400: ['malformed zone id, malformed page[size], page[number] other than 1'], 404: ['unknown zone'] }],
    feed: { accept: [MDS] },
    handle: (deps, ctx) => mdsVehicleStatus(deps, ctx, false),
  },
  {
    operationId: 'mdsVehicleStatus',
    method: 'get',
    path: `${BASE}/vehicles/status/{deviceID}`,
    summary: 'Status of one vehicle',
    description: 'The most recent event and telemetry of one vehicle of the zone, as an array of one (without `links`).',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM, ...DEVICE },
    responses: mdsOk('the status (an array of one)', FEED_REF.MdsVehiclesStatus),
    errors: [{ 400: ['malformed zone id or device id'], 404: ['unknown zone or device, or no status yet'] }],
    feed: { accept: [MDS] },
    handle: (deps, ctx) => mdsVehicleStatus(deps, ctx, true),
  },
  {
    operationId: 'mdsVehicles',
    method: 'get',
    path: `${BASE}/vehicles`,
    summary: 'All vehicles of the zone',
    description: 'Every vehicle of the zone with its properties: device and provider id, printed code, type, propulsion, maximum speed.',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: ONE_PAGE_PARAMS,
    responses: mdsOk('the vehicles', FEED_REF.MdsVehicles),
    errors: [{ 400: ['malformed zone id, malformed page[size], page[number] other than 1'], 404: ['unknown zone'] }],
    feed: { accept: [MDS] },
    handle: (deps, ctx) => mdsVehicles(deps, ctx, false),
  },
  {
    operationId: 'mdsVehicle',
    method: 'get',
    path: `${BASE}/vehicles/{deviceID}`,
    summary: 'One vehicle',
    description: 'One vehicle of the zone, as an array of one (without `links`).',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM, ...DEVICE },
    responses: mdsOk('the vehicle (an array of one)', FEED_REF.MdsVehicles),
    errors: [{ 400: ['malformed zone id or device id'], 404: ['unknown zone or device'] }],
    feed: { accept: [MDS] },
    handle: (deps, ctx) => mdsVehicles(deps, ctx, true),
  },
  {
    operationId: 'mdsEventsRecent',
    method: 'get',
    path: `${BASE}/events/recent`,
    summary: 'Recent events (at most two weeks back)',
    description: `${PAGING}The page links are \`links.first\`, \`links.prev\`, \`links.next\`, \`links.last\` (\`limit\`/\`cursor\`: \`links.next\` only).`,
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: { start_time: ms('start of the window (inclusive)'), end_time: ms('end of the window (exclusive)'), ...PAGE_PARAMS },
    responses: mdsOk('one page of the events of the window', FEED_REF.MdsEventsRecent),
    errors: [
      {
        400: [
          'missing or malformed start_time/end_time, start not before end, window longer than two weeks or starting more than two weeks back, limit or page[size] out of range or different, page[number] not a whole number from 1, cursor with page[number] or page[as_of], another page[…] parameter, a cursor or page[as_of] that was changed or belongs to another zone or window (a cursor: or limit)',
        ],
        404: ['unknown zone'],
      },
    ],
    feed: { accept: [MDS] },
    handle: mdsEventsRecent,
  },
  {
    operationId: 'mdsEventsHistorical',
    method: 'get',
    path: `${BASE}/events/historical`,
    summary: 'Events of one UTC hour',
    description:
      'The vehicle events whose timestamp falls in the hour, precomputed like trips. A future hour, or one before the zone existed, is 404; a published hour without events is 200 with an empty array.',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: { event_time: timeHour('the hour of the events') },
    responses: mdsOk('the events of the hour', FEED_REF.MdsEvents),
    errors: [{ 400: ['missing or malformed event_time, malformed zone id'], 404: ['unknown zone, future hour, or hour before the zone existed'] }],
    ...mdsHourFile({ feed: 'mds_events', param: 'event_time', endpoint: 'events' }),
  },
  {
    operationId: 'mdsPublications',
    method: 'get',
    path: `${BASE}/publications`,
    summary: 'Publication index of a range of hours (city role)',
    description:
      'For every hour of [from, to] (at most 31 days, hours after the current one left out) and every hourly file the caller may read: `state` ' +
      '(published; republishing: a version is served while late data is being added; pending: nothing served yet), `record_count`, the `sha256` ' +
      'of the file’s content, its first and last write (`first_publication_time`, `last_publication_time`, ms) and `republish_count` (writes after ' +
      'the first). Fetch an hour again only when its sha256 changed. The same figures as `make publish-status`.',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: { from: timeHour('first hour of the range'), to: timeHour('last hour of the range') },
    responses: mdsOk('the files of the range', FEED_REF.MdsPublications),
    errors: [{ 400: ['missing or malformed from/to, to before from, more than 31 days, malformed zone id'], 404: ['unknown zone'] }],
    feed: { accept: [MDS] },
    handle: publicationsIndex,
  },
  {
    operationId: 'mdsReport',
    method: 'get',
    path: `${BASE}/reports/{file}`,
    summary: 'Monthly report of a UTC month, CSV (city role)',
    description:
      'MDS 2.0 reports: written by the publisher after the month closes (and again when late trips change it). Header ' +
      '`provider_id,start_date,duration,special_group_type,geography_id,vehicle_type,trip_count,rider_count`; one row per geography (the zone, ' +
      'with a stable UUID derived from its id, and each of its areas, by the area id) and vehicle type; `all_riders` counts of the rider and ' +
      'MaaS trips that started in the month (in the area: started inside it); riders are distinct users. Privacy: a count from 1 to 10 is `-1`.',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: {
      zoneID: ZONE_PARAM,
      file: {
        description: 'the month: YYYY-MM.csv',
        schema: { type: 'string', maxLength: 11, pattern: '^[0-9]{4}-(0[1-9]|1[0-2])\\.csv$' },
        example: '2026-10.csv',
      },
    },
    responses: { 200: { description: 'the report', content: { 'text/csv': { type: 'string' } } } },
    errors: [{ 400: ['a file name other than YYYY-MM.csv, malformed zone id'], 404: ['unknown zone, or a month not reported (yet)'] }],
    feed: { file: true },
    handle: monthlyReport,
  },
  {
    operationId: 'mdsTelemetry',
    method: 'get',
    path: `${BASE}/telemetry`,
    summary: 'Telemetry of one UTC hour (city role)',
    description:
      'Every telemetry point of the zone’s vehicles whose timestamp falls in the hour, precomputed like trips. Privacy: the points of a trip are ' +
      'published only after the trip ended (plus MDS_TELEMETRY_TRIP_DELAY_MINUTES, default 0); the hour file is republished when they become ' +
      'publishable. `trip_ids` links in-trip points to their trip; `journey_id` is null (no journeys in micromobility).',
    tag: 'MDS 2.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: { telemetry_time: timeHour('the hour of the telemetry') },
    responses: mdsOk('the telemetry of the hour', FEED_REF.MdsTelemetryFile),
    errors: [{ 400: ['missing or malformed telemetry_time, malformed zone id'], 404: ['unknown zone, future hour, or hour before the zone existed'] }],
    ...mdsHourFile({ feed: 'mds_telemetry', param: 'telemetry_time', endpoint: 'telemetry' }),
  },
  {
    operationId: 'mdsIncidents',
    method: 'get',
    path: `${BASE}/incidents`,
    summary: 'Incidents (MDS 2.1, city role)',
    description:
      'MDS 2.1 incidents of the zone’s vehicles: crashes and unplanned stops reported through TOMP support tickets (ACCIDENT → `crash`, BROKEN_DOWN → ' +
      '`unplanned_stop`) and incidents raised by operator staff. An incident has no time or place of its own (MDS 2.1): they are those of the ' +
      'telemetry point whose `incident_ids` names it (`/telemetry`, `/vehicles/status` `last_telemetry`). The one MDS 2.1 endpoint of this host: ' +
      '`Accept: application/vnd.mds+json;version=2.1` (an absent Accept or `*/*` means 2.1 here; `version=2.0` is 406). Every filter is optional; ' +
      'windows are [start, end). An update (a ticket resolved) moves `last_updated`: poll the last-updated window to follow them. ' +
      `Paged as the recent events: \`limit\`/\`cursor\` (follow \`links.next\` unchanged until it is null), or \`page[size]\`/\`page[number]\` ` +
      '(JSON:API, as MDS 2.1 recommends: first, prev, next and last links with a `page[as_of]` pin), in (publication_time, incident_id) order: ' +
      'every incident that matched when the first page was asked for comes exactly once.',
    tag: 'MDS 2.1',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM },
    query: {
      incident_id: { description: 'only this incident', schema: { type: 'string', format: 'uuid', maxLength: 36 } },
      incident_type: { description: 'only incidents of this type', schema: { type: 'string', enum: [...INCIDENT_TYPES_21] } },
      publication_start_time: optionalMs('incidents with publication_start_time <= publication_time'),
      publication_end_time: optionalMs('incidents with publication_time < publication_end_time'),
      last_updated_start: optionalMs('incidents with last_updated_start <= last_updated'),
      last_updated_end: optionalMs('incidents with last_updated < last_updated_end'),
      ...PAGE_PARAMS,
    },
    responses: { 200: { description: 'one page of the incidents', content: { [MDS_2_1.contentType]: FEED_REF.MdsIncidents } } },
    errors: [
      {
        400: [
          'malformed incident_id, an incident_type outside the MDS 2.1 enum, malformed times, a window whose start is not before its end, limit out of range, a cursor that was changed or belongs to another zone, filter or limit, malformed zone id',
        ],
        404: ['unknown zone'],
      },
    ],
    feed: { accept: [MDS_2_1.contentType] },
    handle: mdsIncidents,
  },
  {
    operationId: 'gbfsV3Manifest',
    method: 'get',
    path: '/v1/partner-apis/gbfs/manifest.json',
    summary: 'GBFS 3.0 manifest.json',
    description:
      'The datasets the caller may read: one per zone of its client (3.0 discovery URL) and its 2.2 system; `system_information.manifest_url` of every zone points here.',
    tag: 'GBFS 3.0',
    auth: 'feedToken',
    responses: { 200: { description: 'the manifest (version 3.0)', content: { 'application/json': FEED_REF.GbfsV3Manifest } } },
    errors: [{ 400: ['none expected'], 404: ['none expected'] }],
    feed: { file: true },
    handle: gbfsManifest,
  },
  {
    operationId: 'gbfsV3File',
    method: 'get',
    path: '/v1/partner-apis/gbfs/{zoneID}/{file}.json',
    summary: 'GBFS 3.0',
    description: 'gbfs.json lists only the feeds the caller’s role may read.',
    tag: 'GBFS 3.0',
    auth: 'feedToken',
    params: { zoneID: ZONE_PARAM, file: gbfsFiles('3.0') },
    responses: gbfsOk('the file (version 3.0)', '3.0'),
    errors: [{ 400: ['malformed zone id'], 404: ['unknown zone or file'] }],
    feed: { file: true, perFile: GBFS_FILES['3.0'] },
    handle: gbfsV3File,
  },
  {
    operationId: 'gbfsV2FileInLanguage',
    method: 'get',
    path: '/gbfs/v2/{language}/{file}.json',
    summary: 'GBFS 2.2 file in one language of the system',
    description:
      'A system whose zones speak several languages (Berlin de, Copenhagen da) is published once per language: its gbfs.json is keyed by language and lists these URLs, whose texts (price descriptions, alerts) are in that language. `/gbfs/v2/{file}.json` is the first zone’s language.',
    tag: 'GBFS 2.2',
    auth: 'eitherToken',
    params: {
      language: {
        description: 'a language of the system, as its gbfs.json keys it',
        schema: { type: 'string', maxLength: 6, pattern: '^[a-z]{2,3}(-[A-Z]{2})?$' },
      },
      file: gbfsFiles('2.2'),
    },
    responses: gbfsOk('the file (version 2.2) in that language', '2.2'),
    errors: [{ 400: ['none expected'], 404: ['unknown file, or a language the caller’s system does not have'] }],
    feed: { file: true },
    handle: gbfsV2FileInLanguage,
  },
  {
    operationId: 'gbfsV2File',
    method: 'get',
    path: '/gbfs/v2/{file}.json',
    summary: 'GBFS 2.2',
    description: 'Scoped to the regions of the caller’s role. Tokens come from the legacy host’s /token (tokens of the main host work too).',
    tag: 'GBFS 2.2',
    auth: 'eitherToken',
    params: { file: gbfsFiles('2.2') },
    responses: gbfsOk('the file (version 2.2)', '2.2'),
    errors: [{ 400: ['none expected'], 404: ['unknown file'] }],
    feed: { file: true, perFile: GBFS_FILES['2.2'] },
    handle: gbfsV2File,
  },
  {
    operationId: 'insuranceTrips',
    method: 'get',
    path: '/v1/partner-apis/insurance/{zoneID}/trips',
    summary: 'Insurance trips of one UTC hour',
    description:
      'The MDS 2.0 trip extended with the insurance fields. Credential: `X-Access-Token` (current: an insurer’s API key, or an API key of an insurer-role feed client) or a Bearer token of an insurer feed client (deprecated).',
    tag: 'Insurance',
    auth: 'insurer',
    params: { zoneID: ZONE_PARAM },
    query: { end_time: timeHour('the hour the trips ended in') },
    responses: { 200: { description: 'the insurance trips of the hour', content: { [INSURANCE_2_0.contentType]: FEED_REF.InsuranceTrips } } },
    errors: [{ 400: ['missing or malformed end_time, malformed zone id'], 404: ['unknown zone, future hour, or hour before the zone existed'] }],
    feed: { file: true, notPublished202: true, accept: [INSURANCE_2_0.contentType] },
    hourFile: {
      feed: 'insurance_trips',
      param: 'end_time',
      offers: [INSURANCE_2_0],
      fallback: INSURANCE_2_0,
      access: () => INSURANCE_ACCESS,
    },
    handle: insuranceTrips,
  },
];
