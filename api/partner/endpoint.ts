/**
 * The partner family's endpoint type and its kit (api/kit/endpoints.ts): API-key auth with the
 * rate limit, or none for the signed photo and receipt addresses (the URL is the credential); a
 * malformed parameter is the row's own error code; JSON bodies read by ./body.ts; every error as
 * JSON:API (./errors.ts).
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import type { Endpoint, FamilyKit } from '../kit/endpoints.js';
import { ERRORS, RentalError, type RentalErrorCode } from '../../lib/domain/rentals/errors.js';
import { UUID_V4_SCHEMA } from '../../lib/core/uuid.js';
import { ZONE_ID_SCHEMA } from '../../lib/domain/zones.js';
import { authenticate, principalOf } from './auth.js';
import { Idempotency, IN_USE_RETRY_AFTER_SECONDS, type IdempotencyFamily } from '../kit/idempotency.js';
import { readJson } from './body.js';
import { overloaded, renderError } from './errors.js';
import { admitter, type Admission } from '../kit/admission.js';

export type PartnerAuth = 'apiKey' | 'signedUrl';
export type PartnerEndpoint<Body = unknown> = Endpoint<AppContext, RentalErrorCode, PartnerAuth, Body>;

/** A row, typed by its body; the table holds rows of any body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a handler's input is contravariant: no body type but `any` admits every row into one table (mountEndpoints takes the same)
export const endpoint = <Body = undefined>(e: PartnerEndpoint<Body>): PartnerEndpoint<any> => e;

/** Idempotency-Key in the partner family: a key is the partner's (any of its API keys), errors as JSON:API. */
const idempotencyFamily: IdempotencyFamily = {
  scopeOf: (ctx) => `partner:${principalOf(ctx).partnerId}`,
  invalid: (detail) => new RentalError('InvalidIdempotencyKey', { detail }),
  inUse: () => new RentalError('IdempotencyKeyInUse', { headers: { 'Retry-After': String(IN_USE_RETRY_AFTER_SECONDS) } }),
  reused: () => new RentalError('IdempotencyKeyReused'),
};

export function partnerKit(app: AppContext, admission: Admission): FamilyKit<AppContext, RentalErrorCode, PartnerAuth> {
  const apiKey: Koa.Middleware = authenticate(app);
  return {
    admit: admitter(admission, 'partner', overloaded),
    idempotency: new Idempotency(app.db, app.clock, app.log, idempotencyFamily, { gatewayTimeoutMs: app.config.gateway.timeoutMs }),
    // a signed URL is its own credential: its signature covers the row's purpose (photo, receipt), so the row's handler verifies it
    auth: { apiKey, signedUrl: null },
    render: async (ctx, next) => {
      try {
        await next();
      } catch (err) {
        renderError(ctx, err);
      }
    },
    // the table's detail; an absent parameter is named (`zoneId=` sent for `zoneID=`)
    invalidParam: (code, name, where, missing) => {
      const c = code ?? 'InvalidInput';
      return missing ? new RentalError(c, { detail: `${ERRORS[c].detail}: ${where} parameter ${name} is missing` }) : new RentalError(c);
    },
    // a body whose every field is optional (end rental) may be empty
    readBody: (a, ctx, spec) => readJson(ctx, spec.schema, a.config.maxBodyBytes, !spec.required),
  };
}

/** The path parameter of an id (UUID v4, either case; the handler gets it in lower case). */
export const idParam = (description: string, invalid: RentalErrorCode, example?: string) => ({
  description,
  schema: UUID_V4_SCHEMA,
  lowercase: true,
  invalid,
  ...(example ? { example } : {}),
});

/**
 * A zone id in the path or the query: empty (or the router's placeholder of an empty segment, see
 * ./router.ts) is EmptyZoneID, a value no zone id can have is ZoneNotFound, as an unknown one is.
 */
export const zoneParam = (description: string) => ({
  description,
  schema: ZONE_ID_SCHEMA,
  required: true,
  example: 'madrid',
  invalid: { empty: 'EmptyZoneID', malformed: 'ZoneNotFound' } as const,
});
