/**
 * The legacy MDS host's table (LEGACY_PORT): POST /token and the 1.2 / 0.4 provider feeds under
 * /en/{zoneID}. The version comes from Accept, which must name 1.2 or 0.4 (else 406 listing both);
 * only city clients read these feeds. Hours not published yet answer 404 with a body that says so.
 * Mounted by ./router.ts, described by api/openapi/feeds.ts (the legacy host's document), and its hourly
 * files are the legacy hot path's routes.
 */
import type { FeedAccess } from '../../lib/feeds/roles.js';
import type { Schema } from '../openapi/common.js';
import { FEED_REF } from '../openapi/records-feeds.js';
import { MDS_0_4, MDS_1_2 } from '../feeds/accept.js';
import { timeHour, tokenEndpoint, ZONE_PARAM, type FeedEndpoint } from '../feeds/endpoint.js';
import { ONE_PAGE_PARAMS, PAGE_PARAMS, PAGING } from '../feeds/endpoints.js';
import { notYetPublished404, serveHourFile } from '../feeds/files.js';
import { legacyGate } from '../feeds/gates.js';
import { single, timeHourParam } from '../feeds/params.js';
import { oauthMetadataEndpoint } from '../feeds/discovery.js';
import { jwksEndpoint } from '../feeds/jwks.js';
import { legacyEvents, legacyVehicles } from './realtime.js';

const TYPES = [MDS_1_2.contentType, MDS_0_4.contentType];
const ACCEPT = ` Accept must name version 1.2 (\`${MDS_1_2.contentType}\`) or 0.4 (\`${MDS_0_4.contentType}\`); anything else is 406.`;
const ok = (description: string, record: Schema) => ({ 200: { description, content: Object.fromEntries(TYPES.map((t) => [t, record])) } });

/** Precomputed authorization questions per version of the hot path. */
function legacyAccess(endpoint: 'trips' | 'status_changes'): (version: string) => FeedAccess {
  const byVersion = new Map<string, FeedAccess>((['1.2', '0.4'] as const).map((version) => [version, { family: 'mds', version, endpoint }]));
  return (version) => byVersion.get(version)!;
}

/** A 1.2 / 0.4 hour file: the version from Accept, 404 `not_published` while not published. */
function legacyHourFile(feed: 'mds_trips' | 'mds_status_changes', param: string, endpoint: 'trips' | 'status_changes') {
  return {
    hourFile: { feed, param, offers: [MDS_1_2, MDS_0_4], fallback: undefined, access: legacyAccess(endpoint) },
    feed: { file: true, accept: TYPES },
    handle: async (deps: Parameters<FeedEndpoint['handle']>[0], ctx: Parameters<FeedEndpoint['handle']>[1]) => {
      const { zone, offer } = await legacyGate(deps, ctx, endpoint);
      const hour = timeHourParam(param, single(ctx.query, param));
      await serveHourFile(deps, ctx, { feed, version: offer.version, zone, hour, contentType: offer.contentType, notPublished: notYetPublished404 });
    },
  };
}

const notFoundHour = 'unknown zone, future hour, hour before the zone existed, or hour not published yet (`not_published`, with Retry-After)';

export const LEGACY_ENDPOINTS: readonly FeedEndpoint[] = [
  tokenEndpoint('legacyToken', '/token', 'legacy host'),
  oauthMetadataEndpoint('legacyOAuthMetadata', 'legacy', '/token'),
  jwksEndpoint('legacyJwks'),
  {
    operationId: 'legacyTrips',
    method: 'get',
    path: '/en/{zoneID}/trips',
    summary: 'Trips of one UTC hour (1.2 / 0.4)',
    description: ACCEPT.trim(),
    tag: 'Legacy MDS 1.2 / 0.4',
    auth: 'legacyToken',
    params: { zoneID: ZONE_PARAM },
    query: { end_time: timeHour('the hour the trips ended in') },
    responses: ok('the trips of the hour', FEED_REF.LegacyTrips),
    errors: [{ 400: ['missing or malformed end_time, malformed zone id'], 404: [notFoundHour] }],
    ...legacyHourFile('mds_trips', 'end_time', 'trips'),
  },
  {
    operationId: 'legacyStatusChanges',
    method: 'get',
    path: '/en/{zoneID}/status_changes',
    summary: 'Status changes of one UTC hour (1.2 / 0.4)',
    description: ACCEPT.trim(),
    tag: 'Legacy MDS 1.2 / 0.4',
    auth: 'legacyToken',
    params: { zoneID: ZONE_PARAM },
    query: { event_time: timeHour('the hour of the status changes') },
    responses: ok('the status changes of the hour', FEED_REF.LegacyStatusChanges),
    errors: [{ 400: ['missing or malformed event_time, malformed zone id'], 404: [notFoundHour] }],
    ...legacyHourFile('mds_status_changes', 'event_time', 'status_changes'),
  },
  {
    operationId: 'legacyEvents',
    method: 'post',
    path: '/en/{zoneID}/events',
    summary: 'Recent status changes (1.2 / 0.4), at most two weeks back',
    description: `POST without a body, as the requirement specifies. ${PAGING}The page links (POST them too) are in the \`Link\` header, \`<url>; rel="next"\` (and with \`page[number]\` \`rel="first"\`, \`"prev"\`, \`"last"\`): the 1.2.0 and 0.4.1 schemas allow no top-level links.${ACCEPT}`,
    tag: 'Legacy MDS 1.2 / 0.4',
    auth: 'legacyToken',
    params: { zoneID: ZONE_PARAM },
    query: {
      start_time: {
        description: 'start of the window (inclusive), integer milliseconds since the Unix epoch',
        schema: { type: 'string', maxLength: 15, pattern: '^[0-9]{1,15}$' },
        required: true,
      },
      end_time: {
        description: 'end of the window (exclusive), integer milliseconds since the Unix epoch',
        schema: { type: 'string', maxLength: 15, pattern: '^[0-9]{1,15}$' },
        required: true,
      },
      ...PAGE_PARAMS,
    },
    responses: ok('one page of the status changes of the window', FEED_REF.LegacyStatusChanges),
    errors: [
      {
        400: [
          'missing or malformed start_time/end_time, window longer than two weeks or starting more than two weeks back, limit or page[size] out of range or different, page[number] not a whole number from 1, cursor with page[number] or page[as_of], another page[…] parameter, a changed or foreign cursor or page[as_of]',
        ],
        404: ['unknown zone'],
      },
    ],
    feed: { accept: TYPES },
    handle: legacyEvents,
  },
  {
    operationId: 'legacyVehicles',
    method: 'get',
    path: '/en/{zoneID}/vehicles',
    summary: 'Vehicles on the public right of way (1.2 / 0.4)',
    description: `Only vehicles in the legacy categories available, reserved or unavailable.${ACCEPT}`,
    tag: 'Legacy MDS 1.2 / 0.4',
    auth: 'legacyToken',
    params: { zoneID: ZONE_PARAM },
    query: ONE_PAGE_PARAMS,
    responses: ok('the vehicles', FEED_REF.LegacyVehicles),
    errors: [{ 400: ['malformed zone id, malformed page[size], page[number] other than 1'], 404: ['unknown zone'] }],
    feed: { accept: TYPES },
    handle: legacyVehicles,
  },
];
