/**
 * API keys of the partner rental API, the TOMP API and the insurer feed. Keys are stored as sha256;
 * a verified key is cached in process for 30 s (so a revocation takes effect everywhere within a
 * minute without a database round trip per request), an unknown key for a few seconds in a bounded
 * cache so that a flood of random keys costs neither memory nor a query each.
 */
import { NamedCache } from '../../core/cache.js';
import type { Clock } from '../../core/clock.js';
import { type Db, type Queryable } from '../../core/db.js';
import { sql } from '../../core/sql/typed.js';
import { generateApiKey, hashApiKey } from './secrets.js';

/** `ops`: the operator's own staff, for the console (api/console/); no partner API accepts it */
export type KeyScope = 'partner' | 'tomp' | 'insurance' | 'ops';

export const KEY_SCOPES: readonly KeyScope[] = ['partner', 'tomp', 'insurance', 'ops'];

export interface Principal {
  keyId: string;
  partnerId: string;
  partnerName: string;
  scope: KeyScope;
  rateLimitPerMinute: number;
  tripType: 'rider' | 'maas' | 'operator';
  tompPostponedCommit: boolean;
  /** null: the partner has no partner_zones rows, i.e. every zone */
  zones: string[] | null;
}

export interface VerifierOptions {
  /** how long a valid key is trusted without asking the database; default 30 s */
  cacheTtlMs?: number;
  /** how long an unknown key is remembered as unknown; default 5 s */
  negativeTtlMs?: number;
  /** bound of each cache (entries); default 10 000 */
  maxEntries?: number;
}

/** Keys longer than this are rejected without hashing: no real key is that long. */
const MAX_KEY_LENGTH = 256;

interface Lookup {
  hash: Buffer;
  scope: KeyScope;
}

/**
 * Two lru-caches on the app's clock: verified keys (TTL `cacheTtlMs`, never past the key's own
 * expiry) and unknown keys (TTL `negativeTtlMs`), each bounded separately so that a flood of random
 * keys cannot evict the real ones. Concurrent requests with one uncached key share one query (the
 * verified cache's fetch).
 */
export class ApiKeyVerifier {
  private readonly known: NamedCache<string, Principal, Lookup>;
  private readonly unknown: NamedCache<string, true>;
  /** a TTL of 0 means no caching (lru-cache's 0 would mean for ever) */
  private readonly keepKnown: boolean;

  constructor(db: Db, clock: Clock, opts: VerifierOptions = {}) {
    const ttl = opts.cacheTtlMs ?? 30_000;
    const negativeTtl = opts.negativeTtlMs ?? 5_000;
    this.keepKnown = ttl > 0;
    // lru-cache counts an entry stale once older than its ttl; an answer is not trusted *at* its bound
    const bound = (ms: number) => Math.max(1, ms - 1);
    const perf = { now: () => clock.now().getTime() };
    const max = opts.maxEntries ?? 10_000;
    this.unknown = new NamedCache<string, true>('api_keys_unknown', { max, ttl: bound(negativeTtl), ttlResolution: 0, perf });
    this.known = new NamedCache<string, Principal, Lookup>('api_keys', {
      max,
      ttl: bound(ttl),
      ttlResolution: 0,
      perf,
      fetchMethod: async (id, _stale, { options, context }) => {
        const now = clock.now();
        // the same statement records the use (at most once a minute per key: see AuthFindApiKey)
        const row = await db.maybeOne(sql('AuthFindApiKey'), [context.hash, context.scope, now]);
        if (!row) {
          if (negativeTtl > 0) this.unknown.set(id, true);
          return undefined;
        }
        // never trust a cached key past its own expiry
        if (row.expires_at) options.ttl = bound(Math.min(ttl, row.expires_at.getTime() - now.getTime()));
        return {
          keyId: row.key_id,
          partnerId: row.partner_id,
          partnerName: row.partner_name,
          scope: context.scope,
          rateLimitPerMinute: row.rate_limit_per_minute,
          tripType: row.trip_type,
          tompPostponedCommit: row.tomp_postponed_commit,
          zones: row.zones ?? null,
        };
      },
    });
  }

  /** The principal of a usable key of `scope`; undefined for unknown, revoked, expired or other-scope keys. */
  async verify(key: string, scope: KeyScope): Promise<Principal | undefined> {
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) return undefined;
    const hash = hashApiKey(key);
    const id = `${scope}:${hash.toString('base64')}`;
    if (this.unknown.get(id)) return undefined;
    const principal = await this.known.fetch(id, { context: { hash, scope } });
    if (!this.keepKnown) this.known.delete(id);
    return principal;
  }

  /** Forgets every cached answer (tests, or after an administrative revocation in this process). */
  clear(): void {
    this.known.clear();
    this.unknown.clear();
  }
}

/**
 * Stores a new key (generated unless `opts.key` is given, e.g. the demo keys) and returns it in
 * clear: the only time the clear key exists outside the caller.
 */
export async function createApiKey(
  db: Queryable,
  partnerId: string,
  scope: KeyScope,
  opts: { key?: string; label?: string; expiresAt?: Date | null } = {},
): Promise<{ id: string; key: string }> {
  if (!KEY_SCOPES.includes(scope)) throw new Error(`unknown key scope ${scope}`);
  const key = opts.key ?? generateApiKey(({ partner: 'pk', tomp: 'tk', insurance: 'ik', ops: 'ok' } as const)[scope]);
  if (key.length < 8 || key.length > MAX_KEY_LENGTH) throw new Error('api key must be 8-256 characters');
  // enough to recognise a key in a listing, never a meaningful part of it
  const prefix = key.slice(0, Math.min(10, Math.floor(key.length / 3)));
  const row = await db.one(sql('AuthInsertApiKey'), [partnerId, scope, hashApiKey(key), prefix, opts.label ?? '', opts.expiresAt ?? null]);
  return { id: row.id, key };
}

/**
 * Revokes a key: the one revoke path (the CLI, the console and key rotation come through here).
 * Undefined when it does not exist or was already revoked. Caches elsewhere expire within their TTL.
 */
export async function revokeApiKey(
  db: Queryable,
  keyId: string,
  at: Date,
): Promise<{ id: string; partner_id: string; scope: KeyScope; label: string } | undefined> {
  return db.maybeOne(sql('AuthRevokeApiKey'), [keyId, at]);
}
