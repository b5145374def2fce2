/**
 * OAuth 2.0 clients of the feeds (table feed_clients): authentication for the token endpoint,
 * creation for the CLI and the seed, and the in-process revocation set the feed routes consult
 * after verifying a token's signature.
 */
import { NamedCache } from '../core/cache.js';
import type { Db, Queryable } from '../core/db.js';
import { sql } from '../core/sql/typed.js';
import type { Clock } from '../core/clock.js';
import { ROLES, type Role } from './roles.js';
import { createHmac, randomBytes } from 'node:crypto';
import { hashSecret, verifySecret, generateSecret } from '../domain/credentials/secrets.js';

export interface FeedClient {
  clientId: string;
  role: Role;
  /** null: every zone */
  zones: string[] | null;
  label: string;
}

const CLIENT_ID = /^[A-Za-z0-9._-]{1,128}$/;

// Checked against when the client id is unknown, so that an unknown id and a wrong secret take the
// same time (no client-id enumeration by timing). Built lazily: scrypt costs a few milliseconds.
let dummyHash: Promise<string> | undefined;

/**
 * Right secrets already checked by this process, so that a client renewing its token every 15
 * minutes costs one scrypt per process and secret rather than one per token (a burst of clients
 * renewing at once is then answered at once). The key is an HMAC, under a random key of this process,
 * of the stored hash and the presented secret: no secret is held, a rotated secret (a new stored
 * hash) is checked again, and only a right secret can ever find an entry, so a guesser gains nothing.
 */
const verified = new NamedCache<string, true>('feed_client_secrets', { max: 10_000, ttl: 3_600_000 });
const verifiedKey = randomBytes(32);
const verifiedId = (stored: string, secret: string) => createHmac('sha256', verifiedKey).update(stored).update('\0').update(secret).digest('base64');

/**
 * The client when `clientId` exists, is not revoked (as of `now`) and `secret` matches; otherwise
 * undefined. Constant-time in the secret; the same cost for unknown ids.
 */
export async function authenticateFeedClient(
  db: Queryable,
  clientId: string,
  secret: string,
  now: Date,
  /** runs each secret check; the token endpoint passes its concurrency bound (api/feeds/token-guard.ts) */
  gate: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Promise<FeedClient | undefined> {
  const row = CLIENT_ID.test(clientId) ? await db.maybeOne(sql('FeedClientById'), [clientId]) : undefined;
  if (!row) {
    dummyHash ??= hashSecret('not-a-client-secret');
    const dummy = await dummyHash;
    await gate(() => verifySecret(secret, dummy));
    return undefined;
  }
  const id = verifiedId(row.secret_hash, secret);
  const ok = verified.has(id) || (await gate(() => verifySecret(secret, row.secret_hash)));
  if (!ok) return undefined;
  verified.set(id, true);
  if (row.revoked_at && row.revoked_at <= now) return undefined;
  // the console's Credentials view shows when a client last authenticated (once per token issued)
  await db.query(sql('FeedClientTouch'), [row.client_id, now]);
  return { clientId: row.client_id, role: row.role, zones: row.zones, label: row.label };
}

/** Creates a client; returns the secret once (only its scrypt hash is stored). */
export async function createFeedClient(
  db: Queryable,
  input: { clientId: string; role: Role; zones?: string[] | null; secret?: string; label?: string },
): Promise<{ clientId: string; secret: string }> {
  if (!CLIENT_ID.test(input.clientId)) throw new Error(`invalid client id ${JSON.stringify(input.clientId)}`);
  if (!ROLES.includes(input.role)) throw new Error(`invalid role ${JSON.stringify(input.role)}`);
  const secret = input.secret ?? generateSecret();
  await db.query(sql('FeedClientInsert'), [input.clientId, await hashSecret(secret), input.role, input.zones ?? null, input.label ?? '']);
  return { clientId: input.clientId, secret };
}

/** Marks a client revoked at `at`; its tokens stop working within one refresh of RevokedClients. */
export async function revokeFeedClient(db: Queryable, clientId: string, at: Date): Promise<boolean> {
  const res = await db.query(sql('FeedClientRevoke'), [clientId, at]);
  return (res.rowCount ?? 0) > 0;
}

export type ClientStanding = 'active' | 'revoked' | 'unknown';

/**
 * The standing of every feed client, loaded with one query for all and refreshed when older than
 * `refreshMs` (default 30 s) by the clock, so a revocation takes effect within 60 s in every process
 * without a query per request. A token is only as good as its client: one whose client id is not in
 * the table (deleted, or never created) is refused like a revoked one. An id not in the loaded set
 * is looked up once by primary key (a client created a moment ago works at once) and the answer
 * kept until the next refresh; only the holder of the signing secret can present such ids, so this
 * costs nothing in normal traffic. Concurrent callers share one refresh.
 */
export class RevokedClients {
  /**
   * The standings as one lru-cache entry (client id → revoked; `undefined`: looked up and absent),
   * with the app's clock as its time: TTL `refreshMs`, one query for concurrent loads.
   */
  private readonly listing: NamedCache<'standings', Map<string, boolean | undefined>>;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    opts: { refreshMs?: number } = {},
  ) {
    this.listing = new NamedCache<'standings', Map<string, boolean | undefined>>('feed_client_standings', {
      max: 1,
      ttl: opts.refreshMs ?? 30_000,
      ttlResolution: 0,
      perf: { now: () => clock.now().getTime() },
      fetchMethod: async () => {
        const rows = await db.many(sql('FeedClientStandings'), [clock.now()]);
        // revoked is null only for a null instant: not revoked
        return new Map<string, boolean | undefined>(rows.map((r) => [r.client_id, r.revoked === true]));
      },
    });
  }

  async standing(clientId: string): Promise<ClientStanding> {
    const standings = (await this.listing.fetch('standings'))!;
    if (!standings.has(clientId)) {
      const row = await this.db.maybeOne(sql('FeedClientStanding'), [clientId, this.clock.now()]);
      standings.set(clientId, row ? row.revoked === true : undefined);
    }
    const revoked = standings.get(clientId);
    return revoked === undefined ? 'unknown' : revoked ? 'revoked' : 'active';
  }

  /**
   * The standing when the loaded set is current and knows the client; undefined when `standing`
   * has to decide (a refresh is due, or the client is not in the set). Synchronous, for the hot path.
   */
  peek(clientId: string): ClientStanding | undefined {
    const standings = this.listing.get('standings');
    if (!standings?.has(clientId)) return undefined;
    const revoked = standings.get(clientId);
    return revoked === undefined ? 'unknown' : revoked ? 'revoked' : 'active';
  }

  /** True unless the client exists and is not revoked. */
  async isRevoked(clientId: string): Promise<boolean> {
    return (await this.standing(clientId)) !== 'active';
  }

  async refresh(): Promise<void> {
    await this.listing.fetch('standings', { forceRefresh: true });
  }
}
