/**
 * The GBFS 2.2 system of one client scope (gbfsV2Scope(role, zones): every zone the caller may read,
 * docs/gbfs.md "GBFS 2.2 at breadth") and its 3.0 manifest, assembled from the parts its zones'
 * jobs stored (parts.ts), never by loading the zones:
 *   - free_bike_status and geofencing_zones: the zones' compressed fragments end to end, each
 *     validated by its zone's job; the file is never parsed, serialized or compressed whole;
 *   - the other files (small): built from the zones' summaries and validated whole.
 * A system whose zones speak several languages is published once per language (GBFS 2.2's
 * language-keyed discovery); a file whose text does not depend on the language is one object that
 * every language scope's row names. Unchanged inputs and fresh files write nothing.
 *
 * Who assembles a system, always holding the lock that makes it the one writer of its files:
 *   - a scope of one zone (a city client of one city: most scopes of a broad operator) is the
 *     zone's own: its zone job assembles it in the zone's transaction, under the zone's lock, right
 *     after storing the zone's parts (zone.ts), with the parts it just built or holds in memory;
 *   - a scope of several zones (an aggregator, a client of every zone) has its own job and lock
 *     (scope.ts), run once the zone jobs of a tick have stored their parts.
 */
import type { AppContext } from '../../../lib/domain/context.js';
import type { Role } from '../../../lib/feeds/roles.js';
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
import { contentDigest } from '../../../lib/core/gzip.js';
import { zoneFromSummary } from '../../../lib/feeds/gbfs/model.js';
import { V2_PART_FILES, buildV2, envelopeV2, isV2PartFile, systemLanguages, v2PartData, type V2PartFile, type V2Scope } from '../../../lib/feeds/gbfs/v2.js';
import { envelopeV3, manifestV3 } from '../../../lib/feeds/gbfs/v3.js';
import { GBFS_V2_SCHEMAS } from '../../../schemas/gbfs/v2.js';
import { manifestV3Schema } from '../../../schemas/gbfs/v3.js';
import { SUMMARY_PART, parsedPart, v2FileParts, type Parts } from './parts.js';
import { EPOCH, type BuildTx } from './batch.js';
import { SnapshotWriter, itemsData, staggerSeconds, textSegment, type GbfsBuildResult, type GbfsDoc, type GbfsForce, type Segment } from './snapshots.js';

/** A 2.2 client scope: a role and the zones its clients may read (null: every zone). */
export interface GbfsScope {
  id: string;
  role: Role;
  /** sorted, distinct; null: every zone */
  zoneIds: string[] | null;
}

/** The zone whose job assembles the scope: the one zone of a single-zone scope; undefined for a scope of several (or every) zone. */
export function ownerZone(scope: GbfsScope): string | undefined {
  return scope.zoneIds?.length === 1 ? scope.zoneIds[0] : undefined;
}

/** Every part a system is assembled from (its zones' summaries and 2.2 items). */
export const SYSTEM_PARTS = [SUMMARY_PART, ...V2_PART_FILES.flatMap(v2FileParts)];
/** the parts the static files of a system are built from (all but the vehicles) */
const STATIC_PART_NAMES = [SUMMARY_PART, ...v2FileParts('geofencing_zones')];
/** the 2.2 files whose text depends on the language (the others are one object for every language) */
const LANGUAGE_FILES: ReadonlySet<V2File> = new Set(['system_information', 'system_pricing_plans', 'system_alerts']);

export interface SystemAssembly {
  result: GbfsBuildResult;
  /** false: nothing was due (its inputs unchanged, its files fresh), nothing was done */
  assembled: boolean;
}

/**
 * Assembles the system of `scope` from `parts` (of `zoneIds`, the scope's zones that exist, their
 * contents at hand), in the transaction `batch`, whose caller holds the lock of the system's files
 * and flushes what it records. What it records (`inputs`) is the digest of the parts it read, so a
 * build is never recorded as newer than what it shows.
 */
export async function assembleSystem(
  ctx: AppContext,
  batch: BuildTx,
  scope: GbfsScope,
  zoneIds: readonly string[],
  parts: Parts,
  env: BuildEnv,
  force: GbfsForce | undefined,
): Promise<SystemAssembly> {
  const result: GbfsBuildResult = { written: 0, refreshed: 0, unchanged: 0, failed: 0 };
  const now = env.now;
  // a zone whose parts could not be built is left out until they can (its job logs why)
  const built = zoneIds.filter((z) => parts.get(z)?.has(SUMMARY_PART));
  if (!built.length) return { result, assembled: false };
  const digestOf = (names: readonly string[]) =>
    contentDigest([{ sha256: scope.id }, ...built.flatMap((z) => names.map((p) => ({ sha256: `${z}:${parts.get(z)?.get(p)?.sha256 ?? '-'}` })))]);
  // the digest of what the static files are built from (the zones' summaries and geofencing),
  // then of every part (the vehicles too): a vehicle that moved assembles the status files only
  const inputs = digestOf(STATIC_PART_NAMES) + digestOf(SYSTEM_PARTS);
  const b = await batch.scopeBuild(scope.id);
  const rebuild = force === 'all' || force === 'static' || !b || b.rebuild_due_at <= now;
  const staticChanged = force !== undefined || !b || b.inputs.slice(0, 64) !== inputs.slice(0, 64);
  const changed = staticChanged || b.inputs !== inputs;
  const refreshDue = !b || now.getTime() - b.status_written_at.getTime() >= STATUS_REFRESH_SECONDS * 1000;
  if (!rebuild && !changed && !refreshDue) return { result, assembled: false };

  const zones = built.map((z) => parsedPart(batch.memory, z, SUMMARY_PART, parts.get(z)!.get(SUMMARY_PART)!, zoneFromSummary));
  const languages = systemLanguages(zones);
  const base: V2Scope = { id: scope.id, clientScope: scope.id, role: scope.role, zoneIds: scope.zoneIds, zones, language: languages[0], languages };
  // one language: the plain scope; several: the plain scope in the first, and one scope per language
  const variants: V2Scope[] = [base, ...(languages.length > 1 ? languages.map((l) => ({ ...base, id: v2LanguageScope(scope.id, l), language: l })) : [])];
  const writer = new SnapshotWriter(ctx, now, await batch.readRows([scope.id], [scope.id]), rebuild);

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
  batch.record(writer);
  // a failed file: the inputs are not recorded, so the next run tries again
  batch.scopeBuilt(scope.id, {
    inputs: writer.result.failed ? '' : inputs,
    status_written_at: writer.statusWrittenAt() ?? b?.status_written_at ?? EPOCH,
    rebuild_due_at: rebuild ? new Date(now.getTime() + (GBFS_REBUILD_SECONDS - staggerSeconds(scope.id)) * 1000) : (b?.rebuild_due_at ?? EPOCH),
  });
  return { result: { ...writer.result }, assembled: true };
}

/** A 2.2 file of the system: `data` its data's text, `skeleton` what its envelope is validated with. */
function v2Doc(file: V2File, scopes: string[], data: Segment[], skeleton: unknown): GbfsDoc {
  const ttl = gbfsTtl(file);
  return {
    version: '2.2',
    scopes,
    file,
    ttl,
    status: isStatusFile(file),
    data,
    document: (lu) => envelopeV2(lu, ttl, skeleton),
    schema: GBFS_V2_SCHEMAS[file],
  };
}

/** A small file of the system, built from the zones' summaries and validated whole. */
function wholeDoc(file: V2File, scopes: string[], s: V2Scope, env: BuildEnv): GbfsDoc {
  const data = buildV2(file, s, env);
  return v2Doc(file, scopes, [textSegment(JSON.stringify(data))], data);
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
  return v2Doc(file, scopes, itemsData(empty, items), empty);
}
