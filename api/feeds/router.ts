/**
 * The feed routes of the main host: the token endpoint, MDS 2.0, GBFS 3.0 (/v1/partner-apis/...),
 * GBFS 2.2 (/gbfs/v2/...) and insurance. Requests outside these prefixes pass through untouched;
 * inside them every answer, errors included, is in the feed error format.
 */
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { buildFeedDeps } from './auth.js';
import { feedErrors, FeedError, notFound } from './errors.js';
import { tokenHandler } from './token.js';
import { mdsRoutes } from './mds.js';
import { gbfsRoutes } from './gbfs.js';
import { insuranceRoutes } from './insurance.js';

const PREFIXES = ['/v1/partner-apis/', '/gbfs/v2/'];

/** Runs `router` behind the feed error renderer; unmatched paths → 404, wrong methods → 405. */
export function feedHost(router: Router): Koa.Middleware {
  const routes = router.routes() as unknown as Koa.Middleware;
  const errors = feedErrors();
  return (ctx) =>
    errors(ctx, async () => {
      await routes(ctx, async () => {
        const allowed = new Set<string>();
        for (const layer of (ctx as any).matched ?? []) for (const m of layer.methods as string[]) allowed.add(m);
        if (allowed.size) {
          throw new FeedError(405, 'bad_param', `method ${ctx.method} not allowed`, [`allowed: ${[...allowed].join(', ')}`], { Allow: [...allowed].join(', ') });
        }
        throw notFound('no such feed endpoint');
      });
    });
}

export function feedRoutes(ctx: AppContext): Koa.Middleware {
  const deps = buildFeedDeps(ctx);
  const router = new Router();
  router.post('/v1/partner-apis/token', tokenHandler(deps));
  mdsRoutes(router, deps);
  gbfsRoutes(router, deps);
  insuranceRoutes(router, deps);
  const host = feedHost(router);
  return (koa, next) => (PREFIXES.some((p) => koa.path.startsWith(p)) ? host(koa, next) : next());
}
