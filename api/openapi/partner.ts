/**
 * OpenAPI 3.1 document of the partner rental API (partner-rental-api.md; code in api/partner/), from
 * its endpoint table (api/partner/endpoints.ts): request and response schemas are the ones the
 * routes check and the tests validate against (schemas/partner/), error codes per status from the
 * rows and the kit, as lib/domain/rentals/errors.ts catalogues them.
 */
import type { EndpointDeclaration } from '../kit/endpoints.js';
import { isJsonBody, paramCodes } from '../kit/endpoints.js';
import { ERRORS, type RentalErrorCode } from '../../lib/domain/rentals/errors.js';
import { PARTNER_RECORDS } from '../../schemas/partner/responses.js';
import type { OpenApiDocument, SecurityRequirement } from './common.js';
import { components, server } from './common.js';
import { pathsOf } from './endpoints.js';
import { rateLimitHeaders } from './rate-limit.js';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, sharedErrorResponses, type ErrorTable } from './errors-partner.js';

const KEY: SecurityRequirement[] = [{ XAuthToken: [] }, { BearerToken: [] }];

/** What every endpoint reachable without an API key (the signed addresses) can still answer. */
const SIGNED_URL_ERRORS: ErrorTable = { 500: ['InternalServerError'], 503: ['ServiceUnavailable'] };

type PartnerRow = EndpointDeclaration<RentalErrorCode, 'apiKey' | 'signedUrl'>;

/** What Idempotency-Key adds to a row that takes it (api/kit/idempotency.ts). */
const IDEMPOTENCY_ERRORS: ErrorTable = { 400: ['InvalidIdempotencyKey'], 409: ['IdempotencyKeyInUse'], 422: ['IdempotencyKeyReused'] };

/** The row's own codes, its parameters' (under their catalogued status), the body reader's, the idempotency key's and the auth gate's. */
function errorsOf(e: PartnerRow) {
  const params: ErrorTable = {};
  for (const code of paramCodes(e)) (params[ERRORS[code].status] ??= []).push(code);
  const apiKey = e.auth === 'apiKey';
  return errorResponses(
    [
      ...(isJsonBody(e.body) ? [BODY_ERRORS] : []),
      params,
      ...(e.errors as ErrorTable[]),
      ...(e.idempotent ? [IDEMPOTENCY_ERRORS] : []),
      apiKey ? AUTH_ERRORS : SIGNED_URL_ERRORS,
    ],
    { apiKey },
  );
}

export function partnerDocument(endpoints: readonly PartnerRow[], opts: { publicBaseUrl: string }): OpenApiDocument {
  const named = components(PARTNER_RECORDS);
  const paths = pathsOf(endpoints, {
    security: (auth) => (auth === 'apiKey' ? KEY : []),
    errors: errorsOf,
    schema: named.schema,
    headers: (e, status) => (e.auth === 'apiKey' ? rateLimitHeaders(status) : undefined),
  });

  return {
    openapi: '3.1.0',
    info: {
      title: 'Partner Rental API',
      version: '1.0.0',
      description: [
        'Register users, rent and end rentals, upload parking photos, read vehicles, prices and zones.',
        '',
        'Every request carries `X-Auth-Token: <API key>` (`Authorization: Bearer <API key>` is accepted too), except the signed photo upload and receipt addresses. Default rate limit: 4000 requests per minute per key, summed over all requests; 429 with `Retry-After` beyond it. A live key of another API (TOMP, insurer, console) is 403 `Forbidden`, naming the API it is for. Every answer once the key is known (all but 401 and 403) carries `X-RateLimit-Limit` and `X-RateLimit-Remaining`.',
        '',
        'Responses wrap records as `{data: …}`. Errors are JSON:API error objects `{"errors":[{"status","code","title","detail"}]}`; the `code` is the ErrorCode listed per status below. An unknown path under /v1 or /v2 answers 404 `NotFound`, a known path with another method 405 `MethodNotAllowed` (with `Allow`).',
        '',
        'No callbacks or webhooks: poll the rental (every 10 s at most), the vehicle list (about every 7 s) and the zone areas (at most every 6 hours).',
      ].join('\n'),
    },
    servers: [server(opts.publicBaseUrl, 'the main host of this deployment (PUBLIC_BASE_URL)')],
    tags: [
      { name: 'Users', description: 'Register the partner’s users (before their first rental), read, update and erase them.' },
      { name: 'Rentals', description: 'Start and end rentals, read one, the running one or all of a user.' },
      { name: 'Parking photo and receipt', description: 'Signed addresses handed out in rental records; the URL is the credential.' },
      {
        name: 'Vehicles and pricing',
        description: 'Vehicles available in a zone with their price, one vehicle by id or printed code, the price of a vehicle.',
      },
      { name: 'Zones', description: 'The partner’s zones, their areas (operations, no-parking, parking spots …) and parking-spot occupancy.' },
    ],
    paths,
    components: {
      schemas: named.schemas,
      responses: sharedErrorResponses(),
      securitySchemes: {
        XAuthToken: { type: 'apiKey', in: 'header', name: 'X-Auth-Token', description: 'the partner API key (valid 3 years)' },
        BearerToken: { type: 'http', scheme: 'bearer', description: 'the same API key as a Bearer value, as some samples of the requirement send it' },
      },
    },
    security: KEY,
  };
}
