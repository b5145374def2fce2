/**
 * The per-scope GBFS 2.2 job (queue `feeds-gbfs-scope`, singleton key per scope): the 2.2 system of
 * one client scope (gbfsV2Scope(role, zones): every zone the caller may read, docs/gbfs.md "GBFS 2.2
 * at breadth") and its 3.0 manifest, assembled from the parts its zones' jobs stored (parts.ts),
 * never by loading the zones:
 *   - free_bike_status and geofencing_zones: the zones' compressed fragments end to end, each
 *     validated by its zone's job; the file is never parsed, serialized or compressed whole;
 *   - the other files (small): built from the zones' summaries and validated whole.
 * A system whose zones speak several languages is published once per language (GBFS 2.2's
 * language-keyed discovery); a file whose text does not depend on the language is one object that
 * every language scope's row names. The job runs when a zone of the scope changed (its zone job
 * sends it), when its status files are due for their ttl refresh (the tick sends it), and for its
 * hourly rebuild; unchanged inputs and fresh files write nothing.
 * The parts, the bulk of what a scope reads, come from the streaming replica once it has replayed
 * past the primary's WAL position read under the scope's lock (lib/replica.ts readerPast, as a zone
 * build's data), else from the job's transaction on the primary.
 */
import type { AppContext } from '../../../lib/context.js';
import type { DbRole } from '../../../lib/db.js';
import { sql } from '../../../lib/sql/typed.js';
import { readerPast, readOnReader } from '../../../lib/replica.js';
import { gbfsV2Scope, hasGbfs, type Role } from '../../../lib/feeds/roles.js';
import {
  GBFS_REBUILD_SECONDS,
  MANIFEST_FILE,
  STATIC_TTL,
  STATUS_REFRESH_SECONDS,
  V2_FILES,
  gbfsTtl,
  isStatusFile,
  v2LanguageScope,
  type V2File,
} from '../../../lib/feeds/gbfs/files.js';
import type { BuildEnv } from '../../../lib/feeds/gbfs/common.js';
import { contentDigest } from '../../../lib/feeds/gbfs/fragments.js';
import { zoneFromSummary } from '../../../lib/feeds/gbfs/model.js';
import { V2_PART_FILES, buildV2, envelopeV2, isV2PartFile, systemLanguages, v2PartData, type V2PartFile, type V2Scope } from '../../../lib/feeds/gbfs/v2.js';
import { envelopeV3, manifestV3 } from '../../../lib/feeds/gbfs/v3.js';
import { GBFS_V2_SCHEMAS } from '../../../schemas/gbfs/v2.js';
import { manifestV3Schema } from '../../../schemas/gbfs/v3.js';
import { SUMMARY_PART, V2_BIKE_PARTS, parsedPart, readParts, v2FileParts, type Parts } from './parts.js';
import { gbfsUnit, withPublicationLock } from '../../../lib/publication/lock.js';
import { SnapshotWriter, itemsData, staggerSeconds, storedRows, textSegment, type GbfsDoc } from './snapshots.js';
import { REPLICA_WAIT_MS, buildEnv, buildGbfsZone, type GbfsBuildResult, type GbfsForce } from './zone.js';

/** A 2.2 client scope: a role and the zones its clients may read (null: every zone). */
export interface GbfsScope {
  id: string;
  role: Role;
  /** sorted, distinct; null: every zone */
  zoneIds: string[] | null;
}

/** The distinct scopes of the feed clients (rows of GbfsFeedClientScopes) whose role reads GBFS. */
export function scopesOf(rows: ReadonlyArray<{ role: Role; zones: string[] | null }>): GbfsScope[] {
  const out = new Map<string, GbfsScope>();
  for (const r of rows) {
    if (!hasGbfs(r.role)) continue;
    const id = gbfsV2Scope(r.role, r.zones);
    if (!out.has(id)) out.set(id, { id, role: r.role, zoneIds: r.zones === null ? null : [...new Set(r.zones)].sort() });
  }
  return [...out.values()];
}

export function scopeIncludes(scope: GbfsScope, zoneId: string): boolean {
  return scope.zoneIds === null || scope.zoneIds.includes(zoneId);
}

const PART_NAMES = [SUMMARY_PART, ...V2_PART_FILES.flatMap(v2FileParts)];
/** the parts the static files of a system are built from (all but the vehicles) */
const STATIC_PART_NAMES = [SUMMARY_PART, ...v2FileParts('geofencing_zones')];
/** the 2.2 files whose text depends on the language (the others are one object for every language) */
const LANGUAGE_FILES: ReadonlySet<V2File> = new Set(['system_information', 'system_pricing_plans', 'system_alerts']);

export async function buildGbfsScope(ctx: AppContext, scope: GbfsScope, opts: { force?: GbfsForce } = {}): Promise<GbfsBuildResult> {
  const result: GbfsBuildResult = { written: 0, refreshed: 0, unchanged: 0, failed: 0 };
  // the zones and which of them have parts, from the primary: a replica a moment behind would have a
  // zone just built built again
  const zoneIds = (await ctx.db.many(sql('GbfsZoneIds'), [scope.zoneIds])).map((r) => r.id);
  if (!zoneIds.length) return result;
  // a zone never built has no parts yet (a new zone in a new scope): build it first; so is a zone
  // whose vehicles were last built before they were kept in blocks (its status files, now)
  const have = await readParts(ctx.db, zoneIds, [SUMMARY_PART, V2_BIKE_PARTS[0]], false);
  for (const z of zoneIds) {
    const p = have.get(z);
    if (p?.has(SUMMARY_PART) && p.has(V2_BIKE_PARTS[0])) continue;
    const r = await buildGbfsZone(ctx, z, p?.has(SUMMARY_PART) ? { force: 'status' } : {});
    result.written += r.written;
    result.refreshed += r.refreshed;
    result.unchanged += r.unchanged;
    result.failed += r.failed;
  }

  const now = ctx.clock.now();
  const log = ctx.log.child({ scope: scope.id });
  /** where the parts were read (the debug line of the build) */
  let pool: DbRole | undefined;
  // the scope's lock: one build of its files in the cluster. A build in progress elsewhere is waited
  // for, not left to: it may have read the zones' parts before the ones this job was sent for were
  // stored, and a scope is built again only when one of its zones changes or its refresh is due
  // (a zone is different: its own change counters send the next tick's job). After the wait the
  // parts read here are as new as the holder's, and most often it built them already: nothing to do
  const built = await withPublicationLock(ctx, [gbfsUnit('scope', scope.id)], (held) =>
    held.tx(async (tx): Promise<GbfsBuildResult> => {
      // read under the lock, after the primary's WAL position is read there: that position is past
      // every part the scope's previous build assembled (committed before it released the lock) and
      // every part the zone jobs that sent this job stored, so a scope job never assembles older parts
      // than the one before it, on the replica either; and what it records (`inputs`) is the digest of
      // the parts it read, so a build is never recorded as newer than what it shows
      const reader = await readerPast(ctx.db, now, now, log, { primary: tx, waitMs: REPLICA_WAIT_MS });
      const parts = await readOnReader(
        reader,
        (replica) => {
          pool = 'replica';
          return readParts(replica, zoneIds, PART_NAMES, true);
        },
        () => {
          pool = 'primary';
          return readParts(tx, zoneIds, PART_NAMES, true);
        },
      );
      // a zone whose parts could not be built is left out until they can (its job logs why)
      const built = zoneIds.filter((z) => parts.get(z)?.has(SUMMARY_PART));
      if (!built.length) return result;
      const digestOf = (names: readonly string[]) =>
        contentDigest([{ sha256: scope.id }, ...built.flatMap((z) => names.map((p) => ({ sha256: `${z}:${parts.get(z)?.get(p)?.sha256 ?? '-'}` })))]);
      // the digest of what the static files are built from (the zones' summaries and geofencing),
      // then of every part (the vehicles too): a vehicle that moved assembles the status files only
      const inputs = digestOf(STATIC_PART_NAMES) + digestOf(PART_NAMES);
      const b = await tx.maybeOne(sql('GbfsScopeBuildGet'), [scope.id]);
      const rebuild = opts.force === 'all' || opts.force === 'static' || !b || b.rebuild_due_at <= now;
      const staticChanged = opts.force !== undefined || !b || b.inputs.slice(0, 64) !== inputs.slice(0, 64);
      const changed = staticChanged || b.inputs !== inputs;
      const refreshDue = !b || now.getTime() - b.status_written_at.getTime() >= STATUS_REFRESH_SECONDS * 1000;
      if (!rebuild && !changed && !refreshDue) return result;

      const zones = built.map((z) => parsedPart(z, SUMMARY_PART, parts.get(z)!.get(SUMMARY_PART)!, zoneFromSummary));
      const languages = systemLanguages(zones);
      const base: V2Scope = { id: scope.id, clientScope: scope.id, role: scope.role, zoneIds: scope.zoneIds, zones, language: languages[0], languages };
      // one language: the plain scope; several: the plain scope in the first, and one scope per language
      const variants: V2Scope[] = [base, ...(languages.length > 1 ? languages.map((l) => ({ ...base, id: v2LanguageScope(scope.id, l), language: l })) : [])];
      const env = buildEnv(ctx, now);
      const writer = new SnapshotWriter(
        ctx,
        now,
        await storedRows(
          tx,
          variants.map((v) => v.id),
        ),
        rebuild,
      );

      for (const file of V2_FILES) {
        // static files only when their inputs changed (or rebuilt); status files every run (the refresh)
        if (!isStatusFile(file) && !rebuild && !staticChanged) continue;
        const targets = LANGUAGE_FILES.has(file) ? variants.map((v) => [v]) : [variants];
        for (const group of targets) {
          const s = group[0];
          const scopes = group.map((v) => v.id);
          await writer.publish(isV2PartFile(file) ? partDoc(file, scopes, built, parts) : wholeDoc(file, scopes, s, env));
        }
      }
      // the caller's manifest.json (GBFS 3.0): per client scope, like the 2.2 files
      if (rebuild || staticChanged) {
        const data = manifestV3(base, env);
        await writer.publish({
          version: '3.0',
          scopes: [scope.id],
          file: MANIFEST_FILE,
          ttl: STATIC_TTL,
          status: false,
          data: [textSegment(JSON.stringify(data))],
          document: (lu) => envelopeV3(lu, STATIC_TTL, data),
          schema: manifestV3Schema,
        });
      }
      await writer.flush(tx);
      const rebuildDueAt = rebuild ? new Date(now.getTime() + (GBFS_REBUILD_SECONDS - staggerSeconds(scope.id)) * 1000) : null;
      // a failed file: the inputs are not recorded, so the next run tries again
      await tx.query(sql('GbfsScopeBuildUpsert'), [scope.id, writer.result.failed ? '' : inputs, writer.statusWrittenAt() ?? null, rebuildDueAt]);
      return {
        written: result.written + writer.result.written,
        refreshed: result.refreshed + writer.result.refreshed,
        unchanged: result.unchanged + writer.result.unchanged,
        failed: result.failed + writer.result.failed,
      };
    }),
  );
  log.debug({ pool, written: built.written, refreshed: built.refreshed, unchanged: built.unchanged, failed: built.failed }, 'gbfs scope job');
  return built;
}

/** A small file of the system, built from the zones' summaries and validated whole. */
function wholeDoc(file: V2File, scopes: string[], s: V2Scope, env: BuildEnv): GbfsDoc {
  const data = buildV2(file, s, env);
  const ttl = gbfsTtl(file);
  return {
    version: '2.2',
    scopes,
    file,
    ttl,
    status: isStatusFile(file),
    data: [textSegment(JSON.stringify(data))],
    document: (lu) => envelopeV2(lu, ttl, data),
    schema: GBFS_V2_SCHEMAS[file],
  };
}

/**
 * A file that is its zones' items end to end: the skeleton's opening, the zones' fragments (for
 * free_bike_status each zone's vehicle blocks) with a comma between non-empty ones, the closing. The
 * zones' items were validated by their jobs; the skeleton (the envelope with no items) is validated
 * here: a valid envelope of valid items is a valid file (the schemas constrain each item, never the
 * array as a whole).
 */
function partDoc(file: V2PartFile, scopes: string[], zoneIds: string[], parts: Parts): GbfsDoc {
  const empty = v2PartData(file, []);
  const names = v2FileParts(file);
  const items = zoneIds.flatMap((z) => names.map((p) => parts.get(z)?.get(p)?.fragment).filter((f) => f !== undefined));
  const ttl = gbfsTtl(file);
  return {
    version: '2.2',
    scopes,
    file,
    ttl,
    status: isStatusFile(file),
    data: itemsData(empty, items),
    document: (lu) => envelopeV2(lu, ttl, empty),
    schema: GBFS_V2_SCHEMAS[file],
  };
}
