/**
 * Request bodies of the partner API, read by lib/http/body.ts (size limit → 413, nesting deeper
 * than MAX_JSON_DEPTH → 400 before parsing) and parsed strictly: malformed JSON, a non-object, wrong types and unknown fields are all
 * 400 InvalidRequestBody.
 */
import type Koa from 'koa';
import { compile, containsNul } from '../../lib/validate.js';
import { RentalError, type RentalErrorCode } from '../../lib/rentals/errors.js';
import { BodyRefused, MAX_JSON_DEPTH, jsonDepthExceeds, readBody } from '../../lib/http/body.js';

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
 * The JSON body validated against `schema`. An empty body counts as `{}` when `emptyAsObject`
 * (end rental: every field optional), otherwise as invalid.
 */
export async function readJson<T>(ctx: Koa.Context, schema: object, limit: number, emptyAsObject = false): Promise<T> {
  const raw = await readRaw(ctx, limit);
  // before parsing and validation, which must not see a depth the client chose
  if (jsonDepthExceeds(raw)) throw new RentalError('InvalidRequestBody', { detail: `body nested deeper than ${MAX_JSON_DEPTH} levels` });
  let value: unknown;
  if (raw.length === 0 || raw.toString('utf8').trim() === '') {
    if (!emptyAsObject) throw new RentalError('InvalidRequestBody');
    value = {};
  } else {
    try {
      value = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new RentalError('InvalidRequestBody');
    }
  }
  const validate = compile<T>(schema);
  if (!validate(value) || containsNul(value)) throw new RentalError('InvalidRequestBody');
  return value;
}

