/**
 * The one renderer of the partner rental API's errors: JSON:API error objects
 * `{"errors":[{"status":"400","code":"InvalidUserId","title":"Bad Request","detail":"invalid user id"}]}`.
 * RentalError renders as itself; a database outage as 503 (api/kit/outage.ts); anything else as a bare 500
 * `InternalServerError` that leaks nothing (the cause goes to the log).
 */
import type Koa from 'koa';
import { STATUS_CODES } from 'node:http';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import { isClientAborted } from '../kit/body.js';
import { isOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../kit/outage.js';
import { allowOf } from '../kit/route-miss.js';
import { AdmissionRefused } from '../kit/admission.js';
import { recordFault } from '../kit/fault.js';

function toRentalError(err: unknown): RentalError {
  if (err instanceof RentalError) return err;
  if (isOutage(err)) return new RentalError('ServiceUnavailable', { headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) }, cause: err });
  return new RentalError('InternalServerError', { cause: err });
}

/**
 * The refusal of admission control (api/kit/admission.ts): the request would have waited past its
 * budget; Retry-After is when the work ahead of it should be done. Not logged as an error (the
 * access line and http_requests_shed_total record it).
 */
export const overloaded = (refusal: AdmissionRefused): RentalError =>
  new RentalError('ServiceUnavailable', {
    detail: 'too many requests in progress; retry later',
    headers: { 'Retry-After': String(refusal.retryAfterSeconds) },
    cause: refusal,
  });

export function renderError(ctx: Koa.Context, err: unknown): void {
  // nobody left to answer: the outermost middleware records it (api/middleware/request-envelope.ts)
  if (isClientAborted(err)) throw err;
  const e = toRentalError(err);
  if (e.status >= 500 && !(e.cause instanceof AdmissionRefused)) recordFault(ctx, e.code === 'InternalServerError' ? err : (e.cause ?? err), { code: e.code });
  ctx.status = e.status;
  for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
  // RFC 9110 §15.5.6: every 405 names the allowed methods, the business 405s of the rental rules
  // (UserTooFarFromVehicle, ZoneIsSleeping ...) too: the methods of the route that was matched
  if (e.status === 405 && !ctx.response.get('Allow')) ctx.set('Allow', allowOf((ctx as { matched?: Array<{ methods: string[] }> }).matched));
  ctx.type = 'application/json';
  const error: Record<string, unknown> = { status: String(e.status), code: e.code, title: STATUS_CODES[e.status] ?? 'Error', detail: e.detail };
  if (e.meta) error.meta = e.meta;
  ctx.body = { ...e.members, errors: [error] };
}
