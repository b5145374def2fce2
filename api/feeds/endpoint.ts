/**
 * The feed families' endpoint type (main host: token, MDS 2.0, GBFS, insurance; legacy host: token,
 * MDS 1.2 / 0.4) and what is derived from their tables besides the routes and the document: the
 * hot path's routes (hourly files answered from the caches before Koa, api/feeds/hot-path.ts).
 *
 * A feed checks its request in a fixed order: the token (the row's auth kind, run by the kit), then
 * in its gate (api/feeds/gates.ts) the version Accept names, the role's right to the endpoint, the
 * zone, and only then the parameters, each with its own feed error. So a row's parameters carry no
 * `invalid` code: the kit passes them on and the handler checks them in that order; the table
 * documents them.
 */
import { ZONE_ID_SCHEMA } from '../../lib/domain/zones.js';
import { TIME_HOUR_SCHEMA } from '../../schemas/common.js';
import type { Endpoint, FamilyKit, ParamSpec } from '../kit/endpoints.js';
import { koaPath } from '../kit/endpoints.js';
import type { HourlyFeedName } from '../../lib/feeds/publications.js';
import type { FeedAccess } from '../../lib/feeds/roles.js';
import type { MediaOffer } from './accept.js';
import { tokenAuth, type FeedDeps } from './auth.js';
import { badParam, feedErrors } from './errors.js';
import { insurerAuth } from './insurance.js';
import { clientCredentials, issueToken } from './token.js';
import { TOKEN_DESCRIPTION } from '../openapi/feeds-ops.js';
import type { FastHourFile } from './hot-path.js';
import { signedRenderer } from './signatures.js';
import type { FeedSchemaName } from '../openapi/records-feeds.js';

/**
 * feedToken: a bearer token of the main host; legacyToken: of the legacy host; eitherToken: of
 * either (GBFS 2.2); insurer: an insurer's API key or (deprecated) a main-host token;
 * clientCredentials: the token endpoints (HTTP Basic or form credentials); none: public (the RFC 8414
 * metadata, api/feeds/discovery.ts).
 */
export type FeedAuth = 'feedToken' | 'legacyToken' | 'eitherToken' | 'insurer' | 'clientCredentials' | 'none';

/** What the feeds document says of a row beyond the common shape. */
export interface FeedDoc {
  /** a stored file: ETag and Last-Modified, 304 on conditional requests */
  file?: boolean;
  /** a closed hour not published yet is 202 (MDS 2.0, insurance); the legacy host says so with 404 */
  notPublished202?: boolean;
  /** the media types Accept may name: 406 beyond them */
  accept?: readonly string[];
  /** the token endpoints: OAuth 2.0 answers, documented whole by api/openapi/feeds-ops.ts */
  oauth?: boolean;
  /**
   * a `{file}` route whose files each have their own schema: the document has one operation per
   * file, with that file's schema (a partner reads GBFS file by file)
   */
  perFile?: ReadonlyArray<{ file: string; schema: FeedSchemaName }>;
}

/** An hourly file served from the publication index: the hot path answers it from the caches when it can. */
export interface HourFileSpec {
  feed: HourlyFeedName;
  /** the query parameter naming the hour */
  param: string;
  offers: readonly MediaOffer<string>[];
  /** undefined: the client must name a version (legacy host) */
  fallback: MediaOffer<string> | undefined;
  access: (version: string) => FeedAccess;
}

export type FeedEndpoint = Endpoint<FeedDeps, string, FeedAuth> & { feed?: FeedDoc; hourFile?: HourFileSpec };

/**
 * The feeds' kit, one per host (it holds the host's caches through `deps`). Each auth kind's
 * middleware runs before the handler and leaves what it verified on ctx.state (./auth.ts
 * FeedAuthState): the token kinds the claims, `insurer` the zones of the key or token,
 * `clientCredentials` the authenticated client. The rest of a feed's order (version, role, zone,
 * then the parameters) is the handler's gate, after it.
 */
export function feedKit(deps: FeedDeps): FamilyKit<FeedDeps, string, FeedAuth> {
  const token = tokenAuth(deps);
  return {
    auth: { feedToken: token, legacyToken: token, eitherToken: token, insurer: insurerAuth(deps), clientCredentials: clientCredentials(deps), none: null },
    // the signature outside the renderer: errors are signed as every other answer
    render: signedRenderer(deps.signer, feedErrors()),
    // only reached by a row that gives a parameter an `invalid` description (none does today)
    invalidParam: (detail, name, _where, missing) =>
      badParam(missing ? `missing ${name}` : `invalid ${name}`, detail ?? `${name} is ${missing ? 'missing' : 'malformed'}`),
    // no feed row has a JSON body (the token endpoint reads its form, the legacy events POST refuses one)
    readBody: () => Promise.reject(new Error('feed endpoints read their own bodies')),
  };
}

/** The zone id of every zone-scoped feed path. */
export const ZONE_PARAM: ParamSpec = {
  description: 'the zone id of the requested data',
  schema: ZONE_ID_SCHEMA,
  example: 'madrid',
};
const ZONE_SEGMENT = ZONE_PARAM.schema.pattern as string;

/** One UTC hour in the query (the hour files). */
export const timeHour = (description: string): ParamSpec => ({
  description: `${description}: one UTC hour, YYYY-MM-DDTHH`,
  schema: TIME_HOUR_SCHEMA,
  required: true,
  example: '2026-11-21T09',
});

/**
 * The hot path's routes: every hourly-file row of a table, its path template as a regular
 * expression on the raw URL (group 1 the zone id, group 2 the query string).
 */
export function hotFilesOf(rows: readonly FeedEndpoint[]): FastHourFile[] {
  return rows.flatMap((r) => {
    if (!r.hourFile) return [];
    const parts = r.path.split(/\{zoneID\}/);
    if (parts.length !== 2 || /[{}]/.test(parts.join(''))) throw new Error(`hot path: ${r.path} must have exactly one parameter, {zoneID}`);
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const re = new RegExp(`^${escape(parts[0])}(${ZONE_SEGMENT.slice(1, -1)})${escape(parts[1])}(?:\\?([^#]*))?$`);
    return [{ re, route: { pattern: koaPath(r.path), ...r.hourFile } }];
  });
}

/** The token endpoint's row of a host's table (the main host and the legacy host serve the same one). */
export function tokenEndpoint(operationId: string, path: string, host: string): FeedEndpoint {
  return {
    operationId,
    method: 'post',
    path,
    summary: `Access token (${host})`,
    description: TOKEN_DESCRIPTION,
    tag: 'Authentication',
    auth: 'clientCredentials',
    responses: {},
    errors: [],
    feed: { oauth: true },
    handle: issueToken,
  };
}
