/**
 * The TOMP family's endpoint type and its kit (api/kit/endpoints.ts): every operation behind
 * X-Access-Token with the per-key rate limit; a malformed parameter is a 400 with the row's detail;
 * bodies read and validated by ./http.ts, errors rendered as TOMP error objects with the
 * Content-Language TOMP requires. TOMP describes errors by status, not by code, so a row's
 * "codes" are the descriptions of the cases it can answer with under each status.
 */
import type { AppContext } from '../../lib/domain/context.js';
import type { Endpoint, FamilyKit } from '../kit/endpoints.js';
import { TompError } from '../../lib/domain/tomp/errors.js';
import { principalOf, tompAuth } from './auth.js';
import { Idempotency, IN_USE_RETRY_AFTER_SECONDS, type IdempotencyFamily } from '../kit/idempotency.js';
import { preferredLanguage, readJson, renderErrors, validated } from './http.js';
import { admitter, type Admission, type AdmissionRefused } from '../kit/admission.js';

export type TompAuth = 'accessToken';

/** What /operator/meta says of the row beyond method and path (TOMP's endpointImplementation). */
export interface TompMeta {
  /** the path as TOMP spells it, where it differs (`/support/`) */
  path?: string;
  /** one listed endpoint per event type the row accepts */
  eventTypes?: readonly string[];
  maxPageSize?: number;
}

export type TompEndpoint<Body = unknown> = Endpoint<AppContext, string, TompAuth, Body> & { meta?: TompMeta };

/** A row, typed by its body; the table holds rows of any body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a handler's input is contravariant: no body type but `any` admits every row into one table (mountEndpoints takes the same)
export const endpoint = <Body = undefined>(e: TompEndpoint<Body>): TompEndpoint<any> => e;

/** The refusal of admission control: the request would have waited past its budget (api/kit/admission.ts). */
const overloaded = (refusal: AdmissionRefused) =>
  new TompError(503, 'too many requests in progress; retry later', { type: 'ServiceUnavailable', retryAfterSeconds: refusal.retryAfterSeconds });

/** Idempotency-Key in the TOMP family: a key is the MaaS provider's (any of its access tokens), errors as TOMP error objects. */
const idempotencyFamily: IdempotencyFamily = {
  scopeOf: (ctx) => `tomp:${principalOf(ctx).partnerId}`,
  invalid: (detail) => new TompError(400, detail, { type: 'InvalidIdempotencyKey' }),
  inUse: () =>
    new TompError(409, 'a request with this Idempotency-Key is still in progress; retry after Retry-After', {
      type: 'IdempotencyKeyInUse',
      retryAfterSeconds: IN_USE_RETRY_AFTER_SECONDS,
    }),
  reused: () => new TompError(422, 'this Idempotency-Key was used for another request', { type: 'IdempotencyKeyReused' }),
};

export function tompKit(app: AppContext, admission: Admission): FamilyKit<AppContext, string, TompAuth> {
  const errors = renderErrors(app.log);
  return {
    admit: admitter(admission, 'tomp', overloaded),
    idempotency: new Idempotency(app.db, app.clock, app.log, idempotencyFamily, { gatewayTimeoutMs: app.config.gateway.timeoutMs }),
    auth: { accessToken: tompAuth(app) },
    render: async (ctx, next) => {
      await errors(ctx, async () => {
        await next();
        // TOMP marks Content-Language as a required header of its responses
        if (ctx.status < 300 && !ctx.response.get('Content-Language')) ctx.set('Content-Language', preferredLanguage(ctx.get('accept-language')));
      });
    },
    invalidParam: (detail, name, where, missing) => new TompError(400, missing ? `${where} parameter ${name} is missing` : (detail ?? `${name} is invalid`)),
    readBody: async (a, ctx, spec) => validated(spec.schema, await readJson(ctx, a.config.maxBodyBytes)),
  };
}
