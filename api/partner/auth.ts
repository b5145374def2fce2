/**
 * Authentication and rate limiting of the partner API. The key comes in `X-Auth-Token` or as
 * `Authorization: Bearer <key>` (some of the requirement's samples use the latter); it must be a
 * live key of scope `partner`. Each key has a budget per minute summed over every API process.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/context.js';
import { ApiKeyVerifier, type Principal } from '../../lib/auth/api-keys.js';
import { RateLimiter } from '../../lib/ratelimit.js';
import { RentalError } from '../../lib/rentals/errors.js';
import { metrics } from '../../lib/metrics.js';

export function presentedKey(ctx: Koa.Context): string | undefined {
  const token = ctx.get('x-auth-token');
  if (token) return token.trim();
  const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
  return m?.[1];
}

export function authenticate(app: AppContext): Koa.Middleware {
  const verifier = new ApiKeyVerifier(app.db, app.clock);
  const limiter = new RateLimiter(app.db, app.clock);
  return async (ctx, next) => {
    const key = presentedKey(ctx);
    const principal = key ? await verifier.verify(key, 'partner') : undefined;
    if (!principal) throw new RentalError('Unauthorized', { headers: { 'WWW-Authenticate': 'Bearer realm="partner-api"' } });
    const rate = await limiter.hit(principal.keyId, principal.rateLimitPerMinute);
    ctx.set('X-RateLimit-Limit', String(principal.rateLimitPerMinute));
    ctx.set('X-RateLimit-Remaining', String(rate.remaining));
    if (!rate.allowed) metrics.rateLimited.inc({ family: 'partner' });
    if (!rate.allowed) throw new RentalError('RateLimitExceeded', { headers: { 'Retry-After': String(rate.retryAfterSeconds) } });
    ctx.state.principal = principal;
    ctx.state.log = ctx.state.log?.child({ partnerId: principal.partnerId, keyId: principal.keyId });
    await next();
  };
}

export function principalOf(ctx: Koa.Context): Principal {
  return ctx.state.principal as Principal;
}
