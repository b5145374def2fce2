/**
 * Many OAuth feed clients in one call (ops CLI `clients import`): a JSON array of clients, or one per
 * line (NDJSON), each `{client_id, role, zones?, label?}` as `clients create` takes them. The whole
 * input is checked first (schema, duplicate ids, unknown zones, every problem named by its entry),
 * then every client is inserted in one transaction and one statement; a client id that exists
 * already refuses the whole input, so a re-run after a mistake never half-applies. The secrets are
 * returned once, as `clients create` does; only their scrypt hashes are stored.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { type Db } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { compile } from '../../lib/core/validate.js';
import { generateSecret, hashSecret } from '../../lib/domain/credentials/secrets.js';
import { ROLES, type Role } from '../../lib/feeds/roles.js';
import { ZONE_ID_SCHEMA } from '../../lib/domain/zones.js';
import { AdminError } from './credentials.js';
import { schemaProblems } from './zone-file.js';

export const FEED_CLIENT_SCHEMA = {
  type: 'object',
  required: ['client_id', 'role'],
  additionalProperties: false,
  properties: {
    client_id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' },
    role: { enum: ROLES },
    /** the zones the client may read; absent or null: every zone, later ones included */
    zones: { anyOf: [{ type: 'null' }, { type: 'array', minItems: 1, items: ZONE_ID_SCHEMA }] },
    label: { type: 'string' },
  },
} as const;

export type FeedClientEntry = FromSchema<typeof FEED_CLIENT_SCHEMA>;

// compiled on first use (lib/core/validate.ts caches it): every ops command loads this module, few import clients
const validClient = () => compile<FeedClientEntry>(FEED_CLIENT_SCHEMA);

export interface ImportedClient {
  client_id: string;
  role: Role;
  zones: string[] | null;
  secret: string;
}

/** The client entries of one file's text: a JSON array, or NDJSON; problems name the line or index. */
export function readClientEntries(text: string, name: string): Array<{ source: string; entry: unknown }> {
  try {
    const whole = JSON.parse(text) as unknown;
    if (Array.isArray(whole)) return (whole as unknown[]).map((entry, i) => ({ source: `${name} #${i}`, entry }));
    return [{ source: name, entry: whole }];
  } catch {
    return text.split('\n').flatMap((line, i) => {
      if (!line.trim()) return [];
      try {
        return [{ source: `${name} line ${i + 1}`, entry: JSON.parse(line) as unknown }];
      } catch (err) {
        throw new AdminError(`${name} line ${i + 1}: not JSON (${(err as Error).message}); a clients file is a JSON array of clients or one per line (NDJSON)`);
      }
    });
  }
}

function existing(ids: string[]): AdminError {
  const list = `${ids.slice(0, 10).join(', ')}${ids.length > 10 ? `, … (${ids.length})` : ''}`;
  return new AdminError(
    `nothing created: client${ids.length === 1 ? '' : 's'} ${list} exist${ids.length === 1 ? 's' : ''} already (rotate a secret with ops clients rotate)`,
  );
}

/** Validates and creates the clients in one transaction; see the module comment. */
export async function importFeedClients(db: Db, entries: Array<{ source: string; entry: unknown }>): Promise<ImportedClient[]> {
  if (!entries.length) throw new AdminError('no client in the input');
  const problems: string[] = [];
  const known = new Set((await db.many(sql('AdminListZoneIds'))).map((z) => z.id));
  const seen = new Set<string>();
  const clients: FeedClientEntry[] = [];
  const valid = validClient();
  for (const { source, entry } of entries) {
    if (!valid(entry)) {
      problems.push(`${source}: ${schemaProblems(valid.errors, 'entry')}`);
      continue;
    }
    const c = entry;
    clients.push(c);
    if (seen.has(c.client_id)) problems.push(`${source}: client ${c.client_id} appears more than once in the input`);
    seen.add(c.client_id);
    // a client limited to an unknown zone would see nothing and nobody would notice
    const unknown = (c.zones ?? []).filter((z) => !known.has(z));
    if (unknown.length) problems.push(`${source}: unknown zone${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}`);
  }
  if (problems.length) {
    const zones = [...known].sort();
    throw new AdminError(
      `clients file has ${problems.length} problem(s):\n  - ${problems.join('\n  - ')}${problems.some((p) => p.includes('unknown zone')) ? `\n  known zones: ${zones.slice(0, 20).join(', ')}${zones.length > 20 ? ', …' : ''}` : ''}`,
    );
  }
  // before the hashing (scrypt, tens of milliseconds each); the insert decides again under its constraint
  const taken = (await db.many(sql('AdminFeedClientsExisting'), [clients.map((c) => c.client_id)])).map((r) => r.client_id);
  if (taken.length) throw existing(taken);
  const secrets = clients.map(() => generateSecret());
  // scrypt runs on libuv's thread pool: all at once uses every thread it has
  const hashes = await Promise.all(secrets.map((s) => hashSecret(s)));
  return db.tx(async (tx) => {
    const inserted = await tx.many(sql('AdminInsertFeedClients'), [
      clients.map((c) => c.client_id),
      hashes,
      clients.map((c) => c.role),
      clients.map((c) => JSON.stringify(c.zones ?? null)),
      clients.map((c) => c.label ?? ''),
    ]);
    if (inserted.length < clients.length) {
      const made = new Set(inserted.map((r) => r.client_id));
      throw existing(clients.filter((c) => !made.has(c.client_id)).map((c) => c.client_id));
    }
    return clients.map((c, i) => ({ client_id: c.client_id, role: c.role, zones: c.zones ?? null, secret: secrets[i] ?? '' }));
  });
}
