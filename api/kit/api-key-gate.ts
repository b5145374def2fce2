/**
 * The one API-key gate of the key-authenticated families (partner rental API, TOMP, the operator
 * console): the key of the request, verified for the family's scope (lib/domain/credentials/api-keys.ts), and
 * (partner, TOMP) the key's per-minute budget summed over every API process (api/kit/ratelimit.ts), with
 * X-RateLimit-Limit / X-RateLimit-Remaining on every answer. The principal is left in
 * `ctx.state.principal` and on the request's log line. Each family says where its key comes from
 * and supplies its own error objects, so the body stays in its format.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { ApiKeyVerifier, KEY_SCOPES, type KeyScope, type Principal } from '../../lib/domain/credentials/api-keys.js';
import { RateLimiter } from './ratelimit.js';
import { metrics } from '../../lib/core/metrics.js';
import { bindRequestLog } from './request-log.js';

export interface ApiKeyGate {
  scope: KeyScope;
  /** the label of http_rate_limited_total */
  family: string;
  /** the key the request presents, in the family's headers */
  keyOf(ctx: Koa.Context): string | undefined;
  errors: {
    missing(): Error;
    /** unknown, expired or revoked */
    refused(): Error;
    /** a live key of another API: a 403 that names the API the key is for (`apiOfScope`) */
    otherApi(scope: KeyScope): Error;
    /** the key's budget is spent; without it the family's keys are not rate-limited (the console's) */
    rateLimited?(retryAfterSeconds: number): Error;
  };
}

/** Where a key of each scope is used, for the 403 a key of another API gets (one wording in every family). */
export const apiOfScope: Record<KeyScope, string> = {
  partner: 'the partner rental API (/v1 and /v2, header X-Auth-Token)',
  tomp: 'the TOMP API (/edge/tomp, header X-Access-Token)',
  insurance: 'the insurance trips feed (/v1/partner-apis/insurance, header X-Access-Token)',
  ops: 'the operator console (/console)',
};

/** The scope of another API a key opens, when it is a live key of one; undefined for an unknown key. */
export async function otherScopeOf(verifier: ApiKeyVerifier, key: string, own: KeyScope): Promise<KeyScope | undefined> {
  for (const scope of KEY_SCOPES) if (scope !== own && (await verifier.verify(key, scope))) return scope;
  return undefined;
}

export function apiKeyGate(app: AppContext, gate: ApiKeyGate): Koa.Middleware {
  const verifier = new ApiKeyVerifier(app.db, app.clock);
  const limiter = new RateLimiter(app.db, app.clock);
  return async (ctx, next) => {
    const key = gate.keyOf(ctx);
    if (!key) throw gate.errors.missing();
    const principal = await verifier.verify(key, gate.scope);
    if (!principal) {
      // a live key of another API is not an unknown key: say which API it opens
      const other = await otherScopeOf(verifier, key, gate.scope);
      throw other ? gate.errors.otherApi(other) : gate.errors.refused();
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
    bindRequestLog(ctx, { partnerId: principal.partnerId, keyId: principal.keyId });
    await next();
  };
}

/** The credential of an `Authorization: Bearer <credential>` header (RFC 6750 §2.1); undefined otherwise. */
export function bearerOf(header: string | undefined): string | undefined {
  return header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1] : undefined;
}

/** A key sent as `Authorization: Bearer <key>`; undefined otherwise. */
export function bearerKey(ctx: Koa.Context): string | undefined {
  return bearerOf(ctx.get('authorization'));
}

export const principalOf = (ctx: Koa.Context): Principal => ctx.state.principal as Principal;
