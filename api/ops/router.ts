/**
 * Operational routes of the main host: liveness, readiness, and Prometheus metrics only behind
 * METRICS_TOKEN (otherwise on their own loopback listener, lib/core/metrics-listener.ts). Liveness says
 * only that the process answers; readiness checks what a request needs (database reachable,
 * migrations current, object store reachable) with a short timeout, so a load balancer takes a
 * broken instance out instead of sending it traffic.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { migrationsCurrent } from '../../lib/core/migrate.js';
import { HOURLY_FEEDS } from '../../lib/feeds/publications.js';
import { registry } from '../../lib/core/metrics.js';
import { serveMetrics } from '../../lib/core/metrics-listener.js';
import { timingSafeEqual } from 'node:crypto';

const withTimeout = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), ms).unref())]);

export function opsRoutes(ctx: AppContext): Koa.Middleware {
  const router = new Router();

  router.get('/healthz', (koa) => {
    koa.body = { status: 'ok' };
  });

  router.get('/readyz', async (koa) => {
    const checks: Record<string, string> = {};
    await Promise.all([
      withTimeout(migrationsCurrent(ctx.db, HOURLY_FEEDS), 2000, 'database')
        .then((current) => {
          checks.database = 'ok';
          checks.migrations = current ? 'ok' : 'pending';
        })
        .catch(() => {
          checks.database = 'unreachable';
        }),
      withTimeout(ctx.store.check(), 2000, 'store')
        .then(() => {
          checks.store = 'ok';
        })
        .catch(() => {
          checks.store = 'unreachable';
        }),
    ]);
    const ready = checks.database === 'ok' && checks.migrations === 'ok' && checks.store === 'ok';
    koa.status = ready ? 200 : 503;
    koa.body = { status: ready ? 'ready' : 'not ready', checks };
  });

  // the public host serves metrics only with METRICS_TOKEN set, and only to its bearer; otherwise
  // they live on the metrics listener (lib/core/metrics-listener.ts, METRICS_HOST:METRICS_PORT)
  const token = ctx.config.metrics.token;
  if (token) {
    const expected = Buffer.from(`Bearer ${token}`);
    router.get(
      '/metrics',
      async (koa, next) => {
        const given = Buffer.from(koa.get('Authorization'));
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          koa.status = 401;
          koa.set('WWW-Authenticate', 'Bearer realm="metrics"');
          koa.body = { status: 401, error: 'metrics require Authorization: Bearer <METRICS_TOKEN>' };
          return;
        }
        await next();
      },
      serveMetrics(registry),
    );
  }

  return router.routes() as Koa.Middleware;
}
