/**
 * X-Access-Token authentication and the per-key rate limit. 401: no key, or a key nobody knows
 * (or revoked/expired); 403: a valid key of another API (partner rental, insurer or ops key), named
 * in the detail; 429 with Retry-After once the key's per-minute budget (default 4000) is spent.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { TompError } from '../../lib/domain/tomp/errors.js';
import { apiKeyGate, apiOfScope } from '../kit/api-key-gate.js';

export { principalOf } from '../kit/api-key-gate.js';

export function tompAuth(app: AppContext): Koa.Middleware {
  return apiKeyGate(app, {
    scope: 'tomp',
    family: 'tomp',
    keyOf: (ctx) => ctx.get('x-access-token') || undefined,
    errors: {
      missing: () => new TompError(401, 'missing X-Access-Token header'),
      refused: () => new TompError(401, 'unknown, expired or revoked access token'),
      otherApi: (scope) => new TompError(403, `this access token does not give access to the TOMP API; it is a key of ${apiOfScope[scope]}`),
      rateLimited: (retryAfterSeconds) => new TompError(429, 'rate limit exceeded', { retryAfterSeconds }),
    },
  });
}
