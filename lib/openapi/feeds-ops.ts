/**
 * The building blocks of the feeds' OpenAPI document (lib/openapi/feeds.ts): media types, shared
 * parameters and responses, the operation shape of a feed endpoint (auth, caching, error rows) and
 * the token endpoints.
 */
import type { Header, Operation, Parameter, Ref, Response, Schema, SecurityRequirement } from './common.js';
import { header, json, pathParam, queryParam, ref, schemaRef } from './common.js';
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX } from '../feeds/paging-limits.js';

export const MDS_20 = 'application/vnd.mds+json;version=2.0';
export const MDS_12 = 'application/vnd.mds+json;version=1.2';
export const MDS_04 = 'application/vnd.mds.provider+json;version=0.4';
export const INSURANCE_20 = 'application/vnd.insurance+json;version=2.0';

export const RETRY_AFTER: Header = header('seconds to wait before retrying', { type: 'integer', minimum: 0 }, true);
export const CACHE_HEADERS: Record<string, Header> = {
  ETag: header('validator of the file; send it back in If-None-Match', { type: 'string' }, true),
  'Last-Modified': header('when the file was (re)published', { type: 'string' }, true),
  'Cache-Control': header('`private, max-age=60` for hour files (they can be republished), the ttl for GBFS files', { type: 'string' }, true),
};

export const error = (description: string, headers?: Record<string, Header>): Response => ({ description, ...(headers ? { headers } : {}), content: json(schemaRef('FeedError')) });

export const SHARED_RESPONSES: Record<string, Response> = {
  NotPublished: error('the hour is closed but not published yet (inside the publishing lateness, or being republished): retry later', { 'Retry-After': RETRY_AFTER }),
  NotModified: { description: 'not modified (If-None-Match / If-Modified-Since)' },
  Unauthorized: error('missing, invalid, expired or revoked access token', { 'WWW-Authenticate': header('`Bearer realm="feeds"` (with `error="invalid_token"` when a token was presented)', { type: 'string' }, true) }),
  Forbidden: error('valid token, but the feed or the zone is outside the client’s role', { 'WWW-Authenticate': header('`Bearer realm="feeds", error="insufficient_scope"`', { type: 'string' }, true) }),
  InternalError: error('unexpected error'),
  Unavailable: error('temporarily unavailable (database, or a GBFS file not published yet)', { 'Retry-After': RETRY_AFTER }),
};

export const E = {
  202: ref('responses', 'NotPublished'),
  304: ref('responses', 'NotModified'),
  400: (what: string) => error(`bad parameter: ${what}`),
  401: ref('responses', 'Unauthorized'),
  403: ref('responses', 'Forbidden'),
  404: (what: string) => error(`not found: ${what}`),
  406: (types: string[]) => error(`unsupported media type or version in Accept; the body lists the supported ones (${types.join(', ')})`),
  500: ref('responses', 'InternalError'),
  503: ref('responses', 'Unavailable'),
};

export const zoneParam = pathParam('zoneID', 'the zone id of the requested data', { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' }, 'madrid');
export const deviceParam = pathParam('deviceID', 'the MDS device_id (UUID)', { type: 'string', format: 'uuid' });
export const timeHour = (name: string, description: string) =>
  queryParam(name, `${description}: one UTC hour, YYYY-MM-DDTHH`, { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}$' }, true, '2026-11-21T09');
export const ms = (name: string, description: string) => queryParam(name, `${description}, integer milliseconds since the Unix epoch`, { type: 'string', pattern: '^[0-9]{1,15}$' }, true);
export const CONDITIONAL: Parameter[] = [
  { name: 'If-None-Match', in: 'header', description: 'ETag of a copy you hold: 304 when unchanged', schema: { type: 'string' } },
  { name: 'If-Modified-Since', in: 'header', description: 'HTTP date: 304 when not modified since', schema: { type: 'string' } },
];

export const pageParams = [
  queryParam('limit', `events per page, 1 to ${EVENTS_PAGE_MAX} (default ${EVENTS_PAGE_DEFAULT})`, { type: 'integer', minimum: 1, maximum: EVENTS_PAGE_MAX }, false),
  queryParam('cursor', 'from the previous page’s next link, unchanged (signed: it pins the zone, window, limit and the set of events of the first page)', { type: 'string' }, false),
];
export const PAGING =
  `Paged: at most \`limit\` events per page in (timestamp, event_id) order. Follow the next link unchanged until it is null: every event of the window ` +
  'that was recorded when the first page was asked for comes exactly once, however many arrive meanwhile (a new traversal sees those). ';

export const FEED_TOKEN: SecurityRequirement[] = [{ FeedOAuth: [] }];
export const LEGACY_TOKEN: SecurityRequirement[] = [{ LegacyOAuth: [] }];

export function ok(description: string, types: Record<string, Schema>, file: boolean): Response {
  return {
    description,
    ...(file ? { headers: CACHE_HEADERS } : {}),
    content: Object.fromEntries(Object.entries(types).map(([t, s]) => [t, { schema: s }])),
  };
}

export interface FeedOp {
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  parameters?: Parameter[];
  ok: Response;
  file: boolean;
  /** 202 (MDS 2.0 / insurance) or nothing (the legacy host answers 404) for hours not yet published */
  notPublished202?: boolean;
  badParams: string;
  notFound: string;
  accept?: string[];
  security: SecurityRequirement[];
  extra?: Record<string, Response | Ref>;
}

export function feedOp(o: FeedOp): Operation {
  return {
    operationId: o.operationId,
    summary: o.summary,
    ...(o.description ? { description: o.description } : {}),
    tags: [o.tag],
    parameters: [...(o.parameters ?? []), ...(o.file ? CONDITIONAL : [])],
    responses: {
      '200': o.ok,
      ...(o.notPublished202 ? { '202': E[202] } : {}),
      ...(o.file ? { '304': E[304] } : {}),
      '400': E[400](o.badParams),
      '401': E[401],
      '403': E[403],
      '404': E[404](o.notFound),
      ...(o.accept ? { '406': E[406](o.accept) } : {}),
      '500': E[500],
      '503': E[503],
      ...(o.extra ?? {}),
    },
    security: o.security,
  };
}

export function tokenOp(operationId: string, host: string): Operation {
  return {
    operationId,
    summary: `Access token (${host})`,
    description:
      'OAuth 2.0 client credentials grant (RFC 6749 §4.4): HTTP Basic with the client id and secret, form field `grant_type=client_credentials`. The token lives 900 seconds; send it as `Authorization: Bearer <token>`. Credentials in the form (client_id, client_secret) are accepted only without an Authorization header.',
    tags: ['Authentication'],
    requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: schemaRef('TokenForm'), example: { grant_type: 'client_credentials' } } } },
    responses: {
      '200': {
        description: 'the access token',
        headers: { 'Cache-Control': header('`no-store`', { type: 'string' }, true) },
        content: json(schemaRef('AccessToken'), { access_token: 'eyJhbGciOi…', expires_in: 900, token_type: 'bearer' }),
      },
      '400': { description: '`invalid_request` (not a form, missing grant_type, repeated parameter, both credential methods) or `unsupported_grant_type`', content: json(schemaRef('OAuthError')) },
      '401': {
        description: '`invalid_client`: unknown client, wrong secret, or no credentials',
        headers: { 'WWW-Authenticate': header('`Basic realm="feeds", charset="UTF-8"`', { type: 'string' }, true) },
        content: json(schemaRef('OAuthError'), { error: 'invalid_client', error_description: 'client authentication failed' }),
      },
      '429': {
        description: '`slow_down`: too many failed client authentications for this client id (default 5) or from this address (default 30) in the current minute; even the right secret is refused until Retry-After has passed',
        headers: { 'Retry-After': RETRY_AFTER, 'Cache-Control': header('`no-store`', { type: 'string' }, true) },
        content: json(schemaRef('OAuthError'), { error: 'slow_down', error_description: 'too many failed client authentications; retry later' }),
      },
      '500': E[500],
      '503': {
        description: '`temporarily_unavailable`: too many client authentications are being checked at once; retry after Retry-After. Also a database outage (feed error body)',
        headers: { 'Retry-After': RETRY_AFTER },
        content: json(schemaRef('OAuthError'), { error: 'temporarily_unavailable', error_description: 'too many client authentications in progress; retry later' }),
      },
    },
    security: [{ ClientBasic: [] }, {}],
  };
}
