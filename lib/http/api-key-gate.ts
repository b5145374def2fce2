/**
 * The one API-key gate of the key-authenticated families (partner rental API, TOMP, the operator
 * console): the key of the request, verified for the family's scope (lib/auth/api-keys.ts), and
 * (partner, TOMP) the key's per-minute budget summed over every API process (lib/ratelimit.ts), with
 * X-RateLimit-Limit / X-RateLimit-Remaining on every answer. The principal is left in
 * `ctx.state.principal` and on the request's log line. Each family says where its key comes from
 * and supplies its own error objects, so the body stays in its format.
 */
import type Koa from 'koa';
import type { AppContext } from '../context.js';
import { ApiKeyVerifier, type KeyScope, type Principal } from '../auth/api-keys.js';
import { RateLimiter } from '../ratelimit.js';
import { metrics } from '../metrics.js';

export interface ApiKeyGate {
  scope: KeyScope;
  /** the label of http_rate_limited_total */
  family: string;
  /** the key the request presents, in the family's headers */
  keyOf(ctx: Koa.Context): string | undefined;
  errors: {
    missing(): Error;
    /** unknown, expired or revoked, or of a scope that opens nothing here */
    refused(): Error;
    /** a live key of one of `otherScopes`: a key of another API (default: refused) */
    otherApi?(): Error;
    /** the key's budget is spent; without it the family's keys are not rate-limited (the console's) */
    rateLimited?(retryAfterSeconds: number): Error;
  };
  otherScopes?: readonly KeyScope[];
}

export function apiKeyGate(app: AppContext, gate: ApiKeyGate): Koa.Middleware {
  const verifier = new ApiKeyVerifier(app.db, app.clock);
  const limiter = new RateLimiter(app.db, app.clock);
  return async (ctx, next) => {
    const key = gate.keyOf(ctx);
    if (!key) throw gate.errors.missing();
    const principal = await verifier.verify(key, gate.scope);
    if (!principal) {
      if (gate.errors.otherApi) {
        for (const scope of gate.otherScopes ?? []) if (await verifier.verify(key, scope)) throw gate.errors.otherApi();
      }
      throw gate.errors.refused();
    }
    if (gate.errors.rateLimited) {
      const rate = await limiter.hit(principal.keyId, principal.rateLimitPerMinute);
      ctx.set('X-RateLimit-Limit', String(principal.rateLimitPerMinute));
      ctx.set('X-RateLimit-Remaining', String(rate.remaining));
      if (!rate.allowed) {
        metrics.rateLimited.inc({ family: gate.family });
        throw gate.errors.rateLimited(rate.retryAfterSeconds);
      }
    }
    ctx.state.principal = principal;
    ctx.state.log = ctx.state.log?.child({ partnerId: principal.partnerId, keyId: principal.keyId });
    await next();
  };
}

/** A key sent as `Authorization: Bearer <key>`; undefined otherwise. */
export function bearerKey(ctx: Koa.Context): string | undefined {
  return /^Bearer[ ]+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
}

export const principalOf = (ctx: Koa.Context): Principal => ctx.state.principal as Principal;
