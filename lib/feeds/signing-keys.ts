/**
 * The keys that sign every feed answer (RFC 9421 HTTP Message Signatures; api/feeds/signatures.ts
 * signs, docs/feed-signatures.md is the contract): Ed25519 key pairs in table feed_signing_keys
 * (migration 000310), the public half as a JWK whose `kid` is its RFC 7638 thumbprint, the private
 * half encrypted at rest under a key derived from SIGNING_SECRET.
 *
 * Lifecycle (`ops signing-keys rotate`): a key is created `next` and published in the JWKS before it
 * signs anything; a rotation makes it `active`, makes the active one `retiring` (published for the
 * overlap, default 7 days, so that answers it signed still verify) and creates the following `next`.
 * A retiring key past its overlap is out of the JWKS at once (the load query), and `retired` with its
 * private half deleted at the next rotation or listing. A fresh database gets its first active and
 * next keys on first need (`ensureSigningKeys`, from the API's first signed answer or the CLI).
 * Every change runs in one transaction under one advisory lock; the partial unique indexes keep one
 * active and one next whatever runs at once.
 *
 * API processes hold the keys in a `SigningKeyRing` that reloads every 30 s (as the revoked feed
 * clients do, lib/feeds/clients.ts): a rotation signs with the new key in every process within 30 s,
 * and until then the old one still verifies (it is retiring, so published).
 */
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { sealBytes, unsealBytes } from '../core/seal.js';
import type { Db, Queryable } from '../core/db.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { sql } from '../core/sql/typed.js';

/** An Ed25519 public key as a JWK (RFC 8037) in the JWKS. */
// a type alias, not an interface: it is a JSON parameter of the insert (an index-signature type)
export type SigningJwk = {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
};

export type SigningKeyState = 'next' | 'active' | 'retiring' | 'retired';

/** What signs in this process, and what the JWKS publishes. */
export interface SigningKeys {
  kid: string;
  privateKey: KeyObject;
  jwks: { keys: SigningJwk[] };
}

/** The default overlap of a rotation: how long the previous key stays in the JWKS. */
export const DEFAULT_OVERLAP_MS = 7 * 24 * 3_600_000;

/** The purpose the private keys are sealed for (lib/core/seal.ts), bound to their kid: a sealed key cannot be moved to another row. */
const SEAL_PURPOSE = 'feed-signing-key';
const seal = (secret: string, kid: string, plain: Buffer): Buffer => sealBytes(secret, SEAL_PURPOSE, plain, kid);

export class SigningKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SigningKeyError';
  }
}

function unseal(secret: string, kid: string, sealed: Buffer): Buffer {
  try {
    return unsealBytes(secret, SEAL_PURPOSE, sealed, kid);
  } catch {
    throw new SigningKeyError(
      `feed signing key ${kid} cannot be decrypted with this SIGNING_SECRET (was it changed?): run ops signing-keys rotate with the new secret`,
    );
  }
}

function opens(secret: string, kid: string, sealed: Buffer): boolean {
  try {
    unseal(secret, kid, sealed);
    return true;
  } catch {
    return false;
  }
}

/** RFC 7638 thumbprint of an Ed25519 JWK: its required members in lexical order, sha-256, base64url. */
function jwkThumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
}

function newKeyPair(secret: string): { kid: string; jwk: SigningJwk; sealed: Buffer } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' });
  const kid = jwkThumbprint(x!);
  const jwk: SigningJwk = { kty: 'OKP', crv: 'Ed25519', x: x!, kid, use: 'sig', alg: 'EdDSA' };
  return { kid, jwk, sealed: seal(secret, kid, privateKey.export({ format: 'der', type: 'pkcs8' })) };
}

async function insertKey(tx: Queryable, secret: string, state: 'next' | 'active', now: Date): Promise<string> {
  const k = newKeyPair(secret);
  await tx.query(sql('FeedSigningKeyInsert'), [k.kid, state, k.jwk, k.sealed, now]);
  return k.kid;
}

/** Under the lock: an active and a next key, whatever was there. Returns the kids created. */
async function ensureIn(tx: Queryable, secret: string, now: Date): Promise<string[]> {
  const states = new Set((await tx.many(sql('FeedSigningKeysStates'))).map((r) => r.state));
  const made: string[] = [];
  if (!states.has('active')) made.push(await insertKey(tx, secret, 'active', now));
  if (!states.has('next')) made.push(await insertKey(tx, secret, 'next', now));
  return made;
}

/** A fresh database's first keys (an active and a next); nothing when they exist. */
export async function ensureSigningKeys(db: Db, secret: string, now: Date): Promise<string[]> {
  return db.tx(async (tx) => {
    await tx.query(sql('FeedSigningKeysLock'));
    return ensureIn(tx, secret, now);
  });
}

export interface Rotation {
  /** the key that signs from now on (the previous next) */
  active: string;
  /** the previous active key, published until `retireAfter` */
  retiring: string | undefined;
  retireAfter: Date;
  /** the key created to be promoted by the following rotation */
  next: string;
  /** retiring keys whose overlap had ended */
  retired: string[];
}

/** One rotation: next → active, active → retiring for `overlapMs`, a new next; expired retiring keys retired. */
export async function rotateSigningKeys(db: Db, secret: string, now: Date, overlapMs = DEFAULT_OVERLAP_MS): Promise<Rotation> {
  if (!Number.isFinite(overlapMs) || overlapMs < 0) throw new SigningKeyError('the overlap must be a duration of 0 or more');
  const retireAfter = new Date(now.getTime() + overlapMs);
  return db.tx(async (tx) => {
    await tx.query(sql('FeedSigningKeysLock'));
    const retired = (await tx.many(sql('FeedSigningKeysRetireExpired'), [now])).map((r) => r.kid);
    // a next key sealed under another SIGNING_SECRET (the secret was changed) is replaced before it
    // is promoted: a rotation always leaves an active key this process can sign with
    const next = await tx.maybeOne(sql('FeedSigningKeyNextSealed'));
    if (next?.private_key && !opens(secret, next.kid, next.private_key)) await tx.query(sql('FeedSigningKeyDropNext'));
    // a database without keys: the first rotation makes them, then rotates as any other
    await ensureIn(tx, secret, now);
    const retiring = await tx.maybeOne(sql('FeedSigningKeyRetireActive'), [now, retireAfter]);
    const active = await tx.one(sql('FeedSigningKeyPromoteNext'), [now]);
    const following = await insertKey(tx, secret, 'next', now);
    return { active: active.kid, retiring: retiring?.kid, retireAfter, next: following, retired };
  });
}

export interface ListedKey {
  kid: string;
  state: SigningKeyState;
  published: boolean;
  created_at: Date;
  activated_at: Date | null;
  retiring_at: Date | null;
  retire_after: Date | null;
  retired_at: Date | null;
}

/**
 * Every key (next, active, retiring, retired; newest first in each), after retiring those past
 * their overlap; a fresh database's first keys are made first, so the list names the key that signs.
 */
export async function listSigningKeys(db: Db, secret: string, now: Date): Promise<ListedKey[]> {
  return db.tx(async (tx) => {
    await tx.query(sql('FeedSigningKeysLock'));
    await tx.query(sql('FeedSigningKeysRetireExpired'), [now]);
    await ensureIn(tx, secret, now);
    const rows = await tx.many(sql('FeedSigningKeysList'), [now]);
    return rows.map((r) => ({ ...r, published: r.published === true }));
  });
}

/** Loads the signing keys from Postgres: the active key's private half and the published public ones. */
async function loadKeys(db: Db, secret: string, now: Date, previous: SigningKeys | undefined): Promise<SigningKeys | undefined> {
  const rows = await db.many(sql('FeedSigningKeysLoad'), [now]);
  const active = rows.find((r) => r.state === 'active');
  if (!active?.private_key) return undefined;
  const privateKey =
    previous?.kid === active.kid
      ? previous.privateKey
      : createPrivateKey({ key: unseal(secret, active.kid, active.private_key), format: 'der', type: 'pkcs8' });
  return { kid: active.kid, privateKey, jwks: { keys: rows.map((r) => r.public_jwk as unknown as SigningJwk) } };
}

/**
 * The keys of one process (one per database: the main and the legacy host share it). `peek` is
 * synchronous for the hot path and starts a reload in the background when the keys are older than
 * `refreshMs` (answering with the loaded keys meanwhile: the previous active key stays published for
 * the overlap); `current` waits for the first load, creating the keys on a fresh database.
 */
export class SigningKeyRing {
  private keys: SigningKeys | undefined;
  private loadedAt = 0;
  private loading: Promise<SigningKeys> | undefined;
  private readonly refreshMs: number;

  constructor(
    private readonly db: Db,
    private readonly secret: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: { refreshMs?: number } = {},
  ) {
    this.refreshMs = opts.refreshMs ?? 30_000;
  }

  /** The loaded keys, or undefined before the first load; a due reload starts in the background. */
  peek(): SigningKeys | undefined {
    if (this.keys && this.clock.now().getTime() - this.loadedAt >= this.refreshMs && !this.loading) {
      this.reload().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'feed signing keys: reload failed, signing with the loaded key'));
    }
    return this.keys;
  }

  /** The keys, loaded (and created on a fresh database) when none are. */
  async current(): Promise<SigningKeys> {
    return this.peek() ?? this.reload();
  }

  /** Reloads now (the tests' and the CLI's way to see a rotation at once). */
  reload(): Promise<SigningKeys> {
    this.loading ??= (async () => {
      try {
        const now = this.clock.now();
        let keys = await loadKeys(this.db, this.secret, now, this.keys);
        if (!keys) {
          await ensureSigningKeys(this.db, this.secret, now);
          keys = await loadKeys(this.db, this.secret, now, this.keys);
        }
        if (!keys) throw new SigningKeyError('no active feed signing key after creating one');
        this.keys = keys;
        this.loadedAt = now.getTime();
        return keys;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }
}
