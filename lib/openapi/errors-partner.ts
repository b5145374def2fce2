/**
 * Error responses of the partner rental API in the document: one response per HTTP status, listing
 * the ErrorCodes an endpoint can answer with under that status (the requirement's error table plus
 * our decisions, as lib/rentals/errors.ts catalogues them), each with an example body rendered the
 * way api/partner/errors.ts renders it.
 */
import { STATUS_CODES } from 'node:http';
import { ERRORS, type RentalErrorCode } from '../rentals/errors.js';
import type { Header, Ref, Response } from './common.js';
import { header, ref, schemaRef } from './common.js';

export type ErrorTable = Partial<Record<number, RentalErrorCode[]>>;

const RETRY_AFTER = header('seconds to wait before retrying', { type: 'integer', minimum: 0 }, true);

const HEADERS: Partial<Record<number, Record<string, Header>>> = {
  401: { 'WWW-Authenticate': header('`Bearer realm="partner-api"`', { type: 'string' }, true) },
  429: {
    'Retry-After': RETRY_AFTER,
    'X-RateLimit-Limit': header('requests per minute allowed for the key', { type: 'integer' }),
    'X-RateLimit-Remaining': header('requests left in the current minute', { type: 'integer' }),
  },
  // RFC 9110 §15.5.6; the business 405s (UserTooFarFromVehicle, ZoneIsSleeping ...) carry it too
  405: { Allow: header('the methods of this endpoint, e.g. `POST`', { type: 'string' }, true) },
  503: { 'Retry-After': RETRY_AFTER },
};

/** The body of one error, exactly as the renderer writes it. */
export function errorBody(code: RentalErrorCode, status: number = ERRORS[code].status, detail: string = ERRORS[code].detail) {
  return { errors: [{ status: String(status), code, title: STATUS_CODES[status] ?? 'Error', detail }] };
}

/** Details that differ from the catalogue's default where a route passes its own. */
const DETAILS: Partial<Record<string, string>> = {
  'InvalidParkingPhoto@415': 'Content-Type must be image/jpeg',
  'InvalidParkingPhoto@413': 'body exceeds 10485760 bytes',
  'RequestTooLarge@413': 'body exceeds 65536 bytes',
};

/** Top-level members and meta an error carries beside `errors` (RentalError.members / meta). */
const EXTRAS: Partial<Record<string, { members: Record<string, unknown>; meta: Record<string, unknown> }>> = {
  'ValidateParkingPhotoFailed@422': { members: { decision: 'bad-photo' }, meta: { decision: 'bad-photo' } },
};

export function errorResponse(status: number, codes: RentalErrorCode[], description?: string): Response {
  const examples: Record<string, { summary: string; value: unknown }> = {};
  for (const code of codes) {
    const body = errorBody(code, status, DETAILS[`${code}@${status}`] ?? ERRORS[code].detail);
    const extra = EXTRAS[`${code}@${status}`];
    const value = extra ? { ...extra.members, errors: [{ ...body.errors[0], meta: extra.meta }] } : body;
    examples[code] = { summary: ERRORS[code].detail, value };
  }
  return {
    description: description ?? `${STATUS_CODES[status]}: ${codes.map((c) => `\`${c}\``).join(', ')}`,
    ...(HEADERS[status] ? { headers: HEADERS[status] } : {}),
    content: {
      'application/json': {
        schema: {
          allOf: [schemaRef('JsonApiErrors')],
          properties: { errors: { items: { properties: { code: { enum: codes }, status: { const: String(status) } } } } },
          'x-error-codes': codes,
        },
        examples,
      },
    },
  };
}

/** Errors every API-key endpoint can answer with, besides its own. */
export const AUTH_ERRORS: ErrorTable = { 401: ['Unauthorized'], 429: ['RateLimitExceeded'], 500: ['InternalServerError'], 503: ['ServiceUnavailable'] };
/** Errors of every endpoint that reads a JSON body. */
export const BODY_ERRORS: ErrorTable = { 400: ['InvalidRequestBody'], 413: ['RequestTooLarge'] };

/** Responses shared by many operations, kept once in components.responses. */
const SHARED: { name: string; status: number; codes: RentalErrorCode[] }[] = [
  { name: 'Unauthorized', status: 401, codes: ['Unauthorized'] },
  { name: 'RequestTooLarge', status: 413, codes: ['RequestTooLarge'] },
  { name: 'RateLimitExceeded', status: 429, codes: ['RateLimitExceeded'] },
  { name: 'InternalServerError', status: 500, codes: ['InternalServerError'] },
  { name: 'ServiceUnavailable', status: 503, codes: ['ServiceUnavailable'] },
];

export function sharedErrorResponses(): Record<string, Response> {
  return Object.fromEntries(SHARED.map((s) => [s.name, errorResponse(s.status, s.codes)]));
}

/** Merges tables (codes in order, each once) and renders one response per status (shared ones by $ref). */
export function errorResponses(...tables: ErrorTable[]): Record<string, Response | Ref> {
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
    const shared = SHARED.find((x) => x.status === s && x.codes.length === codes.length && x.codes.every((c, i) => c === codes[i]));
    out[String(s)] = shared ? ref('responses', shared.name) : errorResponse(s, codes);
  }
  return out;
}
