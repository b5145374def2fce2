/**
 * Feed access tokens (OAuth 2.0 client_credentials, RFC 6749 §4.4). A token is a signed JWT (HS256)
 * that carries everything a feed route needs — client id, role, zone scope — so verifying one costs
 * no database round trip. Revocation is the one thing a signature cannot know; the routes check a
 * small in-process set of revoked clients (lib/feeds/clients.ts) after verifying.
 */
import { NamedCache } from '../../lib/core/cache.js';
import { createHmac, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors } from 'jose';
import type { Config } from '../../lib/core/config.js';
import type { Clock } from '../../lib/core/clock.js';
import { ROLES, type Role } from '../../lib/feeds/roles.js';

const ISSUER = 'feeds';
const AUDIENCE = 'feeds';

export interface FeedTokenClaims {
  /** the feed client id (`sub`) */
  clientId: string;
  role: Role;
  /** null: every zone */
  zones: string[] | null;
  /** seconds since the epoch */
  issuedAt: number;
  expiresAt: number;
  jti: string;
}

export type VerifyResult = { ok: true; claims: FeedTokenClaims } | { ok: false; reason: 'malformed' | 'invalid' | 'expired' };

// The signing secret also signs photo/receipt URLs: derive a key of our own so that a signature made
// for one purpose can never be replayed as the other.
const keys = new Map<string, Uint8Array>();
function tokenKey(secret: string): Uint8Array {
  let k = keys.get(secret);
  if (!k) {
    k = new Uint8Array(createHmac('sha256', secret).update('feed-access-token/v1').digest());
    keys.set(secret, k);
  }
  return k;
}

/** Signs an access token for `client` valid for `config.tokenTtlSeconds` from the clock's now. */
export async function issueFeedToken(
  config: Config,
  clock: Clock,
  client: { clientId: string; role: Role; zones: readonly string[] | null },
): Promise<{ accessToken: string; expiresIn: number; claims: FeedTokenClaims }> {
  const iat = Math.floor(clock.now().getTime() / 1000);
  const exp = iat + config.tokenTtlSeconds;
  const jti = randomUUID();
  const zones = client.zones === null ? null : [...client.zones];
  const accessToken = await new SignJWT({ role: client.role, zones })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(client.clientId)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(jti)
    .sign(tokenKey(config.signingSecret));
  return {
    accessToken,
    expiresIn: config.tokenTtlSeconds,
    claims: { clientId: client.clientId, role: client.role, zones, issuedAt: iat, expiresAt: exp, jti },
  };
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Verifies signature, issuer, audience and expiry against the clock (no clock tolerance: a token is
 * valid for exactly its lifetime). Never throws.
 */
export async function verifyFeedToken(config: Config, clock: Clock, token: string): Promise<VerifyResult> {
  if (token.length > 4096 || !JWT_SHAPE.test(token)) return { ok: false, reason: 'malformed' };
  try {
    const { payload } = await jwtVerify(token, tokenKey(config.signingSecret), {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
      currentDate: clock.now(),
      requiredClaims: ['sub', 'exp', 'iat', 'jti'],
    });
    const role = payload.role as Role;
    const zones = payload.zones;
    if (!ROLES.includes(role)) return { ok: false, reason: 'invalid' };
    if (zones !== null && !(Array.isArray(zones) && zones.every((z) => typeof z === 'string'))) return { ok: false, reason: 'invalid' };
    return {
      ok: true,
      claims: { clientId: payload.sub!, role, zones: zones, issuedAt: payload.iat!, expiresAt: payload.exp!, jti: payload.jti! },
    };
  } catch (err) {
    if (err instanceof errors.JWTExpired) return { ok: false, reason: 'expired' };
    return { ok: false, reason: 'invalid' };
  }
}

/**
 * Verified tokens of this process, keyed by the token string, so that a client's repeated requests
 * skip the HMAC check and the JWT parsing (jose's webcrypto path costs more than the rest of a cached
 * file request). Only successful verifications are kept, each until its `exp` by the clock: past
 * that, the token is verified again and reported expired. A hit is exactly what verifying would
 * answer, because a valid token's claims cannot change; revocation is not part of a token and stays
 * the caller's check (RevokedClients) on every request. Bounded (lru-cache): the least recently used goes first.
 */
export class FeedTokenVerifier {
  private readonly verified: NamedCache<string, FeedTokenClaims>;

  constructor(
    private readonly config: Config,
    private readonly clock: Clock,
    opts: { maxEntries?: number } = {},
  ) {
    this.verified = new NamedCache<string, FeedTokenClaims>('feed_tokens', { max: opts.maxEntries ?? 10_000 });
  }

  /**
   * The claims of `token` when it was verified before and has not expired by the clock; undefined
   * otherwise (call `verify`). Synchronous, for the hot path of the feed routes.
   */
  cached(token: string): FeedTokenClaims | undefined {
    const hit = this.verified.get(token);
    if (hit === undefined) return undefined;
    if (this.clock.now().getTime() < hit.expiresAt * 1000) return hit;
    this.verified.delete(token);
    return undefined;
  }

  async verify(token: string): Promise<VerifyResult> {
    const hit = this.cached(token);
    if (hit) return { ok: true, claims: hit };
    const res = await verifyFeedToken(this.config, this.clock, token);
    if (res.ok) this.verified.set(token, res.claims);
    return res;
  }

  /** Number of cached tokens (tests, metrics). */
  get size(): number {
    return this.verified.size;
  }
}
