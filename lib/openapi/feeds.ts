/**
 * OpenAPI 3.1 document of the data feeds (data-feeds.md; code in api/feeds/ and api/legacy/): the
 * token endpoints, MDS 2.0, GBFS 3.0 and 2.2, insurance trips on the main host, and the legacy MDS
 * 1.2 / 0.4 host (its paths carry their own `servers`).
 */
import type { OpenApiDocument, Operation, PathItem } from './common.js';
import { pathParam, schemaRef } from './common.js';
import { FEED_SCHEMAS, GBFS_FILES } from './records-feeds.js';
import { FEED_TOKEN, INSURANCE_20, LEGACY_TOKEN, MDS_04, MDS_12, MDS_20, PAGING, SHARED_RESPONSES, deviceParam, feedOp, ms, ok, pageParams, timeHour, tokenOp, zoneParam, type FeedOp } from './feeds-ops.js';

function mdsPaths(): Record<string, PathItem> {
  const base = '/v1/partner-apis/mds/{zoneID}';
  const mds = (o: Omit<FeedOp, 'tag' | 'security' | 'accept' | 'ok'> & { schema: string; okDescription: string }): Operation =>
    feedOp({ ...o, tag: 'MDS 2.0', security: FEED_TOKEN, accept: [MDS_20], ok: ok(o.okDescription, { [MDS_20]: schemaRef(o.schema) }, o.file), parameters: [zoneParam, ...(o.parameters ?? [])] });
  return {
    [`${base}/trips`]: {
      get: mds({
        operationId: 'mdsTrips',
        summary: 'Trips of one UTC hour',
        description: 'Trips that ended in the hour. A future hour, or one before the zone existed, is 404; a published hour without trips is 200 with an empty array.',
        parameters: [timeHour('end_time', 'the hour the trips ended in')],
        schema: 'MdsTrips',
        okDescription: 'the trips of the hour',
        file: true,
        notPublished202: true,
        badParams: 'missing or malformed end_time, malformed zone id',
        notFound: 'unknown zone, future hour, or hour before the zone existed',
      }),
    },
    [`${base}/vehicles`]: {
      get: mds({ operationId: 'mdsVehicles', summary: 'All vehicles of the zone', schema: 'MdsVehicles', okDescription: 'the vehicles', file: false, badParams: 'malformed zone id', notFound: 'unknown zone' }),
    },
    [`${base}/vehicles/{deviceID}`]: {
      get: mds({ operationId: 'mdsVehicle', summary: 'One vehicle', parameters: [deviceParam], schema: 'MdsVehicles', okDescription: 'the vehicle (an array of one)', file: false, badParams: 'malformed zone id or device id', notFound: 'unknown zone or device' }),
    },
    [`${base}/vehicles/status`]: {
      get: mds({ operationId: 'mdsVehiclesStatus', summary: 'Status of all vehicles of the zone', description: 'The most recent event and telemetry of each vehicle.', schema: 'MdsVehiclesStatus', okDescription: 'the vehicle status records', file: false, badParams: 'malformed zone id', notFound: 'unknown zone' }),
    },
    [`${base}/vehicles/status/{deviceID}`]: {
      get: mds({ operationId: 'mdsVehicleStatus', summary: 'Status of one vehicle', parameters: [deviceParam], schema: 'MdsVehiclesStatus', okDescription: 'the status (an array of one)', file: false, badParams: 'malformed zone id or device id', notFound: 'unknown zone or device, or no status yet' }),
    },
    [`${base}/events/recent`]: {
      get: mds({
        operationId: 'mdsEventsRecent',
        summary: 'Recent events (at most two weeks back)',
        description: `${PAGING}The next page is \`links.next\`.`,
        parameters: [ms('start_time', 'start of the window (inclusive)'), ms('end_time', 'end of the window (exclusive)'), ...pageParams],
        schema: 'MdsEventsRecent',
        okDescription: 'one page of the events of the window',
        file: false,
        badParams: 'missing or malformed start_time/end_time, start not before end, window longer than two weeks or starting more than two weeks back, limit out of range, a cursor that was changed or belongs to another zone, window or limit',
        notFound: 'unknown zone',
      }),
    },
    [`${base}/events/historical`]: {
      get: mds({
        operationId: 'mdsEventsHistorical',
        summary: 'Events of one UTC hour',
        parameters: [timeHour('event_time', 'the hour of the events')],
        schema: 'MdsEvents',
        okDescription: 'the events of the hour',
        file: true,
        notPublished202: true,
        badParams: 'missing or malformed event_time, malformed zone id',
        notFound: 'unknown zone, future hour, or hour before the zone existed',
      }),
    },
    [`${base}/publications`]: {
      get: mds({
        operationId: 'mdsPublications',
        summary: 'Publication index of a range of hours (city role)',
        description:
          'For every hour of [from, to] (at most 31 days, hours after the current one left out) and every hourly file the caller may read: `state` ' +
          '(published; republishing: a version is served while late data is being added; pending: nothing served yet), `record_count`, the `sha256` ' +
          'of the file’s content, its first and last write (`first_publication_time`, `last_publication_time`, ms) and `republish_count` (writes after ' +
          'the first). Fetch an hour again only when its sha256 changed. The same figures as `make publish-status`.',
        parameters: [timeHour('from', 'first hour of the range'), timeHour('to', 'last hour of the range')],
        schema: 'MdsPublications',
        okDescription: 'the files of the range',
        file: false,
        badParams: 'missing or malformed from/to, to before from, more than 31 days, malformed zone id',
        notFound: 'unknown zone',
      }),
    },
    [`${base}/reports/{file}`]: {
      get: feedOp({
        operationId: 'mdsReport',
        summary: 'Monthly report of a UTC month, CSV (city role)',
        description:
          'MDS 2.0 reports: written by the publisher after the month closes (and again when late trips change it). Header ' +
          '`provider_id,start_date,duration,special_group_type,geography_id,vehicle_type,trip_count,rider_count`; one row per geography (the zone, ' +
          'with a stable UUID derived from its id, and each of its areas, by the area id) and vehicle type; `all_riders` counts of the rider and ' +
          'MaaS trips that started in the month (in the area: started inside it); riders are distinct users. Privacy: a count from 1 to 10 is `-1`.',
        tag: 'MDS 2.0',
        parameters: [zoneParam, pathParam('file', 'the month: YYYY-MM.csv', { type: 'string', pattern: '^[0-9]{4}-(0[1-9]|1[0-2])\\.csv$' }, '2026-10.csv')],
        ok: ok('the report', { 'text/csv': { type: 'string' } }, true),
        file: true,
        badParams: 'a file name other than YYYY-MM.csv, malformed zone id',
        notFound: 'unknown zone, or a month not reported (yet)',
        security: FEED_TOKEN,
      }),
    },
    [`${base}/telemetry`]: {
      get: mds({
        operationId: 'mdsTelemetry',
        summary: 'Telemetry of one UTC hour (city role)',
        description:
          'Every telemetry point of the zone’s vehicles whose timestamp falls in the hour, precomputed like trips. Privacy: the points of a trip are ' +
          'published only after the trip ended (plus MDS_TELEMETRY_TRIP_DELAY_MINUTES, default 0); the hour file is republished when they become ' +
          'publishable. `trip_ids` links in-trip points to their trip; `journey_id` is null (no journeys in micromobility).',
        parameters: [timeHour('telemetry_time', 'the hour of the telemetry')],
        schema: 'MdsTelemetryFile',
        okDescription: 'the telemetry of the hour',
        file: true,
        notPublished202: true,
        badParams: 'missing or malformed telemetry_time, malformed zone id',
        notFound: 'unknown zone, future hour, or hour before the zone existed',
      }),
    },
  };
}

function gbfsPaths(): Record<string, PathItem> {
  const out: Record<string, PathItem> = {};
  for (const { file, schema } of GBFS_FILES['3.0']) {
    out[`/v1/partner-apis/gbfs/{zoneID}/${file}.json`] = {
      get: feedOp({
        operationId: `gbfsV3${schema.slice('GbfsV3'.length)}`,
        summary: `GBFS 3.0 ${file}.json`,
        ...(file === 'gbfs' ? { description: 'Lists only the feeds the caller’s role may read.' } : {}),
        tag: 'GBFS 3.0',
        parameters: [zoneParam],
        ok: ok(`the ${file} file (version 3.0)`, { 'application/json': schemaRef(schema) }, true),
        file: true,
        badParams: 'malformed zone id',
        notFound: 'unknown zone or file',
        security: FEED_TOKEN,
      }),
    };
  }
  out['/v1/partner-apis/gbfs/manifest.json'] = {
    get: feedOp({
      operationId: 'gbfsV3Manifest',
      summary: 'GBFS 3.0 manifest.json',
      description: 'The datasets the caller may read: one per zone of its client (3.0 discovery URL) and its 2.2 system; `system_information.manifest_url` of every zone points here.',
      tag: 'GBFS 3.0',
      ok: ok('the manifest (version 3.0)', { 'application/json': schemaRef('GbfsV3Manifest') }, true),
      file: true,
      badParams: 'none expected',
      notFound: 'none expected',
      security: FEED_TOKEN,
    }),
  };
  out['/gbfs/v2/{language}/{file}.json'] = {
    get: feedOp({
      operationId: 'gbfsV2FileInLanguage',
      summary: 'GBFS 2.2 file in one language of the system',
      description: 'A system whose zones speak several languages (Berlin de, Copenhagen da) is published once per language: its gbfs.json is keyed by language and lists these URLs, whose texts (price descriptions, alerts) are in that language. `/gbfs/v2/{file}.json` is the first zone’s language.',
      tag: 'GBFS 2.2',
      parameters: [
        { name: 'language', in: 'path', required: true, description: 'a language of the system, as its gbfs.json keys it', schema: { type: 'string', pattern: '^[a-z]{2,3}(-[A-Z]{2})?$' } },
        { name: 'file', in: 'path', required: true, description: 'a 2.2 file name', schema: { type: 'string', enum: GBFS_FILES['2.2'].map((f) => f.file) } },
      ],
      ok: ok('the file (version 2.2) in that language', { 'application/json': { oneOf: GBFS_FILES['2.2'].map((f) => schemaRef(f.schema)) } }, true),
      file: true,
      badParams: 'none expected',
      notFound: 'unknown file, or a language the caller’s system does not have',
      security: [...LEGACY_TOKEN, ...FEED_TOKEN],
    }),
  };
  for (const { file, schema } of GBFS_FILES['2.2']) {
    out[`/gbfs/v2/${file}.json`] = {
      get: feedOp({
        operationId: `gbfsV2${schema.slice('GbfsV2'.length)}`,
        summary: `GBFS 2.2 ${file}.json`,
        description: 'Scoped to the regions of the caller’s role. Tokens come from the legacy host’s /token (tokens of the main host work too).',
        tag: 'GBFS 2.2',
        ok: ok(`the ${file} file (version 2.2)`, { 'application/json': schemaRef(schema) }, true),
        file: true,
        badParams: 'none expected',
        notFound: 'unknown file',
        security: [...LEGACY_TOKEN, ...FEED_TOKEN],
      }),
    };
  }
  return out;
}

function legacyPaths(legacyServer: { url: string; description: string }): Record<string, PathItem> {
  const legacy = (o: Omit<FeedOp, 'tag' | 'security' | 'accept' | 'ok'> & { schema: string; okDescription: string }): Operation =>
    feedOp({
      ...o,
      description: `${o.description ?? ''} Accept must name version 1.2 (\`${MDS_12}\`) or 0.4 (\`${MDS_04}\`); anything else is 406.`.trim(),
      tag: 'Legacy MDS 1.2 / 0.4',
      security: LEGACY_TOKEN,
      accept: [MDS_12, MDS_04],
      ok: ok(o.okDescription, { [MDS_12]: schemaRef(o.schema), [MDS_04]: schemaRef(o.schema) }, o.file),
      parameters: [zoneParam, ...(o.parameters ?? [])],
    });
  const servers = [legacyServer];
  return {
    '/token': { servers, post: tokenOp('legacyToken', 'legacy host') },
    '/en/{zoneID}/trips': {
      servers,
      get: legacy({
        operationId: 'legacyTrips',
        summary: 'Trips of one UTC hour (1.2 / 0.4)',
        parameters: [timeHour('end_time', 'the hour the trips ended in')],
        schema: 'LegacyTrips',
        okDescription: 'the trips of the hour',
        file: true,
        badParams: 'missing or malformed end_time, malformed zone id',
        notFound: 'unknown zone, future hour, hour before the zone existed, or hour not published yet (`not_published`, with Retry-After)',
      }),
    },
    '/en/{zoneID}/status_changes': {
      servers,
      get: legacy({
        operationId: 'legacyStatusChanges',
        summary: 'Status changes of one UTC hour (1.2 / 0.4)',
        parameters: [timeHour('event_time', 'the hour of the status changes')],
        schema: 'LegacyStatusChanges',
        okDescription: 'the status changes of the hour',
        file: true,
        badParams: 'missing or malformed event_time, malformed zone id',
        notFound: 'unknown zone, future hour, hour before the zone existed, or hour not published yet (`not_published`, with Retry-After)',
      }),
    },
    '/en/{zoneID}/events': {
      servers,
      post: legacy({
        operationId: 'legacyEvents',
        summary: 'Recent status changes (1.2 / 0.4), at most two weeks back',
        description: `POST without a body, as the requirement specifies. ${PAGING}The next page (POST it too) is in the \`Link: <url>; rel="next"\` header: the 1.2.0 and 0.4.1 schemas allow no top-level links.`,
        parameters: [ms('start_time', 'start of the window (inclusive)'), ms('end_time', 'end of the window (exclusive)'), ...pageParams],
        schema: 'LegacyStatusChanges',
        okDescription: 'one page of the status changes of the window',
        file: false,
        badParams: 'missing or malformed start_time/end_time, window longer than two weeks or starting more than two weeks back, limit out of range, a changed or foreign cursor',
        notFound: 'unknown zone',
      }),
    },
    '/en/{zoneID}/vehicles': {
      servers,
      get: legacy({
        operationId: 'legacyVehicles',
        summary: 'Vehicles on the public right of way (1.2 / 0.4)',
        description: 'Only vehicles in the legacy categories available, reserved or unavailable.',
        schema: 'LegacyVehicles',
        okDescription: 'the vehicles',
        file: false,
        badParams: 'malformed zone id',
        notFound: 'unknown zone',
      }),
    },
  };
}

export function feedsDocument(opts: { publicBaseUrl: string; publicLegacyUrl: string }): OpenApiDocument {
  const legacyServer = { url: opts.publicLegacyUrl, description: 'legacy MDS host' };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Data feeds: MDS, GBFS, insurance',
      version: '2.0.0',
      description: [
        'Read-only feeds for cities, data consumers and insurers: MDS 2.0 (and the legacy 1.2 / 0.4 host), GBFS 3.0 and 2.2, insurance trips.',
        '',
        `Get an access token with the OAuth 2.0 client credentials grant: \`POST ${opts.publicBaseUrl}/v1/partner-apis/token\` (MDS 2.0, GBFS 3.0, insurance) or \`POST ${opts.publicLegacyUrl}/token\` (legacy MDS, GBFS 2.2), then send \`Authorization: Bearer <token>\`. Insurers use an API key in \`X-Access-Token\` (the OAuth method is deprecated but still works).`,
        '',
        `Versions are negotiated with Accept: \`${MDS_20}\` (an absent Accept or \`*/*\` means 2.0), \`${INSURANCE_20}\`; the legacy host needs \`${MDS_12}\` or \`${MDS_04}\`.`,
        '',
        'Hourly files (trips, historical events, status changes, insurance trips) carry ETag and Last-Modified and answer conditional requests with 304; they are served gzip to clients that accept it. Every error is `{error, error_description, error_details}`.',
      ].join('\n'),
    },
    servers: [{ url: opts.publicBaseUrl, description: 'main host' }],
    tags: [
      { name: 'Authentication' },
      { name: 'MDS 2.0', description: 'base /v1/partner-apis/mds/{zoneID}' },
      { name: 'GBFS 3.0', description: 'base /v1/partner-apis/gbfs/{zoneID}' },
      { name: 'GBFS 2.2', description: 'base /gbfs/v2' },
      { name: 'Insurance', description: 'base /v1/partner-apis/insurance/{zoneID}' },
      { name: 'Legacy MDS 1.2 / 0.4', description: `on the legacy host ${opts.publicLegacyUrl}, base /en/{zoneID}` },
    ],
    paths: {
      '/v1/partner-apis/token': { post: tokenOp('feedToken', 'main host') },
      ...mdsPaths(),
      ...gbfsPaths(),
      '/v1/partner-apis/insurance/{zoneID}/trips': {
        get: feedOp({
          operationId: 'insuranceTrips',
          summary: 'Insurance trips of one UTC hour',
          description: 'The MDS 2.0 trip extended with the insurance fields. Credential: `X-Access-Token` (current) or a Bearer token of an insurer feed client (deprecated).',
          tag: 'Insurance',
          parameters: [zoneParam, timeHour('end_time', 'the hour the trips ended in')],
          ok: ok('the insurance trips of the hour', { [INSURANCE_20]: schemaRef('InsuranceTrips') }, true),
          file: true,
          notPublished202: true,
          badParams: 'missing or malformed end_time, malformed zone id',
          notFound: 'unknown zone, future hour, or hour before the zone existed',
          accept: [INSURANCE_20],
          security: [{ InsurerKey: [] }, ...FEED_TOKEN],
        }),
      },
      ...legacyPaths(legacyServer),
    },
    components: {
      schemas: FEED_SCHEMAS,
      responses: SHARED_RESPONSES,
      securitySchemes: {
        FeedOAuth: {
          type: 'oauth2',
          description: 'client credentials of the main host (MDS 2.0, GBFS 3.0, insurance); tokens live 900 s',
          flows: { clientCredentials: { tokenUrl: `${opts.publicBaseUrl}/v1/partner-apis/token`, scopes: {} } },
        },
        LegacyOAuth: {
          type: 'oauth2',
          description: 'client credentials of the legacy host (legacy MDS, GBFS 2.2); tokens live 900 s',
          flows: { clientCredentials: { tokenUrl: `${opts.publicLegacyUrl}/token`, scopes: {} } },
        },
        ClientBasic: { type: 'http', scheme: 'basic', description: 'client id and secret, for the token endpoints' },
        InsurerKey: { type: 'apiKey', in: 'header', name: 'X-Access-Token', description: 'the insurer’s API key' },
      },
    },
    security: FEED_TOKEN,
  };
}
