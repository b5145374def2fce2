/**
 * The one error type of the feed hosts and its renderer. Every feed error goes out as the MDS error
 * body `{error, error_description, error_details}` (MDS 2.0 models/response/error.yaml), also on
 * GBFS, insurance and the legacy host, so a consumer needs one parser.
 */
import { recordFault } from '../kit/fault.js';
import { isOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../kit/outage.js';
import type Koa from 'koa';
import { requestLogOf } from '../kit/request-log.js';
import { isClientAborted } from '../kit/body.js';

export type FeedErrorCode =
  'invalid_token' | 'insufficient_scope' | 'bad_param' | 'not_found' | 'not_acceptable' | 'not_published' | 'service_unavailable' | 'internal_error';

export class FeedError extends Error {
  constructor(
    readonly status: number,
    readonly code: FeedErrorCode,
    readonly description: string,
    readonly details: string[] = [description],
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'FeedError';
  }
}

export const badParam = (description: string, ...details: string[]) => new FeedError(400, 'bad_param', description, details.length ? details : [description]);
export const notFound = (description: string) => new FeedError(404, 'not_found', description);

/** `WWW-Authenticate: Bearer` (RFC 6750 §3): error attributes only when a token was presented. */
export function unauthorized(description: string, tokenPresented: boolean): FeedError {
  const challenge = tokenPresented
    ? `Bearer realm="feeds", error="invalid_token", error_description="${description.replace(/["\\]/g, '')}"`
    : 'Bearer realm="feeds"';
  return new FeedError(401, 'invalid_token', description, [description], { 'WWW-Authenticate': challenge });
}

export function forbidden(description: string): FeedError {
  return new FeedError(403, 'insufficient_scope', description, [description], {
    'WWW-Authenticate': `Bearer realm="feeds", error="insufficient_scope"`,
  });
}

/** First in a feed router: renders FeedError, maps database outages to 503 (api/kit/outage.ts), hides everything else. */
export function feedErrors(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      let e: FeedError;
      // nobody left to answer: the outermost middleware records it (api/middleware/request-envelope.ts)
      if (isClientAborted(err)) throw err;
      if (err instanceof FeedError) e = err;
      else if (isOutage(err)) {
        requestLogOf(ctx)?.warn({ err: err.message }, 'database unavailable');
        e = new FeedError(503, 'service_unavailable', 'the service is temporarily unavailable', undefined, {
          'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS),
        });
      } else {
        recordFault(ctx, err);
        e = new FeedError(500, 'internal_error', 'internal server error');
      }
      ctx.status = e.status;
      for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'application/json';
      ctx.body = { error: e.code, error_description: e.description, error_details: e.details };
    }
  };
}
