/**
 * HTTP plumbing of the TOMP family: the error renderer, the JSON body reader (size limit → 413,
 * malformed → 400), body validation against schemas/tomp, and the language negotiation that feeds
 * the Content-Language header TOMP requires on its responses.
 */
import type Koa from 'koa';
import { isOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../kit/outage.js';
import type { Logger } from '../../lib/core/log.js';
import { recordFault } from '../kit/fault.js';
import { requestLogOf } from '../kit/request-log.js';
import { compile, describeErrors, containsNul } from '../../lib/core/validate.js';
import { TompError } from '../../lib/domain/tomp/errors.js';
import { BodyRefused, MAX_JSON_DEPTH, isClientAborted, readJsonBody } from '../kit/body.js';

/** First middleware of the family: every failure leaves as a TOMP error object, never a stack trace. */
export function renderErrors(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const e = toTompError(ctx, err, requestLogOf(ctx) ?? log);
      ctx.status = e.status;
      ctx.type = 'application/json';
      ctx.body = e.toBody();
      if (e.opts.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(e.opts.retryAfterSeconds));
      if (e.opts.allow) ctx.set('Allow', e.opts.allow);
    }
  };
}

function toTompError(ctx: Koa.Context, err: unknown, log: Logger): TompError {
  // nobody left to answer: the outermost middleware records it (api/middleware/request-envelope.ts)
  if (isClientAborted(err)) throw err;
  if (err instanceof TompError) {
    if (err.status >= 500 && err.status !== 503) recordFault(ctx, err);
    return err;
  }
  if (isOutage(err)) {
    log.warn({ err: err.message }, 'database unavailable');
    // the same type as admission's refusal (api/tomp/endpoint.ts): a client retries both alike
    return new TompError(503, 'temporarily unavailable; retry later', { type: 'ServiceUnavailable', retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS });
  }
  recordFault(ctx, err);
  return new TompError(500, 'internal error');
}

/**
 * Reads the whole body as JSON (api/kit/body.ts): more than `limit` bytes → 413, nesting deeper than
 * MAX_JSON_DEPTH or anything that is not JSON → 400, checked before any parsing or validation.
 */
export async function readJson(ctx: Koa.Context, limit: number): Promise<unknown> {
  let value: unknown;
  try {
    value = await readJsonBody(ctx, limit);
  } catch (err) {
    if (err instanceof BodyRefused) {
      throw err.reason === 'too_large'
        ? new TompError(413, `request body larger than ${limit} bytes`)
        : new TompError(400, `request body nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    if (err instanceof SyntaxError) throw new TompError(400, 'malformed JSON in request body');
    throw err;
  }
  if (value === undefined) throw new TompError(400, 'a JSON request body is required');
  // Postgres text cannot hold U+0000: refuse it here rather than fail in the database with a 500
  if (containsNul(value)) throw new TompError(400, 'strings in the request body must not contain NUL (\\u0000) characters');
  return value;
}

/** Validates `body` against a schemas/tomp schema; 400 with a short description of what is wrong. */
export function validated<T>(schema: object, body: unknown): T {
  const validate = compile<T>(schema);
  if (!validate(body)) throw new TompError(400, `invalid request body: ${describeErrors(validate.errors)}`);
  return body;
}

const LANGUAGE_TAG = /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/;

/** The caller's preferred language tag from Accept-Language (highest q), or `fallback`. */
export function preferredLanguage(header: string | undefined, fallback = 'en'): string {
  if (!header) return fallback;
  const tags = header
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      const weight = qParam ? Number(qParam.slice(2)) : 1;
      return { tag: tag.trim(), weight: Number.isFinite(weight) ? weight : 0, i };
    })
    .filter((t) => LANGUAGE_TAG.test(t.tag) && t.weight > 0 && t.tag.length <= 35)
    .sort((a, b) => b.weight - a.weight || a.i - b.i);
  return tags[0]?.tag ?? fallback;
}
