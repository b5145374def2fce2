/**
 * Outermost middleware of every host: a request id, one access-log line per request (credentials
 * redacted), and the last line of defence for errors. Each API family renders its own documented
 * error format further in; anything that still escapes becomes a bare 500 that leaks nothing.
 */
import { faultOf, recordFault, type Fault } from '../kit/fault.js';
import type Koa from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../lib/core/log.js';
import { redactUrl } from '../../lib/core/log.js';
import { lazyRequestLog, requestLogOf } from '../kit/request-log.js';
import client from 'prom-client';
import { metrics } from '../../lib/core/metrics.js';
import { closeIfBodyUnread, isClientAborted } from '../kit/body.js';

type Series = { count: client.Counter.Internal; duration: client.Histogram.Internal<string> };

/** The request id of a request: the incoming X-Request-Id sanitized, else a random UUID. */
export function requestIdOf(incoming: string | string[] | undefined): string {
  return (
    String(incoming ?? '')
      .replace(/[^A-Za-z0-9._-]/g, '')
      .slice(0, 64) || randomUUID()
  );
}

/**
 * The metrics and access line of one host, shared by the outermost middleware and the pre-Koa hot
 * path (api/feeds/hot-path.ts), so that a request counts and logs the same whichever answers it.
 */
export interface RequestTelemetry {
  /**
   * Counts the request (`http_requests_total`, `http_request_duration_seconds`; labels host, method,
   * route pattern, status) and writes the access line when info is enabled (always for a 5xx).
   * `lineLog` is the logger of the line (default: a child with the request id); `fault`, what a
   * family recorded as the cause of a 5xx (api/kit/fault.ts): the line then carries it, at error.
   */
  finish(started: number, method: string, route: string, status: number, url: string, requestId: string, lineLog?: () => Logger, fault?: Fault): void;
}

export function requestTelemetry(log: Logger, host = 'main'): RequestTelemetry {
  // The metric children of each (method, route, status) are resolved once: on the hot path a
  // lookup by a short string key instead of prom-client hashing a label object twice per request.
  const series = new Map<string, Series>();
  const seriesOf = (method: string, route: string, status: number): Series => {
    const key = `${method} ${route} ${status}`;
    let s = series.get(key);
    if (!s) {
      const labels = { host, method, route, status: String(status) };
      s = { count: metrics.httpRequests.labels(labels), duration: metrics.httpDuration.labels(labels) };
      series.set(key, s);
    }
    return s;
  };
  const logEnabled = log.isLevelEnabled('info');
  return {
    finish(started, method, route, status, url, requestId, lineLog, fault) {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      const s = seriesOf(method, route, status);
      s.count.inc();
      s.duration.observe(ms / 1000);
      // a 503 is an answer the service chose (overload refused with Retry-After, a database outage
      // its family logs once, a GBFS file not written yet): counted in the metrics, logged like any
      // answer; every other 5xx is a fault and always logged at error
      const failed = fault !== undefined || (status >= 500 && status !== 503);
      if (logEnabled || failed) {
        const l = lineLog ? lineLog() : log.child({ requestId });
        if (failed) l.error({ ...fault, method, url: redactUrl(url), status, ms }, 'request failed');
        else l.info({ method, url: redactUrl(url), status, ms }, status === 499 ? 'request aborted by the client' : 'request');
      }
    },
  };
}

export function requestEnvelope(log: Logger, host = 'main'): Koa.Middleware {
  const telemetry = requestTelemetry(log, host);
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.get('x-request-id'));
    ctx.state.requestId = requestId;
    // the per-request child logger is made on first use: most requests only write the access line
    lazyRequestLog(ctx, log, { requestId });
    ctx.set('X-Request-Id', requestId);
    // 499 (the nginx convention): the client went away mid-body; not a server error in logs or metrics
    let aborted = false;
    try {
      await next();
    } catch (err) {
      if (isClientAborted(err)) {
        aborted = true;
        return;
      }
      const e = err as { status?: number; expose?: boolean; message?: string };
      const status = typeof e.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : 500;
      if (status >= 500) recordFault(ctx, err, { unhandled: true });
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = { status, error: status >= 500 ? 'internal server error' : e.expose && e.message ? e.message : 'request failed' };
    } finally {
      // label by the matched route pattern, never the raw path (ids would explode cardinality)
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? (ctx.status === 404 && !aborted ? 'unmatched' : 'other');
      if (!aborted) closeIfBodyUnread(ctx);
      telemetry.finish(
        started,
        ctx.method,
        String(route),
        aborted ? 499 : ctx.status,
        ctx.originalUrl,
        requestId,
        () => requestLogOf(ctx) ?? log.child({ requestId }),
        aborted ? undefined : faultOf(ctx),
      );
    }
  };
}
