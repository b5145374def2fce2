/**
 * OpenAPI 3.1 document of the TOMP 1.6.1 subset (tomp-booking-api.md, docs/tomp-api.md; code in
 * api/tomp/), from its endpoint table (api/tomp/endpoints.ts). Paths are relative to the server
 * `${publicBaseUrl}/edge/tomp`; request and response schemas are schemas/tomp/'s.
 */
import type { EndpointDeclaration } from '../kit/endpoints.js';
import { isJsonBody, paramCodes } from '../kit/endpoints.js';
import { TOMP_RECORDS, TompErrorRecord } from '../../schemas/tomp/responses.js';
import type { Header, OpenApiDocument, Response, Schema } from './common.js';
import { components, json, server } from './common.js';
import { pathsOf } from './endpoints.js';
import { rateLimitHeaders, retryAfter } from './rate-limit.js';

/** What every operation can answer besides its own cases (the kit's: auth, rate limit, outage). */
const COMMON: Record<number, string[]> = {
  401: ['no X-Access-Token, or an unknown, expired or revoked key'],
  403: ['a valid key of another API (partner rental or insurer key)'],
  429: ['rate limit exceeded (default 4000 requests per minute per key)'],
  500: ['unexpected error'],
  503: ['temporary issue (database, or a vehicle that did not answer a lock command); retry after Retry-After'],
};
/** What the body reader answers for every JSON body. */
const BODY: Record<number, string[]> = {
  400: ['malformed JSON, wrong types, missing fields, coordinates out of range'],
  413: ['body larger than the limit (64 KiB by default)'],
};
/** What Idempotency-Key adds to a row that takes it (api/kit/idempotency.ts). */
const IDEMPOTENCY: Record<number, string[]> = {
  400: ['Idempotency-Key is not a key (type InvalidIdempotencyKey)'],
  409: ['a request with this Idempotency-Key is still in progress; retry after Retry-After (type IdempotencyKeyInUse)'],
  422: ['this Idempotency-Key was used for another request (type IdempotencyKeyReused)'],
};
const HEADERS: Partial<Record<number, Record<string, Header>>> = {
  429: { 'Retry-After': retryAfter() },
  503: { 'Retry-After': retryAfter() },
};

type TompRow = EndpointDeclaration<string, 'accessToken'>;

/** Per status, the row's own cases where it has any, else its parameters', else the body reader's and the kit's. */
function errorsOf(e: TompRow, errorSchema: Schema): Record<string, Response> {
  const byStatus = new Map<number, string[]>(Object.entries(COMMON).map(([s, d]) => [Number(s), d]));
  if (isJsonBody(e.body)) for (const [s, d] of Object.entries(BODY)) byStatus.set(Number(s), d);
  const params = paramCodes(e);
  if (params.length) byStatus.set(400, params);
  for (const table of e.errors) for (const [s, d] of Object.entries(table)) byStatus.set(Number(s), [...(d ?? [])]);
  if (e.idempotent) for (const [s, d] of Object.entries(IDEMPOTENCY)) byStatus.set(Number(s), [...(byStatus.get(Number(s)) ?? []), ...d]);
  const out: Record<string, Response> = {};
  for (const s of [...byStatus.keys()].sort((a, b) => a - b)) {
    // a 409 of the idempotency key says when to retry
    const headers = s === 409 && e.idempotent ? { 'Retry-After': retryAfter() } : HEADERS[s];
    out[String(s)] = { description: byStatus.get(s)!.join('; '), ...(headers ? { headers } : {}), content: json(errorSchema) };
  }
  return out;
}

export function tompDocument(endpoints: readonly TompRow[], opts: { publicBaseUrl: string }): OpenApiDocument {
  const named = components(TOMP_RECORDS);
  const errorSchema = named.schema(TompErrorRecord);
  const paths = pathsOf(endpoints, {
    security: () => [{ XAccessToken: [] }],
    errors: (e) => errorsOf(e, errorSchema),
    schema: named.schema,
    // every TOMP operation is behind the API-key gate
    headers: (_e, status) => rateLimitHeaders(status),
  });

  return {
    openapi: '3.1.0',
    info: {
      title: 'TOMP booking API (TOMP 1.6.1 subset)',
      version: '1.6.1',
      description: [
        'A MaaS provider discovers regions and pricing plans, books one specific vehicle in a single call, follows the leg, finishes it with a leg event and reads the final price; support tickets can be raised for a booking.',
        '',
        'Every request carries `X-Access-Token: <API key>`. Errors are `{status, title, detail}` plus `type` (a machine-readable reason) where useful. An unknown path answers 404 and a known path with another method 405 (with `Allow`), both before the key is checked. Every 2xx answer carries `Content-Language`. Default rate limit: 4000 requests per minute per key (429 with `Retry-After` beyond it); every answer once the key is known (all but 401 and 403) carries `X-RateLimit-Limit` and `X-RateLimit-Remaining`.',
        '',
        'Typical flow: list regions, list pricing plans, book one vehicle (`/bookings/one-stop`), read the leg, post `FINISH` to `/legs/{id}/events`, read the booking for the final pricing.',
      ].join('\n'),
    },
    servers: [server(`${opts.publicBaseUrl}/edge/tomp`, 'the main host of this deployment (PUBLIC_BASE_URL), under /edge/tomp')],
    tags: [
      { name: 'Operator information', description: 'Metadata, operating regions and pricing plans.' },
      { name: 'Booking', description: 'Book one vehicle in one call; commit or cancel a postponed booking; read a booking.' },
      { name: 'Trip execution', description: 'Read the leg and finish it with a leg event.' },
      { name: 'Support', description: 'Raise a support ticket for a booking.' },
    ],
    paths,
    components: {
      schemas: named.schemas,
      securitySchemes: { XAccessToken: { type: 'apiKey', in: 'header', name: 'X-Access-Token', description: 'the MaaS provider’s API key' } },
    },
    security: [{ XAccessToken: [] }],
  };
}
