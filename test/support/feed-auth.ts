/**
 * Fixtures of the feed tests: zones, OAuth feed clients, tokens, and hourly files / GBFS snapshots
 * put into the store with their index rows (what the publishers write), in plain SQL so the tests
 * do not depend on ops/seed.
 */
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import type { AppContext } from '../../lib/domain/context.js';
import type { Queryable } from '../../lib/core/db.js';
import type { Role } from '../../lib/feeds/roles.js';
import { createFeedClient } from '../../lib/feeds/clients.js';
import { issueFeedToken } from '../../api/feeds/access-tokens.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { SPECS_DIR } from '../../lib/core/paths.js';
import { squareWkt } from './geometry.js';

export async function insertFeedZone(db: Queryable, id: string, createdAt: Date | string = '2020-01-01T00:00:00Z'): Promise<string> {
  await db.query(
    `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary, created_at)
     VALUES ($1, $1, 'Berlin', 'DE', 'Europe/Berlin', 'EUR', 0.19, 'free-floating', ST_GeomFromText($2, 4326), $3)`,
    [id, squareWkt(52.52, 13.405, 0.02), new Date(createdAt)],
  );
  return id;
}

export async function insertClient(db: Queryable, clientId: string, role: Role, zones: string[] | null = null, secret = `${clientId}-secret`) {
  return createFeedClient(db, { clientId, role, zones, secret });
}

/**
 * A signed token without going through the endpoint (what the endpoint would issue). A token is only
 * as good as its client (api/feeds/auth.ts), so the client is created first when it does not exist.
 */
export async function tokenFor(ctx: AppContext, clientId: string, role: Role, zones: string[] | null = null): Promise<string> {
  const exists = await ctx.db.maybeOne('SELECT 1 FROM feed_clients WHERE client_id = $1', [clientId]);
  // tokens minted in parallel for one id: the first insert wins, the others find it there
  if (!exists)
    await insertClient(ctx.db, clientId, role, zones).catch((err) =>
      /unique|duplicate/i.test(String(err?.message ?? err)) ? undefined : Promise.reject(err instanceof Error ? err : new Error(String(err))),
    );
  return (await issueFeedToken(ctx.config, ctx.clock, { clientId, role, zones })).accessToken;
}

export type HourFeed = 'mds_trips' | 'mds_events' | 'mds_status_changes' | 'insurance_trips';

const KEY_PART: Record<HourFeed, string> = {
  mds_trips: 'mds/{v}/{z}/trips',
  mds_events: 'mds/{v}/{z}/events',
  mds_status_changes: 'mds/{v}/{z}/status_changes',
  insurance_trips: 'insurance/{v}/{z}/trips',
};

/** Stores `body` gzip at the interface's key and writes a published feed_publications row. */
export async function publishHour(
  ctx: AppContext,
  p: {
    feed: HourFeed;
    version: '2.0' | '1.2' | '0.4';
    zone: string;
    hour: string;
    body: unknown;
    records?: number;
    dirty?: boolean;
    status?: 'published' | 'failed';
  },
): Promise<string> {
  const key = `${KEY_PART[p.feed].replace('{v}', p.version).replace('{z}', p.zone)}/${p.hour}.json.gz`;
  const json = Buffer.from(JSON.stringify(p.body));
  const stored = gzipSync(json);
  // the sink's invariant (publisher/publication/bytes.ts): the sha256 of the stored (gzip) bytes, in
  // the object's metadata and its index row alike; the signed route trusts it (api/kit/serve-object.ts)
  const sha = createHash('sha256').update(stored).digest('hex');
  if (p.status !== 'failed') await ctx.store.put(key, stored, { contentType: 'application/json', contentEncoding: 'gzip', metadata: { sha256: sha } });
  await ctx.db.query(
    `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes, last_updated, published_at, dirty)
     VALUES ($1, $2, $3, $4::timestamp, $5, $6, $7, $8, $9, now(), now(), $10)
     ON CONFLICT (feed, version, scope, hour) DO UPDATE SET status = EXCLUDED.status, object_key = EXCLUDED.object_key,
       sha256 = EXCLUDED.sha256, record_count = EXCLUDED.record_count, dirty = EXCLUDED.dirty`,
    [
      p.feed,
      p.version,
      p.zone,
      `${p.hour}:00:00`,
      p.status ?? 'published',
      p.status === 'failed' ? null : key,
      p.status === 'failed' ? null : sha,
      p.status === 'failed' ? null : (p.records ?? 0),
      json.length,
      p.dirty ?? false,
    ],
  );
  return key;
}

/** Basic credentials as RFC 6749 §2.3.1 wants them: each part form-urlencoded, then base64. */
/**
 * The token with its signature changed: the signature's first character is replaced (every bit of
 * it counts). Changing the last characters may not change the signature: base64url's last character
 * of a 32-byte HMAC carries 2 bits the decoder ignores, so `…xw` and `…xx` can be the same token.
 */
export function tamperedToken(token: string): string {
  const at = token.lastIndexOf('.') + 1;
  return token.slice(0, at) + (token[at] === 'A' ? 'B' : 'A') + token.slice(at + 1);
}

export function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

// ---------------------------------------------------------------------------------------------
// Official MDS schemas (specs/mds), compiled as specs/mds/README.md says: 2.0 bundles with the 2020-12
// dialect, 1.2.0 / 0.4.1 with the draft-06 meta-schema; strict off. Absent specs: undefined.
// ---------------------------------------------------------------------------------------------

const addFormats = ((addFormatsImport as any).default ?? addFormatsImport) as typeof import('ajv-formats').default;
const requireJson = createRequire(import.meta.url);
const mdsValidators = new Map<string, ValidateFunction>();

export function mdsSpecsAvailable(): boolean {
  return existsSync(join(SPECS_DIR, 'mds', '2.0', 'micromobility', 'trips.json'));
}

/** `2.0/micromobility/vehicles`, `1.2.0/vehicles`, `0.4.1/status_changes` … */
function mdsSpec(name: string): ValidateFunction {
  let v = mdsValidators.get(name);
  if (!v) {
    const schema = JSON.parse(readFileSync(join(SPECS_DIR, 'mds', `${name}.json`), 'utf8'));
    let ajv: Ajv;
    if (name.startsWith('2.0')) ajv = new Ajv2020({ strict: false, allErrors: true });
    else {
      ajv = new Ajv({ strict: false, allErrors: true });
      ajv.addMetaSchema(requireJson('ajv/dist/refs/json-schema-draft-06.json'));
    }
    addFormats(ajv);
    v = ajv.compile(schema);
    mdsValidators.set(name, v);
  }
  return v;
}

/** Asserts `body` validates against the named MDS schema (no-op when specs are absent). */
export function expectMds(name: string, body: unknown): void {
  if (!mdsSpecsAvailable()) return;
  const v = mdsSpec(name);
  if (!v(body)) throw new Error(`${name}: ${JSON.stringify(v.errors?.slice(0, 5), null, 1)}`);
}
