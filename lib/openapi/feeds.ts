/**
 * OpenAPI 3.1 document of the data feeds (data-feeds.md; code in api/feeds/ and api/legacy/), from
 * the two hosts' endpoint tables (api/feeds/endpoints.ts, api/legacy/endpoints.ts): the token
 * endpoints, MDS 2.0, GBFS 3.0 and 2.2, insurance trips on the main host, and the legacy MDS 1.2 /
 * 0.4 host (its paths carry their own `servers`). The feed answers every row shares (auth, caching,
 * negotiation, error rows) come from ./feeds-ops.ts.
 */
import type { Endpoint } from '../http/endpoints.js';
import type { OpenApiDocument, Operation, PathItem, Ref, Response, SecurityRequirement } from './common.js';
import { oas, schemaRef } from './common.js';
import { pathsOf, type DocFamily } from './endpoints.js';
import { FEED_SCHEMAS } from './records-feeds.js';
import { CACHE_HEADERS, CONDITIONAL, E, FEED_TOKEN, INSURANCE_20, LEGACY_TOKEN, MDS_04, MDS_12, MDS_20, SHARED_RESPONSES, TOKEN_RESPONSES, TOKEN_REQUEST } from './feeds-ops.js';

/** What the feeds document needs of a row of a feed table (api/feeds/endpoint.ts FeedEndpoint). */
type FeedRow = Endpoint<any, string, string, any> & {
  feed?: { file?: boolean; notPublished202?: boolean; accept?: readonly string[]; oauth?: boolean; perFile?: ReadonlyArray<{ file: string; schema: string }> };
};

const SECURITY: Record<string, SecurityRequirement[]> = {
  feedToken: FEED_TOKEN,
  legacyToken: LEGACY_TOKEN,
  eitherToken: [...LEGACY_TOKEN, ...FEED_TOKEN],
  insurer: [{ InsurerKey: [] }, ...FEED_TOKEN],
  clientCredentials: [{ ClientBasic: [] }, {}],
};

const joined = (e: FeedRow, status: number) => e.errors.flatMap((t) => t[status] ?? []).join('; ');

/** The feed error rows of an operation: not published yet, not modified, its own 400 and 404, auth, negotiation, outage. */
function errorsOf(e: FeedRow): Record<string, Response | Ref> {
  if (e.feed?.oauth) return TOKEN_RESPONSES;
  const f = e.feed ?? {};
  return {
    ...(f.notPublished202 ? { '202': E[202] } : {}),
    ...(f.file ? { '304': E[304] } : {}),
    '400': E[400](joined(e, 400)),
    '401': E[401],
    '403': E[403],
    '404': E[404](joined(e, 404)),
    ...(f.accept ? { '406': E[406]([...f.accept]) } : {}),
    '500': E[500],
    '503': E[503],
  };
}

const family = (pathItem?: Omit<PathItem, 'get' | 'put' | 'post' | 'patch' | 'delete'>): DocFamily<string, string> => ({
  security: (auth) => SECURITY[auth]!,
  errors: (e) => errorsOf(e as FeedRow),
  schema: (s) => oas(s),
  parameters: (e) => ((e as FeedRow).feed?.file ? CONDITIONAL : []),
  ...(pathItem ? { pathItem: () => pathItem } : {}),
});

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
          responses: { ...op.responses, '200': { ...ok, description: `the ${file} file (${op.summary})`, content: { 'application/json': { schema: schemaRef(schema) } } } },
        },
      };
    }
  }
  return out;
}

export function feedsDocument(main: readonly FeedRow[], legacy: readonly FeedRow[], opts: { publicBaseUrl: string; publicLegacyUrl: string }): OpenApiDocument {
  const legacyServer = { url: opts.publicLegacyUrl, description: 'legacy MDS host' };
  const paths = {
    ...finish(main, pathsOf(main, family())),
    ...finish(legacy, pathsOf(legacy, family({ servers: [legacyServer] }))),
  };

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
    paths,
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
