/**
 * The one renderer of the partner rental API's errors: JSON:API error objects
 * `{"errors":[{"status":"400","code":"InvalidUserId","title":"Bad Request","detail":"invalid user id"}]}`.
 * RentalError renders as itself; a database outage as 503; anything else as a bare 500
 * `InternalServerError` that leaks nothing (the cause goes to the log).
 */
import type Koa from 'koa';
import { STATUS_CODES } from 'node:http';
import { RentalError } from '../../lib/rentals/errors.js';

export function toRentalError(err: unknown): RentalError {
  if (err instanceof RentalError) return err;
  if ((err as { kind?: string })?.kind === 'unavailable') return new RentalError('ServiceUnavailable', { headers: { 'Retry-After': '5' }, cause: err });
  return new RentalError('InternalServerError', { cause: err });
}

export function renderError(ctx: Koa.Context, err: unknown): void {
  const e = toRentalError(err);
  if (e.status >= 500) ctx.state.log?.error({ err: e.code === 'InternalServerError' ? err : (e.cause ?? err), code: e.code }, 'partner api error');
  ctx.status = e.status;
  for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
  ctx.type = 'application/json';
  const error: Record<string, unknown> = { status: String(e.status), code: e.code, title: STATUS_CODES[e.status] ?? 'Error', detail: e.detail };
  if (e.meta) error.meta = e.meta;
  ctx.body = { errors: [error] };
}
