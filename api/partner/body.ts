/**
 * Request bodies of the partner API, read with a size limit (413 before buffering more than the
 * limit) and parsed strictly: malformed JSON, a non-object, wrong types and unknown fields are all
 * 400 InvalidRequestBody.
 */
import type Koa from 'koa';
import { compile, containsNul } from '../../lib/validate.js';
import { RentalError, type RentalErrorCode } from '../../lib/rentals/errors.js';

/** The raw body, at most `limit` bytes; `tooLarge` is the error code of an oversized body. */
export async function readRaw(ctx: Koa.Context, limit: number, tooLarge: RentalErrorCode = 'RequestTooLarge'): Promise<Buffer> {
  const tooBig = () => new RentalError(tooLarge, { status: 413, detail: `body exceeds ${limit} bytes` });
  const declared = Number(ctx.get('content-length') || NaN);
  if (Number.isFinite(declared) && declared > limit) {
    ctx.req.resume(); // discard, so the connection can answer
    throw tooBig();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      ctx.req.resume();
      throw tooBig();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The JSON body validated against `schema`. An empty body counts as `{}` when `emptyAsObject`
 * (end rental: every field optional), otherwise as invalid.
 */
export async function readJson<T>(ctx: Koa.Context, schema: object, limit: number, emptyAsObject = false): Promise<T> {
  const raw = await readRaw(ctx, limit);
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

