/**
 * Operational routes of the main host: liveness, readiness and Prometheus metrics. Liveness says
 * only that the process answers; readiness checks what a request needs (database reachable,
 * migrations current, object store reachable) with a short timeout, so a load balancer takes a
 * broken instance out instead of sending it traffic.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import type { AppContext } from '../../lib/context.js';
import { migrationsCurrent } from '../../lib/migrate.js';
import { registry } from '../../lib/metrics.js';

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
      withTimeout(migrationsCurrent(ctx.db), 2000, 'database')
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

  router.get('/metrics', async (koa) => {
    koa.type = registry.contentType;
    koa.body = await registry.metrics();
  });

  return router.routes() as Koa.Middleware;
}
