/**
 * Authentication and rate limiting of the partner API. The key comes in `X-Auth-Token` or as
 * `Authorization: Bearer <key>` (some of the requirement's samples use the latter); it must be a
 * live key of scope `partner`. Each key has a budget per minute summed over every API process.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import { apiKeyGate, apiOfScope, bearerKey } from '../kit/api-key-gate.js';

export { principalOf } from '../kit/api-key-gate.js';

function presentedKey(ctx: Koa.Context): string | undefined {
  const token = ctx.get('x-auth-token');
  if (token) return token.trim();
  return bearerKey(ctx);
}

export function authenticate(app: AppContext): Koa.Middleware {
  const unauthorized = () => new RentalError('Unauthorized', { headers: { 'WWW-Authenticate': 'Bearer realm="partner-api"' } });
  return apiKeyGate(app, {
    scope: 'partner',
    family: 'partner',
    keyOf: presentedKey,
    errors: {
      missing: unauthorized,
      refused: unauthorized,
      otherApi: (scope) =>
        new RentalError('Forbidden', { detail: `this key does not give access to the partner rental API; it is a key of ${apiOfScope[scope]}` }),
      rateLimited: (retryAfterSeconds) => new RentalError('RateLimitExceeded', { headers: { 'Retry-After': String(retryAfterSeconds) } }),
    },
  });
}
