/**
 * The building blocks of the feeds' OpenAPI document (api/openapi/feeds.ts): media types, the
 * responses and headers every feed row shares (auth, caching, error rows) and the token endpoints'
 * OAuth answers.
 */
import type { Header, Parameter, Ref, Response, SecurityRequirement } from './common.js';
import { header, json, ref } from './common.js';
import { FEED_REF } from './records-feeds.js';
import { retryAfter } from './rate-limit.js';

export const MDS_20 = 'application/vnd.mds+json;version=2.0';
export const MDS_12 = 'application/vnd.mds+json;version=1.2';
export const MDS_04 = 'application/vnd.mds.provider+json;version=0.4';
export const INSURANCE_20 = 'application/vnd.insurance+json;version=2.0';

const RETRY_AFTER: Header = retryAfter();
export const CACHE_HEADERS: Record<string, Header> = {
  ETag: header('validator of the file; send it back in If-None-Match', { type: 'string' }, true),
  'Last-Modified': header('when the file was (re)published', { type: 'string' }, true),
  'Cache-Control': header('`private, max-age=60` for hour files (they can be republished), the ttl for GBFS files', { type: 'string' }, true),
};

const error = (description: string, headers?: Record<string, Header>): Response => ({
  description,
  ...(headers ? { headers } : {}),
  content: json(FEED_REF.FeedError),
});

export const SHARED_RESPONSES: Record<string, Response> = {
  NotPublished: error('the hour is closed but not published yet (inside the publishing lateness, or being republished): retry later', {
    'Retry-After': RETRY_AFTER,
  }),
  NotModified: { description: 'not modified (If-None-Match / If-Modified-Since)' },
  Unauthorized: error('missing, invalid, expired or revoked access token; unknown or revoked API key, or a key of a revoked client', {
    'WWW-Authenticate': header('`Bearer realm="feeds"` (with `error="invalid_token"` when a token or a key was presented)', { type: 'string' }, true),
  }),
  Forbidden: error('valid token or key, but the feed or the zone is outside the client’s role or zones', {
    'WWW-Authenticate': header('`Bearer realm="feeds", error="insufficient_scope"`', { type: 'string' }, true),
  }),
  InternalError: error('unexpected error'),
  Unavailable: error('temporarily unavailable (database, or a GBFS file not published yet)', { 'Retry-After': RETRY_AFTER }),
};

export const E = {
  202: ref('responses', 'NotPublished'),
  304: ref('responses', 'NotModified'),
  400: (what: string) => error(`bad parameter: ${what}`),
  401: ref('responses', 'Unauthorized'),
  403: ref('responses', 'Forbidden'),
  /** `notPublished`: also an hour not published yet (`not_published`), which carries Retry-After */
  404: (what: string, notPublished = false) =>
    error(
      `not found: ${what}`,
      notPublished ? { 'Retry-After': { ...retryAfter(false), description: 'with `not_published`: seconds to wait before retrying' } } : undefined,
    ),
  406: (types: string[]) => error(`unsupported media type or version in Accept; the body lists the supported ones (${types.join(', ')})`),
  500: ref('responses', 'InternalError'),
  503: ref('responses', 'Unavailable'),
};

export const CONDITIONAL: Parameter[] = [
  {
    name: 'If-None-Match',
    in: 'header',
    description: 'ETag of a copy you hold (or several, comma-separated): 304 when unchanged',
    schema: { type: 'string', maxLength: 1024 },
  },
  // RFC 9110 §5.6.7 IMF-fixdate, e.g. `Sat, 21 Nov 2026 10:00:00 GMT`; anything else is ignored
  { name: 'If-Modified-Since', in: 'header', description: 'HTTP date: 304 when not modified since', schema: { type: 'string', maxLength: 64 } },
];

export const FEED_TOKEN: SecurityRequirement[] = [{ FeedOAuth: [] }];
export const LEGACY_TOKEN: SecurityRequirement[] = [{ LegacyOAuth: [] }];
/** A feed client's API key (X-Access-Token): accepted on every feed route of both hosts beside its tokens. */
export const FEED_KEY: SecurityRequirement[] = [{ FeedKey: [] }];

/** The OAuth 2.0 token endpoints' request (both hosts). */
export const TOKEN_REQUEST = {
  required: true,
  content: { 'application/x-www-form-urlencoded': { schema: FEED_REF.TokenForm, example: { grant_type: 'client_credentials' } } },
};

/** The OAuth 2.0 token endpoints' answers, RFC 6749's format rather than the feed error's. */
export const TOKEN_RESPONSES: Record<string, Response | Ref> = {
  '200': {
    description: 'the access token',
    headers: { 'Cache-Control': header('`no-store`', { type: 'string' }, true) },
    content: json(FEED_REF.AccessToken, { access_token: 'eyJhbGciOi…', expires_in: 900, token_type: 'bearer' }),
  },
  '400': {
    description: '`invalid_request` (not a form, missing grant_type, repeated parameter, both credential methods) or `unsupported_grant_type`',
    content: json(FEED_REF.OAuthError),
  },
  '401': {
    description: '`invalid_client`: unknown client, wrong secret, or no credentials',
    headers: { 'WWW-Authenticate': header('`Basic realm="feeds", charset="UTF-8"`', { type: 'string' }, true) },
    content: json(FEED_REF.OAuthError, { error: 'invalid_client', error_description: 'client authentication failed' }),
  },
  '429': {
    description:
      '`slow_down`: too many failed client authentications for this client id from this address (default 5), or from this address over any client ids (default 30), in the current minute; that address is refused even the right secret until Retry-After has passed, while the same client id from another address is not',
    headers: { 'Retry-After': RETRY_AFTER, 'Cache-Control': header('`no-store`', { type: 'string' }, true) },
    content: json(FEED_REF.OAuthError, { error: 'slow_down', error_description: 'too many failed client authentications; retry later' }),
  },
  '500': E[500],
  '503': {
    description:
      '`temporarily_unavailable`: too many client authentications are being checked at once; retry after Retry-After. Also a database outage (feed error body)',
    headers: { 'Retry-After': RETRY_AFTER },
    content: json(FEED_REF.OAuthError, { error: 'temporarily_unavailable', error_description: 'too many client authentications in progress; retry later' }),
  },
};

/** The token endpoints' description (both hosts). */
export const TOKEN_DESCRIPTION =
  'OAuth 2.0 client credentials grant (RFC 6749 §4.4): HTTP Basic with the client id and secret, form field `grant_type=client_credentials`. The token lives 900 seconds; send it as `Authorization: Bearer <token>`. Credentials in the form (client_id, client_secret) are accepted only without an Authorization header.';
