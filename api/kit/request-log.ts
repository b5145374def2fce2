/**
 * The request's own logger on `ctx.state`: created lazily by the request envelope
 * (api/middleware/request-envelope.ts), given more ids by a family's gate, read by every part of the
 * API that logs for a request.
 */
import type Koa from 'koa';
import type { Logger } from '../../lib/core/log.js';

/**
 * The request's logger (a child carrying its request id, set by api/middleware/request-envelope.ts,
 * with the ids a family's gate adds: bindRequestLog); undefined on an app built without the
 * envelope. Koa types `ctx.state` as `any`: this is the one place that says what `ctx.state.log`
 * holds.
 */
export const requestLogOf = (ctx: Pick<Koa.Context, 'state'>): Logger | undefined => ctx.state.log as Logger | undefined;

/**
 * Makes `ctx.state.log` the child of `log` with `bindings`, created on first use: most requests
 * log nothing but their access line, which is written only at info, and a pino child costs the
 * serialisation of its bindings (at 2 × the capacity, BENCH=partner-api, the children made for
 * requests that logged nothing took 0.78 s of the API's 26.6 s of CPU). Bindings added before
 * that first use go into the one child; after it, into a child of it.
 */
export function lazyRequestLog(ctx: Pick<Koa.Context, 'state'>, log: Logger, bindings: Record<string, unknown>): void {
  let child: Logger | undefined;
  Object.defineProperty(ctx.state, 'log', {
    configurable: true,
    enumerable: true,
    get: () => (child ??= log.child(bindings)),
  });
  Object.defineProperty(ctx.state, 'logBindings', {
    configurable: true,
    enumerable: false,
    value: (more: Record<string, unknown>) => {
      if (child) child = child.child(more);
      else Object.assign(bindings, more);
    },
  });
}

/** Adds ids to the request's logger (a family's gate: the partner and key), without creating it. */
export function bindRequestLog(ctx: Pick<Koa.Context, 'state'>, more: Record<string, unknown>): void {
  const bind = ctx.state.logBindings as ((more: Record<string, unknown>) => void) | undefined;
  bind?.(more);
}
