/**
 * X-Access-Token authentication and the per-key rate limit. 401: no key, or a key nobody knows
 * (or revoked/expired); 403: a valid key of another API (partner rental or insurer key) that gives
 * no TOMP access; 429 with Retry-After once the key's per-minute budget (default 4000) is spent.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/context.js';
import { ApiKeyVerifier, type Principal } from '../../lib/auth/api-keys.js';
import { RateLimiter } from '../../lib/ratelimit.js';
import { TompError } from '../../lib/tomp/errors.js';
import { metrics } from '../../lib/metrics.js';

export function tompAuth(app: AppContext): Koa.Middleware {
  const verifier = new ApiKeyVerifier(app.db, app.clock);
  const limiter = new RateLimiter(app.db, app.clock);
  return async (ctx, next) => {
    const key = ctx.get('x-access-token');
    if (!key) throw new TompError(401, 'missing X-Access-Token header');
    const principal = await verifier.verify(key, 'tomp');
    if (!principal) {
      const other = (await verifier.verify(key, 'partner')) ?? (await verifier.verify(key, 'insurance'));
      if (other) throw new TompError(403, 'this access token does not give access to the TOMP API');
      throw new TompError(401, 'unknown, expired or revoked access token');
    }
    const rl = await limiter.hit(principal.keyId, principal.rateLimitPerMinute);
    ctx.set('X-RateLimit-Limit', String(principal.rateLimitPerMinute));
    ctx.set('X-RateLimit-Remaining', String(rl.remaining));
    if (!rl.allowed) metrics.rateLimited.inc({ family: 'tomp' });
    if (!rl.allowed) throw new TompError(429, 'rate limit exceeded', { retryAfterSeconds: rl.retryAfterSeconds });
    ctx.state.principal = principal;
    await next();
  };
}

export const principalOf = (ctx: Koa.Context): Principal => ctx.state.principal as Principal;
