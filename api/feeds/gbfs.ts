/**
 * GBFS behind the token (the rows' auth kind, verified by the kit before these handlers run), from
 * the GBFS snapshots the publisher writes (gbfs_snapshots + store), through the serving path of every published object (files.ts
 * servePublished: the index row cached ≤ 2 s, the body from the process's cache, ETag/304).
 * 3.0 is scoped by the zone in the path; 2.2 by the caller's region scope (gbfsV2Scope(role, zones)). gbfs.json lists only what the role may read: for 3.0 the publisher
 * stores one discovery file per role (file `gbfs.{role}`), for 2.2 the scope already includes the role.
 */
import type Koa from 'koa';
import { NamedCache } from '../../lib/core/cache.js';
import { pathParam } from './params.js';
import { reEnveloped, staleEnvelope } from '../../lib/feeds/gbfs/envelope.js';
import type { GbfsVersion } from '../../lib/feeds/gbfs/files.js';
import type { Derived, ServeObjectOptions } from '../kit/serve-object.js';
import { gbfsV2Scope, hasGbfs } from '../../lib/feeds/roles.js';
import { gbfsSnapshotFile, LANGUAGE_TAG, MANIFEST_FILE, V2_FILES, V3_FILES, v2LanguageScope } from '../../lib/feeds/gbfs/files.js';
import { servePublished } from './files.js';
import type { GbfsSnapshotRow } from './publications.js';
import { authorize, claimsOf, resolveZone, type FeedDeps } from './auth.js';
import { FeedError, forbidden, notFound } from './errors.js';

const notSnapshotted = () =>
  new FeedError(503, 'service_unavailable', 'this feed has not been published yet; retry shortly', undefined, { 'Retry-After': '30' });

async function serveSnapshot(deps: FeedDeps, ctx: Koa.Context, version: GbfsVersion, scope: string, file: string): Promise<void> {
  await serveRow(deps, ctx, version, await deps.gbfs.get([version, scope, file]));
}

/**
 * Stored GBFS objects answered in a later envelope, by object, stored version and last_updated: one
 * entry per status file a process serves, replaced at each ttl refresh (bounded in bytes).
 */
const reEnvelopedObjects = new NamedCache<string, Derived>('gbfs_reenveloped', {
  maxSize: 64 * 1024 * 1024,
  sizeCalculation: (d) => Math.max(1, d.body.length),
});

/**
 * The stored object in the envelope of the row's last_updated, when the publisher refreshed the
 * file's last_updated without storing it again (publisher/feeds/gbfs/snapshots.ts): the object's
 * own `last-updated` metadata names the envelope it was stored with.
 */
function inRowEnvelope(version: GbfsVersion, row: GbfsSnapshotRow): ServeObjectOptions['derive'] {
  return (meta) => {
    const stale = staleEnvelope(meta.metadata, row.last_updated);
    if (!stale) return undefined;
    const id = `${meta.key}|${meta.etag}|${row.last_updated.getTime()}`;
    return (
      reEnvelopedObjects.get(id) ??
      ((stored) => {
        const body = reEnveloped(stored, version, stale.ttl, stale.storedAt, row.last_updated);
        if (!body) return undefined;
        const lastModified = row.last_updated;
        const d: Derived = {
          // a strong validator of these bytes: the stored bytes' and the envelope's
          meta: { ...meta, size: body.length, etag: `"${meta.etag.replace(/^W\//, '').replaceAll('"', '')}-${lastModified.getTime() / 1000}"`, lastModified },
          body,
          lastModifiedHttp: lastModified.toUTCString(),
        };
        reEnvelopedObjects.set(id, d);
        return d;
      })
    );
  };
}

async function serveRow(deps: FeedDeps, ctx: Koa.Context, version: GbfsVersion, row: GbfsSnapshotRow | undefined): Promise<void> {
  if (!row) throw notSnapshotted();
  const cacheControl = `private, max-age=${Math.max(0, Number(row.ttl))}`;
  const served = await servePublished(
    deps,
    ctx,
    { key: row.object_key, sha256: row.sha256 },
    cacheControl,
    'application/json; charset=utf-8',
    inRowEnvelope(version, row),
  );
  if (!served) throw notSnapshotted();
}

function fileParam(raw: string | undefined, files: readonly string[]): string {
  if (!raw || !files.includes(raw)) throw notFound('unknown GBFS file');
  return raw;
}

/** GBFS 3.0 manifest: one URL, the datasets of the caller's client scope (published per scope). */
export async function gbfsManifest(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = claimsOf(ctx);
  if (!hasGbfs(claims.role)) throw forbidden('GBFS is outside the role of the client');
  await serveSnapshot(deps, ctx, '3.0', gbfsV2Scope(claims.role, claims.zones), MANIFEST_FILE);
}

/** GBFS 3.0, one zone: /v1/partner-apis/gbfs/{zoneID}/{file}.json */
export async function gbfsV3File(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = claimsOf(ctx);
  if (!hasGbfs(claims.role)) throw forbidden('GBFS is outside the role of the client');
  const file = fileParam(pathParam(ctx, 'file'), V3_FILES);
  authorize(claims, { family: 'gbfs', version: '3.0', file });
  const zone = await resolveZone(deps, claims.zones, pathParam(ctx, 'zoneID'));
  await serveSnapshot(deps, ctx, '3.0', zone.id, gbfsSnapshotFile('3.0', file, claims.role));
}

/** GBFS 2.2, one language of a system whose zones speak several (its gbfs.json lists these URLs). */
export async function gbfsV2FileInLanguage(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = claimsOf(ctx);
  if (!hasGbfs(claims.role)) throw forbidden('GBFS is outside the role of the client');
  const language = pathParam(ctx, 'language') ?? '';
  if (!LANGUAGE_TAG.test(language)) throw notFound('unknown GBFS language');
  const file = fileParam(pathParam(ctx, 'file'), V2_FILES);
  authorize(claims, { family: 'gbfs', version: '2.2', file });
  const scope = gbfsV2Scope(claims.role, claims.zones);
  const stored = gbfsSnapshotFile('2.2', file, claims.role);
  // a language the system does not have is unknown; a system not published yet is retried
  const row = await deps.gbfs.get(['2.2', v2LanguageScope(scope, language), stored]);
  if (!row && (await deps.gbfs.get(['2.2', scope, stored]))) throw notFound(`this GBFS system has no files in language ${language}`);
  await serveRow(deps, ctx, '2.2', row);
}

/** GBFS 2.2 of the caller's region scope: /gbfs/v2/{file}.json */
export async function gbfsV2File(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = claimsOf(ctx);
  if (!hasGbfs(claims.role)) throw forbidden('GBFS is outside the role of the client');
  const file = fileParam(pathParam(ctx, 'file'), V2_FILES);
  authorize(claims, { family: 'gbfs', version: '2.2', file });
  await serveSnapshot(deps, ctx, '2.2', gbfsV2Scope(claims.role, claims.zones), gbfsSnapshotFile('2.2', file, claims.role));
}
