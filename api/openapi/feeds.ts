/**
 * OpenAPI 3.1 documents of the data feeds (data-feeds.md; code in api/feeds/ and api/legacy/), one
 * per host so that a client with one base URL reaches every path of its document: the main host's
 * (api/feeds/endpoints.ts: token endpoint, MDS 2.0, GBFS 3.0 and 2.2, insurance trips) and the
 * legacy MDS host's (api/legacy/endpoints.ts: token endpoint, MDS 1.2 / 0.4). GBFS 2.2 is served on
 * the main host only, so it is in the main document, with the legacy host's tokens among those it
 * accepts. The feed answers every row shares (auth, caching, negotiation, error rows) come from
 * ./feeds-ops.ts; each document carries only the components its paths use.
 */
import type { EndpointDeclaration } from '../kit/endpoints.js';
import type { OpenApiDocument, Operation, PathItem, Ref, Response, SecurityRequirement } from './common.js';
import { oas, reachable, server } from './common.js';
import { pathsOf, type DocFamily } from './endpoints.js';
import { FEED_REF, FEED_SCHEMAS, type FeedSchemaName } from './records-feeds.js';
import {
  CACHE_HEADERS,
  CONDITIONAL,
  E,
  FEED_KEY,
  FEED_TOKEN,
  INSURANCE_20,
  LEGACY_TOKEN,
  MDS_04,
  MDS_12,
  MDS_20,
  SHARED_RESPONSES,
  TOKEN_RESPONSES,
  TOKEN_REQUEST,
} from './feeds-ops.js';
import { signedPaths, signedResponses } from './feed-signatures.js';

/** What the feeds document needs of a row of a feed table (api/feeds/endpoint.ts FeedEndpoint). */
type FeedRow = EndpointDeclaration<string, string> & {
  feed?: {
    file?: boolean;
    notPublished202?: boolean;
    accept?: readonly string[];
    oauth?: boolean;
    perFile?: ReadonlyArray<{ file: string; schema: FeedSchemaName }>;
  };
  /** an hourly file of the publication index (api/feeds/endpoint.ts HourFileSpec) */
  hourFile?: unknown;
};

const SECURITY: Record<string, SecurityRequirement[]> = {
  feedToken: [...FEED_TOKEN, ...FEED_KEY],
  legacyToken: [...LEGACY_TOKEN, ...FEED_KEY],
  eitherToken: [...LEGACY_TOKEN, ...FEED_TOKEN, ...FEED_KEY],
  insurer: [{ InsurerKey: [] }, ...FEED_TOKEN],
  clientCredentials: [{ ClientBasic: [] }, {}],
  none: [],
};

const joined = (e: FeedRow, status: number) => e.errors.flatMap((t) => t[status] ?? []).join('; ');

/** The feed error rows of an operation: not published yet, not modified, its own 400 and 404, auth, negotiation, outage. */
function errorsOf(e: FeedRow): Record<string, Response | Ref> {
  if (e.feed?.oauth) return TOKEN_RESPONSES;
  // public and static (the RFC 8414 metadata): no credentials to refuse, nothing to look up
  if (e.auth === 'none') return { '500': E[500] };
  const f = e.feed ?? {};
  return {
    ...(f.notPublished202 ? { '202': E[202] } : {}),
    ...(f.file ? { '304': E[304] } : {}),
    '400': E[400](joined(e, 400)),
    '401': E[401],
    '403': E[403],
    // an hour not published yet is a 404 `not_published` with Retry-After where it is not a 202 (the legacy host)
    '404': E[404](joined(e, 404), Boolean(e.hourFile && !f.notPublished202)),
    ...(f.accept ? { '406': E[406]([...f.accept]) } : {}),
    '500': E[500],
    '503': E[503],
  };
}

const FAMILY: DocFamily<string, string> = {
  security: (auth) => SECURITY[auth],
  errors: (e) => errorsOf(e),
  schema: (s) => oas(s),
  parameters: (e) => ((e as FeedRow).feed?.file ? CONDITIONAL : []),
};

/**
 * A stored file's 200 carries its validators; the token endpoints take a form; a `{file}` row with
 * a schema per file becomes one operation per file (`gbfsV3SystemInformation` at
 * `/v1/partner-apis/gbfs/{zoneID}/system_information.json`), in the row's place.
 */
function finish(rows: readonly FeedRow[], paths: Record<string, PathItem>): Record<string, PathItem> {
  const out: Record<string, PathItem> = {};
  for (const [path, item] of Object.entries(paths)) {
    const e = rows.find((r) => r.path === path)!;
    const op = item[e.method] as Operation;
    if (e.feed?.file) op.responses['200'] = { ...(op.responses['200'] as Response), headers: CACHE_HEADERS };
    if (e.feed?.oauth) op.requestBody = TOKEN_REQUEST;
    if (!e.feed?.perFile) {
      out[path] = item;
      continue;
    }
    for (const { file, schema } of e.feed.perFile) {
      const ok = op.responses['200'] as Response;
      out[path.replace('{file}', file)] = {
        ...item,
        [e.method]: {
          ...op,
          operationId: schema.charAt(0).toLowerCase() + schema.slice(1),
          summary: `${op.summary} ${file}.json`,
          parameters: op.parameters?.filter((p) => !('name' in p && p.name === 'file' && p.in === 'path')),
          responses: {
            ...op.responses,
            '200': { ...ok, description: `the ${file} file (${op.summary})`, content: { 'application/json': { schema: FEED_REF[schema] } } },
          },
        },
      };
    }
  }
  return out;
}

type Urls = { publicBaseUrl: string; publicLegacyUrl: string };

const SCHEMES = (opts: Urls) => ({
  FeedOAuth: {
    type: 'oauth2',
    description: `client credentials of the main host (MDS 2.0, GBFS 3.0, insurance, GBFS 2.2); ${JWT}`,
    flows: { clientCredentials: { tokenUrl: `${opts.publicBaseUrl}/v1/partner-apis/token`, scopes: {} } },
  },
  LegacyOAuth: {
    type: 'oauth2',
    description: `client credentials of the legacy MDS host (legacy MDS, GBFS 2.2); ${JWT}`,
    flows: { clientCredentials: { tokenUrl: `${opts.publicLegacyUrl}/token`, scopes: {} } },
  },
  ClientBasic: { type: 'http', scheme: 'basic', description: 'client id and secret, for the token endpoint (RFC 6749 §2.3.1)' },
  FeedKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Access-Token',
    description:
      'an API key of a feed client (issued by the operator: ops CLI `clients keys create`, or the console), instead of a token: it reads what the client’s tokens read (its role and zones) on every feed route of both hosts, until the key or its client is revoked (refused within 30 s); send one credential, not a key and a token together (400)',
  },
  InsurerKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Access-Token',
    description: 'the insurer’s API key, or an API key of an insurer-role feed client',
  },
});

/** What the oauth2 schemes say of the tokens (true of api/feeds/access-tokens.ts). */
const JWT =
  'the access token is a JWT signed HS256 and checked as RFC8725 advises: only that algorithm is accepted, and issuer, audience, expiry and `jti` are verified; it lives 900 s (TOKEN_TTL_SECONDS) and is not refreshed: ask for a new one (the client credentials grant has no refresh token, RFC 6749 §4.4.3)';

/** A document of one host: its rows' paths and the components and security schemes they use. */
function hostDocument(rows: readonly FeedRow[], opts: Urls, doc: Pick<OpenApiDocument, 'info' | 'servers' | 'tags' | 'security'>): OpenApiDocument {
  // every answer of a feed host is signed (api/feeds/signatures.ts): its headers on every response
  const paths = signedPaths(finish(rows, pathsOf(rows, FAMILY)));
  const used = new Set(
    Object.values(paths).flatMap((item) => Object.values(item).flatMap((op) => ((op as Operation).security ?? []).flatMap((r) => Object.keys(r)))),
  );
  for (const r of doc.security ?? []) for (const k of Object.keys(r)) used.add(k);
  const schemes = Object.fromEntries(Object.entries(SCHEMES(opts)).filter(([name]) => used.has(name)));
  return {
    openapi: '3.1.0',
    ...doc,
    paths,
    components: {
      ...reachable(paths, { schemas: FEED_SCHEMAS, responses: signedResponses(SHARED_RESPONSES) }),
      securitySchemes: schemes,
    },
  };
}

const FILES =
  'Hourly files (trips, historical events, status changes, insurance trips) carry ETag and Last-Modified and answer conditional requests with 304; they are served gzip to clients that accept it. Every error is `{error, error_description, error_details}`.' +
  '\n\nEvery answer, errors included, is signed: an RFC 9421 HTTP Message Signature (`Signature-Input`, `Signature`; label `feed`, `alg="ed25519"`) over the status, Content-Type, an RFC 9530 `Content-Digest` of the bytes sent, the ETag and the request\'s method, path and query, by a key of the JWK Set at `/.well-known/jwks.json` (the same on both hosts). Verify it with any RFC 9421 library: docs/feed-signatures.md.';

/** The main host's feeds: token endpoint, MDS 2.0, GBFS 3.0 and 2.2, insurance trips. */
export function feedsDocument(main: readonly FeedRow[], opts: Urls): OpenApiDocument {
  return hostDocument(main, opts, {
    info: {
      title: 'Data feeds: MDS 2.0, GBFS, insurance',
      version: '2.0.0',
      description: [
        'Read-only feeds for cities, data consumers and insurers on the main host: MDS 2.0, GBFS 3.0 and 2.2, insurance trips. The legacy MDS 1.2 / 0.4 feeds are on the legacy host and have their own document (/openapi/legacy.json).',
        '',
        `Get an access token with the OAuth 2.0 client credentials grant: \`POST ${opts.publicBaseUrl}/v1/partner-apis/token\`, then send \`Authorization: Bearer <token>\`; or send an API key of the feed client, issued by the operator, as \`X-Access-Token: <key>\` (every feed route takes either, with the client's role and zones). GBFS 2.2 (\`/gbfs/v2\`, on this host) also takes the legacy host's tokens (\`POST ${opts.publicLegacyUrl}/token\`), as the requirement has it. Insurers use an API key in \`X-Access-Token\` (the OAuth method is deprecated but still works). The token endpoint's RFC 8414 metadata is at \`/.well-known/oauth-authorization-server\` (issuer: this host's base URL), so standard OAuth clients configure themselves from the issuer.`,
        '',
        `Versions are negotiated with Accept: \`${MDS_20}\` (an absent Accept or \`*/*\` means 2.0), \`${INSURANCE_20}\`.`,
        '',
        FILES,
      ].join('\n'),
    },
    servers: [server(opts.publicBaseUrl, 'the main host of this deployment (PUBLIC_BASE_URL)')],
    tags: [
      { name: 'Authentication', description: 'the OAuth 2.0 token endpoint (client credentials), its RFC 8414 metadata, and the JWKS of the feed signatures' },
      { name: 'MDS 2.0', description: 'base /v1/partner-apis/mds/{zoneID}' },
      { name: 'MDS 2.1', description: 'base /v1/partner-apis/mds/{zoneID}: what MDS 2.1 added (incidents), Accept version=2.1' },
      { name: 'GBFS 3.0', description: 'base /v1/partner-apis/gbfs/{zoneID}' },
      { name: 'GBFS 2.2', description: 'base /gbfs/v2' },
      { name: 'Insurance', description: 'base /v1/partner-apis/insurance/{zoneID}' },
    ],
    security: [...FEED_TOKEN, ...FEED_KEY],
  });
}

/** The legacy MDS host's feeds: token endpoint, MDS 1.2 / 0.4. */
export function legacyFeedsDocument(legacy: readonly FeedRow[], opts: Urls): OpenApiDocument {
  return hostDocument(legacy, opts, {
    info: {
      title: 'Legacy MDS feeds: MDS 1.2 / 0.4',
      version: '1.2.0',
      description: [
        'The provider feeds of MDS 1.2 and 0.4 on the legacy MDS host: trips and status changes by UTC hour, recent status changes, vehicles; for city clients. MDS 2.0, GBFS and insurance trips are on the main host (/openapi/feeds.json).',
        '',
        `Get an access token with the OAuth 2.0 client credentials grant: \`POST ${opts.publicLegacyUrl}/token\`, then send \`Authorization: Bearer <token>\`, or send an API key of the feed client as \`X-Access-Token: <key>\`. The token endpoint's RFC 8414 metadata is at \`/.well-known/oauth-authorization-server\` (issuer: this host's base URL).`,
        '',
        `The version comes from Accept, which must name \`${MDS_12}\` or \`${MDS_04}\` (anything else is 406 listing both).`,
        '',
        FILES,
      ].join('\n'),
    },
    servers: [server(opts.publicLegacyUrl, 'the legacy MDS host of this deployment (PUBLIC_LEGACY_URL)')],
    tags: [
      { name: 'Authentication', description: 'the OAuth 2.0 token endpoint (client credentials), its RFC 8414 metadata, and the JWKS of the feed signatures' },
      { name: 'Legacy MDS 1.2 / 0.4', description: 'base /en/{zoneID}' },
    ],
    security: [...LEGACY_TOKEN, ...FEED_KEY],
  });
}
