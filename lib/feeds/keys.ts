/**
 * API keys of the feed clients (table feed_client_keys, migration 000320): `X-Access-Token: <key>`
 * on every feed route, beside the client's OAuth tokens. A key has no role or zones of its own: it
 * opens what its client opens, so revoking either stops it.
 *
 * Like the client standings (./clients.ts RevokedClients), every usable key is loaded in one
 * statement and the set refreshed when older than `refreshMs` by the clock (FEED_CREDENTIAL_REFRESH_MS,
 * 30 s), so a key check is a sha256 and a map lookup, never a query in the steady state, and a
 * revocation (of the key or of its client) takes effect in every process within one refresh. A key
 * not in the set is looked up once by its hash (a key created a moment ago works at once) and,
 * when unusable, remembered as such until the next refresh in a bounded cache, so repeating a bad
 * key costs no query. The keys served with are recorded (`last_used_at`) in one statement at each
 * refresh, not per request.
 */
import { NamedCache } from '../core/cache.js';
import type { Clock } from '../core/clock.js';
import type { Db, Queryable } from '../core/db.js';
import { sql } from '../core/sql/typed.js';
import { generateApiKey, hashApiKey } from '../domain/credentials/secrets.js';
import type { Role } from './roles.js';

/** What a verified key opens: its client's role and zones (null: every zone). */
export interface FeedKeyPrincipal {
  keyId: string;
  clientId: string;
  role: Role;
  zones: string[] | null;
}

/** No generated key is longer; a longer header is refused without hashing. */
const MAX_KEY_LENGTH = 256;

/** The lookup id of a presented key (base64 of its sha256), or undefined when it cannot be a key. */
export function feedKeyId(key: string | undefined): string | undefined {
  if (!key || key.length < 8 || key.length > MAX_KEY_LENGTH) return undefined;
  return hashApiKey(key).toString('base64');
}

export class FeedKeys {
  private readonly listing: NamedCache<'keys', Map<string, FeedKeyPrincipal>>;
  private readonly unusable: NamedCache<string, true>;
  /** key ids served with since the last refresh (their last use is written with it) */
  private used = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    opts: { refreshMs?: number; maxUnknown?: number } = {},
  ) {
    const ttl = opts.refreshMs ?? 30_000;
    const perf = { now: () => clock.now().getTime() };
    this.unusable = new NamedCache<string, true>('feed_keys_unknown', { max: opts.maxUnknown ?? 10_000, ttl, ttlResolution: 0, perf });
    this.listing = new NamedCache<'keys', Map<string, FeedKeyPrincipal>>('feed_keys', {
      max: 1,
      ttl,
      ttlResolution: 0,
      perf,
      fetchMethod: async () => {
        const now = clock.now();
        const used = [...this.used];
        this.used = new Set();
        const [rows] = await Promise.all([
          db.many(sql('FeedKeysUsable'), [now]),
          // a lost write only loses a last-use instant of the console's view
          used.length ? db.query(sql('FeedKeysTouch'), [used, now]).catch(() => undefined) : undefined,
        ]);
        this.unusable.clear();
        return new Map(rows.map((r) => [r.key_hash.toString('base64'), { keyId: r.id, clientId: r.client_id, role: r.role, zones: r.zones }]));
      },
    });
  }

  /** The principal of a usable key; undefined for an unknown or revoked key, or one of a revoked client. */
  async verify(key: string | undefined): Promise<FeedKeyPrincipal | undefined> {
    const id = feedKeyId(key);
    if (!id) return undefined;
    const keys = (await this.listing.fetch('keys'))!;
    let found = keys.get(id);
    if (!found && !this.unusable.get(id)) {
      const row = await this.db.maybeOne(sql('FeedKeyByHash'), [Buffer.from(id, 'base64'), this.clock.now()]);
      if (row?.usable) keys.set(id, (found = { keyId: row.id, clientId: row.client_id, role: row.role, zones: row.zones }));
      else this.unusable.set(id, true);
    }
    if (found) this.used.add(found.keyId);
    return found;
  }

  /**
   * The principal of the key with lookup id `id` when the loaded set is current and holds it;
   * undefined when `verify` has to decide. Synchronous, for the hot path. The object is the same
   * until the next refresh, so a caller may compare it by identity.
   */
  peek(id: string): FeedKeyPrincipal | undefined {
    const found = this.listing.get('keys')?.get(id);
    if (found) this.used.add(found.keyId);
    return found;
  }

  async refresh(): Promise<void> {
    await this.listing.fetch('keys', { forceRefresh: true });
  }
}

/** Stores a new key of `clientId` and returns it in clear: the only time it exists outside the caller. */
export async function createFeedKey(db: Queryable, clientId: string, label = ''): Promise<{ id: string; key: string; prefix: string }> {
  const key = generateApiKey('fk');
  // enough to recognise a key in a listing (the `fk_` and a few random characters), never a meaningful part of it
  const prefix = key.slice(0, 8);
  const row = await db.one(sql('FeedKeyInsert'), [clientId, hashApiKey(key), prefix, label]);
  return { id: row.id, key, prefix };
}

/**
 * Revokes a key (of `clientId` when given): undefined when there is no such active key. Every
 * process stops accepting it within one refresh of its FeedKeys.
 */
export async function revokeFeedKey(db: Queryable, keyId: string, at: Date, clientId: string | null = null) {
  return db.maybeOne(sql('FeedKeyRevoke'), [keyId, at, clientId]);
}

/** The keys of one client, or of every client (null): prefixes and dates, never a hash. */
export async function listFeedKeys(db: Queryable, clientId: string | null = null) {
  return db.many(sql('FeedKeysList'), [clientId]);
}
