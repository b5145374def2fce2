/**
 * Outermost middleware of every host: a request id, one access-log line per request (credentials
 * redacted), and the last line of defence for errors. Each API family renders its own documented
 * error format further in; anything that still escapes becomes a bare 500 that leaks nothing.
 */
import type Koa from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../lib/log.js';
import { redactUrl } from '../../lib/log.js';
import { metrics } from '../../lib/metrics.js';

export function safety(log: Logger, host = 'main'): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = (ctx.get('x-request-id') || '').replace(/[^A-Za-z0-9._-]/g, '').slice(0, 64) || randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } catch (err) {
      const e = err as { status?: number; expose?: boolean; message?: string };
      const status = typeof e.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : 500;
      if (status >= 500) ctx.state.log.error({ err }, 'unhandled error');
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = { status, error: status >= 500 ? 'internal server error' : e.expose && e.message ? e.message : 'request failed' };
    } finally {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      // label by the matched route pattern, never the raw path (ids would explode cardinality)
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? (ctx.status === 404 ? 'unmatched' : 'other');
      const labels = { host, method: ctx.method, route: String(route), status: String(ctx.status) };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, ms / 1000);
      ctx.state.log[ctx.status >= 500 ? 'error' : 'info']({ method: ctx.method, url: redactUrl(ctx.originalUrl), status: ctx.status, ms }, 'request');
    }
  };
}
