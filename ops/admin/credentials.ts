/**
 * Credential administration for the ops CLI: partners and their API keys (partner, TOMP, insurer
 * scopes), OAuth feed clients and their API keys (X-Access-Token on the feeds). Secrets are
 * returned once, at creation or rotation, and stored only as hashes.
 */
import { DbError, type Db } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import type { Clock } from '../../lib/core/clock.js';
import { createApiKey, revokeApiKey, type KeyScope } from '../../lib/domain/credentials/api-keys.js';
import { generateSecret, hashSecret } from '../../lib/domain/credentials/secrets.js';
import { createFeedClient as insertFeedClient, revokeFeedClient as revokeClient } from '../../lib/feeds/clients.js';
import { ROLES, type Role } from '../../lib/feeds/roles.js';
import { createFeedKey, listFeedKeys, revokeFeedKey } from '../../lib/feeds/keys.js';

export type PartnerKind = 'rental' | 'maas' | 'insurer' | 'operator';

const KIND_OF_SCOPE: Record<KeyScope, PartnerKind> = { partner: 'rental', tomp: 'maas', insurance: 'insurer', ops: 'operator' };
const TRIP_TYPE_OF_KIND: Record<PartnerKind, 'rider' | 'maas' | 'operator'> = { rental: 'rider', maas: 'maas', insurer: 'rider', operator: 'operator' };

export class AdminError extends Error {}

/** Finds the partner by name, creating it with the kind that fits the key scope when absent. */
async function ensurePartner(db: Db, name: string, scope: KeyScope, opts: { tripType?: 'rider' | 'maas' | 'operator'; postponedCommit?: boolean } = {}) {
  const found = await db.maybeOne(sql('AdminFindPartnerByName'), [name]);
  if (found) return found;
  const kind = KIND_OF_SCOPE[scope];
  return db.one(sql('AdminCreatePartner'), [name, kind, opts.tripType ?? TRIP_TYPE_OF_KIND[kind], opts.postponedCommit ?? false]);
}

export async function createKey(db: Db, partnerName: string, scope: KeyScope, label = '') {
  const partner = await ensurePartner(db, partnerName, scope);
  const { id, key } = await createApiKey(db, partner.id, scope, { label });
  return { id, key, partner: partner.name, scope };
}

export async function listKeys(db: Db, scope?: KeyScope) {
  return db.many(sql('AdminListApiKeys'), [scope ?? null]);
}

export async function revokeKey(db: Db, clock: Clock, keyId: string) {
  const row = await revokeApiKey(db, keyId, clock.now());
  if (!row) throw new AdminError(`no active key with id ${keyId}`);
  return row;
}

/** A new key for the same partner and scope; the old one is revoked in the same transaction. */
export async function rotateKey(db: Db, clock: Clock, keyId: string) {
  return db.tx(async (tx) => {
    const old = await revokeApiKey(tx, keyId, clock.now());
    if (!old) throw new AdminError(`no active key with id ${keyId}`);
    const { id, key } = await createApiKey(tx, old.partner_id, old.scope, { label: old.label });
    return { id, key, scope: old.scope, revoked: keyId };
  });
}

function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) throw new AdminError(`role must be one of ${ROLES.join(', ')}`);
  return role as Role;
}

export async function createFeedClient(db: Db, clientId: string, role: string, zones: string[] | null, label = '') {
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(clientId)) throw new AdminError('client id: 1–128 characters of A–Z a–z 0–9 . _ -');
  const checked = checkRole(role);
  if (zones) {
    // a client limited to an unknown zone would see nothing and nobody would notice
    const known = (await db.many(sql('AdminListZoneIds'))).map((z) => z.id);
    const unknown = zones.filter((z) => !known.includes(z));
    if (unknown.length || !zones.length)
      throw new AdminError(
        `unknown zone${unknown.length === 1 ? '' : 's'} ${unknown.join(', ') || '(none given)'}; known zones: ${known.join(', ') || 'none'}`,
      );
  }
  const { secret } = await insertFeedClient(db, { clientId, role: checked, zones, label }).catch((err: unknown) => {
    if (err instanceof DbError && err.kind === 'conflict') throw new AdminError(`client ${clientId} exists already`);
    throw err;
  });
  return { client_id: clientId, role: checked, zones, secret };
}

export async function listFeedClients(db: Db) {
  return db.many(sql('AdminListFeedClients'));
}

export async function rotateFeedClient(db: Db, clientId: string) {
  const secret = generateSecret();
  const row: { client_id: string; role: Role; zones: string[] | null } | undefined = await db.maybeOne(sql('AdminRotateFeedClient'), [
    clientId,
    await hashSecret(secret),
  ]);
  if (!row) throw new AdminError(`no active feed client ${clientId}`);
  return { ...row, secret };
}

export async function revokeFeedClient(db: Db, clock: Clock, clientId: string) {
  if (!(await revokeClient(db, clientId, clock.now()))) throw new AdminError(`no active feed client ${clientId}`);
  return { client_id: clientId };
}

/** A new API key of an active feed client (its role and zones are the client's); the key is returned once. */
export async function createClientKey(db: Db, clientId: string, label = '') {
  const client = await db.maybeOne(sql('FeedClientById'), [clientId]);
  if (!client || client.revoked_at) throw new AdminError(`no active feed client ${clientId}`);
  const { id, key, prefix } = await createFeedKey(db, clientId, label);
  return { id, key, prefix, client_id: clientId, role: client.role, zones: client.zones };
}

/** The keys of one feed client, or of all (prefixes only). */
export async function listClientKeys(db: Db, clientId?: string) {
  return listFeedKeys(db, clientId ?? null);
}

/** Revokes a feed client's key: refused by every API process within FEED_CREDENTIAL_REFRESH_MS (30 s). */
export async function revokeClientKey(db: Db, clock: Clock, keyId: string, clientId: string | null = null) {
  const row = await revokeFeedKey(db, keyId, clock.now(), clientId);
  if (!row) throw new AdminError(`no active feed client key with id ${keyId}${clientId ? ` of client ${clientId}` : ''}`);
  return row;
}
