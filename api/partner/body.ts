/**
 * Request bodies of the partner API, read by api/kit/body.ts (size limit → 413, nesting deeper
 * than MAX_JSON_DEPTH → 400 before parsing) and parsed strictly: malformed JSON, a non-object, wrong types and unknown fields are all
 * 400 InvalidRequestBody.
 */
import type Koa from 'koa';
import { compile, containsNul } from '../../lib/core/validate.js';
import { RentalError, type RentalErrorCode } from '../../lib/domain/rentals/errors.js';
import { BodyRefused, MAX_JSON_DEPTH, readBody, readJsonBody } from '../kit/body.js';

/** The raw body, at most `limit` bytes; `tooLarge` is the error code of an oversized body. */
export async function readRaw(ctx: Koa.Context, limit: number, tooLarge: RentalErrorCode = 'RequestTooLarge'): Promise<Buffer> {
  try {
    return await readBody(ctx, limit);
  } catch (err) {
    if (err instanceof BodyRefused) throw new RentalError(tooLarge, { status: 413, detail: `body exceeds ${limit} bytes` });
    throw err;
  }
}

/**
 * The JSON body validated against `schema`, read by the one JSON reader of every family
 * (api/kit/body.ts readJsonBody). An empty body counts as `{}` when `emptyAsObject` (end rental:
 * every field optional), otherwise as invalid.
 */
export async function readJson<T>(ctx: Koa.Context, schema: object, limit: number, emptyAsObject = false): Promise<T> {
  let value: unknown;
  try {
    value = await readJsonBody(ctx, limit);
  } catch (err) {
    if (err instanceof BodyRefused) {
      throw err.reason === 'too_large'
        ? new RentalError('RequestTooLarge', { status: 413, detail: `body exceeds ${limit} bytes` })
        : new RentalError('InvalidRequestBody', { detail: `body nested deeper than ${MAX_JSON_DEPTH} levels` });
    }
    if (err instanceof SyntaxError) throw new RentalError('InvalidRequestBody');
    throw err;
  }
  if (value === undefined) {
    if (!emptyAsObject) throw new RentalError('InvalidRequestBody');
    value = {};
  }
  const validate = compile<T>(schema);
  if (!validate(value) || containsNul(value)) throw new RentalError('InvalidRequestBody');
  return value;
}
