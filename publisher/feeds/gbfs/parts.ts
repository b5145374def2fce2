/**
 * A zone's parts (gbfs_zone_parts, migration 000150): the pieces of the files built from the zone
 * that other work reuses without rebuilding the zone. Per zone:
 *   v3/station_status, v3/system_alerts   the data of its 3.0 status files (their ttl refresh
 *   v3/vehicle_status/{0…f}               re-envelopes these); vehicle_status in its vehicle blocks
 *                                         (vehicles.ts: one part per block, by GBFS id)
 *   v2/free_bike_status/{0…f}             its items of those 2.2 files (free_bike_status in the same
 *   v2/geofencing_zones                   blocks)
 *   v2/summary                            the zone without vehicles and areas (JSON), what the other
 *                                         2.2 files and the manifest need
 * Each is a compressed fragment (lib/core/gzip.ts) with its sha256. This process keeps
 * the parts it built or read in memory, by content: a read sends what it holds and gets back only
 * the bodies that differ (a zone's parts in one statement, one snapshot), so a 2.2 system of many
 * zones is assembled from memory while its zones do not change.
 */
import { LRUCache } from 'lru-cache';
import { type Queryable } from '../../../lib/core/db.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { inflateFragment, type Fragment } from '../../../lib/core/gzip.js';
import type { V2PartFile } from '../../../lib/feeds/gbfs/v2.js';
import { BLOCK_KEYS } from '../../../lib/feeds/gbfs/model.js';

export const SUMMARY_PART = 'v2/summary';
export const v2Part = (file: string) => `v2/${file}`;
export const v3Part = (file: string) => `v3/${file}`;
/** the parts of a file kept in vehicle blocks, in file order */
const blockParts = (part: string) => BLOCK_KEYS.map((k) => `${part}/${k}`);
export const V3_VEHICLE_PARTS = blockParts(v3Part('vehicle_status'));
export const V2_BIKE_PARTS = blockParts(v2Part('free_bike_status'));
export const V3_STATUS_PARTS = [v3Part('station_status'), v3Part('system_alerts'), ...V3_VEHICLE_PARTS];
/** the parts of a 2.2 file that is its zones' items, in file order */
export const v2FileParts = (file: V2PartFile): string[] => (file === 'free_bike_status' ? V2_BIKE_PARTS : [v2Part(file)]);

/** Memory for parts: 300 zones × 800 vehicles are ~30 MB of fragments (every part of every zone). */
const CACHE_BYTES = 128 * 1024 * 1024;

interface Cached {
  fragment: Fragment;
  /** the parsed JSON of a summary, once read */
  parsed?: unknown;
}

const cache = new LRUCache<string, Cached>({ maxSize: CACHE_BYTES, sizeCalculation: (c) => c.fragment.deflate.length + 256 });
const cacheKey = (zoneId: string, part: string) => `${zoneId}\u0000${part}`;

/** Remembers a part this process just built (its job stores it in gbfs_zone_parts). */
function rememberPart(zoneId: string, part: string, fragment: Fragment): void {
  cache.set(cacheKey(zoneId, part), { fragment });
}

export interface PartRef {
  sha256: string;
  /** the part's content (undefined when only the digest was asked for) */
  fragment?: Fragment;
}

/** zone → part → what is stored; a part the zone does not have is absent. */
export type Parts = Map<string, Map<string, PartRef>>;

/**
 * Parts a statement reads at most. GbfsZonePartsGet joins the rows it reads with the versions the
 * caller holds, and once Postgres settles on the statement's generic plan that join is a nested
 * loop, whose cost is the product of the two: 300 × 300 is a few milliseconds, while 100 zones ×
 * 18 parts in one statement (the all-zones 2.2 system) took ~175 ms (bench/gbfs-breadth.bench.ts).
 */
const PARTS_PER_READ = 300;

/**
 * The parts `parts` of the zones `zoneIds` as stored, with their content when `bodies` (from memory
 * where it holds the same version). One statement per PARTS_PER_READ parts, the parts of a zone
 * always in one (one snapshot: its vehicle blocks agree with each other).
 */
export async function readParts(db: Queryable, zoneIds: readonly string[], parts: readonly string[], bodies: boolean): Promise<Parts> {
  const out: Parts = new Map();
  const zonesPerRead = Math.max(1, Math.floor(PARTS_PER_READ / Math.max(1, parts.length)));
  for (let i = 0; i < zoneIds.length; i += zonesPerRead) await readSome(db, zoneIds.slice(i, i + zonesPerRead), parts, bodies, out);
  return out;
}

async function readSome(db: Queryable, zoneIds: readonly string[], parts: readonly string[], bodies: boolean, out: Parts): Promise<void> {
  // the fragments offered as held, kept here: while the statement runs, a build of this process may
  // replace a cache entry with a newer version (or the cache evict it), and a row that came back
  // without its body names the version offered, not whatever the cache holds by then
  const held = new Map<string, { zone: string; part: string; fragment: Fragment }>();
  if (bodies) {
    for (const zone of zoneIds) {
      for (const part of parts) {
        const c = cache.get(cacheKey(zone, part));
        if (c) held.set(cacheKey(zone, part), { zone, part, fragment: c.fragment });
      }
    }
  }
  const offered = [...held.values()];
  const rows = await db.many(sql('GbfsZonePartsGet'), [
    zoneIds,
    parts,
    offered.map((h) => h.zone),
    offered.map((h) => h.part),
    offered.map((h) => h.fragment.sha256),
    bodies,
  ]);
  for (const r of rows) {
    let ref: PartRef = { sha256: r.sha256 };
    if (bodies) {
      const key = cacheKey(r.zone_id, r.part);
      let fragment: Fragment | undefined;
      if (r.body) {
        fragment = { sha256: r.sha256, crc: Number(r.crc32), length: Number(r.length), deflate: r.body };
        cache.set(key, { fragment });
      } else {
        // the body is omitted only when this read offered this very version
        fragment = held.get(key)?.fragment;
        if (fragment?.sha256 !== r.sha256) throw new Error(`part ${r.part} of zone ${r.zone_id} came back without its content`);
      }
      ref = { sha256: r.sha256, fragment };
    }
    let zone = out.get(r.zone_id);
    if (!zone) out.set(r.zone_id, (zone = new Map<string, PartRef>()));
    zone.set(r.part, ref);
  }
}

/** The parsed JSON of a part (a summary), parsed once per version in this process. */
export function parsedPart<T>(zoneId: string, part: string, ref: PartRef, parse: (text: string) => T): T {
  const key = cacheKey(zoneId, part);
  const c = cache.get(key);
  if (c && c.fragment.sha256 === ref.sha256 && c.parsed !== undefined) return c.parsed as T;
  if (!ref.fragment) throw new Error(`part ${part} of zone ${zoneId} read without its content`);
  const parsed = parse(inflateFragment(ref.fragment).toString('utf8'));
  cache.set(key, { fragment: ref.fragment, parsed });
  return parsed;
}

/** A part a build made, to store. */
export interface NewPart {
  zone: string;
  part: string;
  fragment: Fragment;
}

/**
 * Stores the parts that changed (of one zone or of a batch of zones built in one transaction), in
 * one statement; returns those whose content changed. The bodies go as one bytea array, which the
 * driver sends as hex text (twice the bytes of a binary parameter): a ride's four or five changed
 * parts are ~30 KB, and one round trip costs both processes more than the hex does.
 */
export async function storeParts(tx: Queryable, changed: readonly NewPart[]): Promise<Array<{ zone: string; part: string }>> {
  if (!changed.length) return [];
  const rows = await tx.many(sql('GbfsZonePartsUpsert'), [
    changed.map((c) => c.zone),
    changed.map((c) => c.part),
    changed.map((c) => c.fragment.sha256),
    changed.map((c) => c.fragment.crc),
    changed.map((c) => c.fragment.length),
    changed.map((c) => c.fragment.deflate),
  ]);
  for (const c of changed) rememberPart(c.zone, c.part, c.fragment);
  return rows.map((r) => ({ zone: r.zone_id, part: r.part }));
}
