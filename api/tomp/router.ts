/**
 * The TOMP 1.6.1 subset under /edge/tomp (docs/tomp-api.md). Order of checks for every request
 * under the prefix: unknown path → 404 and known path with another method → 405 (before auth, so a
 * typo is not reported as a key problem), then X-Access-Token (401/403), the rate limit (429), the
 * route. Every error is a TOMP error object `{status, title, detail}`.
 */
import { allowOf, routeMiss } from '../../lib/http/route-miss.js';
import type Koa from 'koa';
import { Router } from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { TompError } from '../../lib/tomp/errors.js';
import { admissionFor, type Admission } from '../../lib/http/admission.js';
import { mountEndpoints } from '../../lib/http/endpoints.js';
import { preferredLanguage, renderErrors } from './http.js';
import { tompKit } from './endpoint.js';
import { TOMP_ENDPOINTS } from './endpoints.js';

export const TOMP_PREFIX = '/edge/tomp';

export function tompRoutes(ctx: AppContext, admission: Admission = admissionFor(ctx.config)): Koa.Middleware {
  // trailing slashes are not significant: /support and /support/ (the spec's path) are one route
  const router = new Router({ prefix: TOMP_PREFIX, strict: false });
  mountEndpoints(router, TOMP_ENDPOINTS, ctx, tompKit(ctx, admission));

  const errors = renderErrors(ctx.log);
  const routes = router.routes();

  return async (koa, next) => {
    if (koa.path !== TOMP_PREFIX && !koa.path.startsWith(`${TOMP_PREFIX}/`)) return next();
    await errors(koa, async () => {
      const match = router.match(koa.path, koa.method);
      if (!match.route) {
        const allow = allowOf(match.path);
        // OPTIONS on a known path answers its methods
        if (allow && koa.method === 'OPTIONS') {
          koa.status = 204;
          koa.set('Allow', allow);
          return;
        }
        routeMiss(match.path, {
          notFound: () => new TompError(404, `no such endpoint: ${koa.method} ${koa.path}`),
          notAllowed: (allowed) => new TompError(405, `method ${koa.method} not allowed here`, { allow: allowed }),
        });
      }
      await routes(koa as any, async () => undefined);
      // TOMP marks Content-Language as a required header of its responses
      if (koa.status < 300 && !koa.response.get('Content-Language')) koa.set('Content-Language', preferredLanguage(koa.get('accept-language')));
    });
  };
}
