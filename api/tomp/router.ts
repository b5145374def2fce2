/**
 * The TOMP 1.6.1 subset under /edge/tomp (docs/tomp-api.md), nested in the host's root router
 * (api/app.ts). Order of checks for every request under the prefix: unknown path → 404 and known
 * path with another method → 405 (before auth, so a typo is not reported as a key problem: a route
 * runs its auth only once path and method matched), then X-Access-Token (401/403), the rate limit
 * (429), the route. Every error is a TOMP error object `{status, title, detail}`.
 */
import { allowOf, routeMiss, type RouteFamily } from '../kit/route-miss.js';
import type Koa from 'koa';
import { Router } from '@koa/router';
import type { AppContext } from '../../lib/domain/context.js';
import { TompError } from '../../lib/domain/tomp/errors.js';
import { admissionFor, type Admission } from '../kit/admission.js';
import { mountEndpoints } from '../kit/endpoints.js';
import { renderErrors } from './http.js';
import { tompKit } from './endpoint.js';
import { TOMP_ENDPOINTS } from './endpoints.js';

export const TOMP_PREFIX = '/edge/tomp';

export function tompRoutes(ctx: AppContext, admission: Admission = admissionFor(ctx.config)): RouteFamily {
  // trailing slashes are not significant: /support and /support/ (the spec's path) are one route
  const router = new Router({ prefix: TOMP_PREFIX, strict: false });
  mountEndpoints(router, TOMP_ENDPOINTS, ctx, tompKit(ctx, admission));

  const errors = renderErrors(ctx.log);
  const miss: Koa.Middleware = async (koa) => {
    const layers = router.match(koa.path, koa.method).path;
    const allow = allowOf(layers);
    // OPTIONS on a known path answers its methods
    if (allow && koa.method === 'OPTIONS') {
      koa.status = 204;
      koa.set('Allow', allow);
      return;
    }
    await errors(koa, () =>
      routeMiss(layers, {
        notFound: () => new TompError(404, `no such endpoint: ${koa.method} ${koa.path}`),
        notAllowed: (allowed) => new TompError(405, `method ${koa.method} not allowed here`, { allow: allowed }),
      }),
    );
  };
  return { name: 'TOMP', routes: router.routes() as unknown as Koa.Middleware, prefixes: [TOMP_PREFIX], miss };
}
