/**
 * Error responses of the partner rental API in the document: one response per HTTP status, listing
 * the ErrorCodes an endpoint can answer with under that status (the requirement's error table plus
 * our decisions, as lib/domain/rentals/errors.ts catalogues them), each with an example body rendered the
 * way api/partner/errors.ts renders it.
 */
import { STATUS_CODES } from 'node:http';
import { ERRORS, type RentalErrorCode } from '../../lib/domain/rentals/errors.js';
import { JsonApiErrorsRecord, type PARTNER_RECORDS } from '../../schemas/partner/responses.js';
import type { Header, Ref, Response, Schema } from './common.js';
import { header, oas, ref, schemaRef } from './common.js';
import { rateLimitHeaders, retryAfter } from './rate-limit.js';

export type ErrorTable = Partial<Record<number, RentalErrorCode[]>>;

const HEADERS: Partial<Record<number, Record<string, Header>>> = {
  401: { 'WWW-Authenticate': header('`Bearer realm="partner-api"`', { type: 'string', maxLength: 64 }, true) },
  429: { 'Retry-After': retryAfter() },
  // RFC 9110 §15.5.6; the business 405s (UserTooFarFromVehicle, ZoneIsSleeping ...) carry it too
  405: { Allow: header('the methods of this endpoint, e.g. `POST`', { type: 'string', maxLength: 64 }, true) },
  503: { 'Retry-After': retryAfter() },
};
/** Headers of one code only where its status's other codes lack them. */
const CODE_HEADERS: Partial<Record<RentalErrorCode, Record<string, Header>>> = { IdempotencyKeyInUse: { 'Retry-After': retryAfter() } };

/** The body of one error, exactly as the renderer writes it. */
function errorBody(code: RentalErrorCode, status: number = ERRORS[code].status, detail: string = ERRORS[code].detail) {
  return { errors: [{ status: String(status), code, title: STATUS_CODES[status] ?? 'Error', detail }] };
}

/** Details that differ from the catalogue's default where a route passes its own. */
const DETAILS: Partial<Record<string, string>> = {
  'InvalidParkingPhoto@415': 'Content-Type must be image/jpeg',
  'InvalidParkingPhoto@413': 'body exceeds 10485760 bytes',
  'RequestTooLarge@413': 'body exceeds 65536 bytes',
  // the gate names the API the key is for (api/kit/api-key-gate.ts apiOfScope), here a TOMP key
  'Forbidden@403': 'this key does not give access to the partner rental API; it is a key of the TOMP API (/edge/tomp, header X-Access-Token)',
};

/** Top-level members and meta an error carries beside `errors` (RentalError.members / meta). */
const EXTRAS: Partial<Record<string, { members: Record<string, unknown>; meta: Record<string, unknown> }>> = {
  'ValidateParkingPhotoFailed@422': { members: { decision: 'bad-photo' }, meta: { decision: 'bad-photo' } },
};

/**
 * The body schema of one error response: JsonApiErrorsRecord whose error objects are JsonApiError
 * narrowed to this status and these codes (`allOf` on the item, the one shape Redocly's example
 * check follows), with `decision` only where one of the codes answers with it. `x-error-codes`
 * lists the codes for readers and tests.
 */
function errorSchema(status: number, codes: RentalErrorCode[]): Schema {
  const { errors, decision } = JsonApiErrorsRecord.properties;
  const narrowed = { type: 'object', properties: { status: { const: String(status) }, code: { enum: codes } } };
  const withDecision = codes.some((c) => EXTRAS[`${c}@${status}`]?.members.decision !== undefined);
  return {
    type: 'object',
    required: [...JsonApiErrorsRecord.required],
    properties: {
      errors: { type: 'array', minItems: errors.minItems, items: { allOf: [schemaRef('JsonApiError' satisfies keyof typeof PARTNER_RECORDS), narrowed] } },
      ...(withDecision ? { decision: oas(decision) } : {}),
    },
    'x-error-codes': codes,
  };
}

/** One error response, with the headers of its status and `extra` ones. */
function errorResponse(status: number, codes: RentalErrorCode[], extra?: Record<string, Header>): Response {
  const examples: Record<string, { summary: string; value: unknown }> = {};
  for (const code of codes) {
    const body = errorBody(code, status, DETAILS[`${code}@${status}`] ?? ERRORS[code].detail);
    const extra = EXTRAS[`${code}@${status}`];
    const value = extra ? { ...extra.members, errors: [{ ...body.errors[0], meta: extra.meta }] } : body;
    examples[code] = { summary: ERRORS[code].detail, value };
  }
  const headers: Record<string, Header> = { ...HEADERS[status], ...extra };
  for (const c of codes) Object.assign(headers, CODE_HEADERS[c]);
  return {
    description: `${STATUS_CODES[status]}: ${codes.map((c) => `\`${c}\``).join(', ')}`,
    ...(Object.keys(headers).length ? { headers } : {}),
    content: { 'application/json': { schema: errorSchema(status, codes), examples } },
  };
}

/** Errors every API-key endpoint can answer with, besides its own. */
export const AUTH_ERRORS: ErrorTable = {
  401: ['Unauthorized'],
  403: ['Forbidden'],
  429: ['RateLimitExceeded'],
  500: ['InternalServerError'],
  503: ['ServiceUnavailable'],
};
/** Errors of every endpoint that reads a JSON body. */
export const BODY_ERRORS: ErrorTable = { 400: ['InvalidRequestBody'], 413: ['RequestTooLarge'] };

/** Responses shared by many API-key operations, kept once in components.responses (with the rate-limit headers). */
const SHARED: { name: string; status: number; codes: RentalErrorCode[] }[] = [
  { name: 'Unauthorized', status: 401, codes: ['Unauthorized'] },
  { name: 'Forbidden', status: 403, codes: ['Forbidden'] },
  { name: 'RequestTooLarge', status: 413, codes: ['RequestTooLarge'] },
  { name: 'RateLimitExceeded', status: 429, codes: ['RateLimitExceeded'] },
  { name: 'InternalServerError', status: 500, codes: ['InternalServerError'] },
  { name: 'ServiceUnavailable', status: 503, codes: ['ServiceUnavailable'] },
];

export function sharedErrorResponses(): Record<string, Response> {
  return Object.fromEntries(SHARED.map((s) => [s.name, errorResponse(s.status, s.codes, rateLimitHeaders(s.status))]));
}

/**
 * Merges tables (codes in order, each once) and renders one response per status. Those of an
 * API-key operation (`apiKey`) that a shared response describes are $refs to it; the others are
 * inline, and get the rate-limit headers from the document builder (DocFamily.headers).
 */
export function errorResponses(tables: ErrorTable[], opts: { apiKey: boolean }): Record<string, Response | Ref> {
  const merged = new Map<number, RentalErrorCode[]>();
  for (const t of tables) {
    for (const [s, codes] of Object.entries(t)) {
      const list = merged.get(Number(s)) ?? [];
      for (const c of codes ?? []) if (!list.includes(c)) list.push(c);
      merged.set(Number(s), list);
    }
  }
  const out: Record<string, Response | Ref> = {};
  for (const s of [...merged.keys()].sort((a, b) => a - b)) {
    const codes = merged.get(s)!;
    const shared = opts.apiKey && SHARED.find((x) => x.status === s && x.codes.length === codes.length && x.codes.every((c, i) => c === codes[i]));
    out[String(s)] = shared ? ref('responses', shared.name) : errorResponse(s, codes);
  }
  return out;
}
