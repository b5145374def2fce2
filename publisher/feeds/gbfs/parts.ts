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
import { type Queryable } from '../../../lib/core/db.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { inflateFragment, type Fragment } from '../../../lib/core/gzip.js';
import type { V2PartFile } from '../../../lib/feeds/gbfs/v2.js';
import { BLOCK_KEYS } from '../../../lib/feeds/gbfs/model.js';
import type { GbfsMemory } from './memory.js';

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
 * The parts `parts` of the zones `zoneIds` as stored: their digests, and with `memory` their content
 * too (from `memory` where it holds the same version, and kept there). One statement per
 * PARTS_PER_READ parts, the parts of a zone always in one (one snapshot: its vehicle blocks agree
 * with each other).
 */
export async function readParts(db: Queryable, zoneIds: readonly string[], parts: readonly string[], memory?: GbfsMemory): Promise<Parts> {
  const out: Parts = new Map();
  const zonesPerRead = Math.max(1, Math.floor(PARTS_PER_READ / Math.max(1, parts.length)));
  for (let i = 0; i < zoneIds.length; i += zonesPerRead) await readSome(db, zoneIds.slice(i, i + zonesPerRead), parts, memory, out);
  return out;
}

async function readSome(db: Queryable, zoneIds: readonly string[], parts: readonly string[], memory: GbfsMemory | undefined, out: Parts): Promise<void> {
  const bodies = memory !== undefined;
  // the fragments offered as held, kept here: while the statement runs, a build of this process may
  // replace a cache entry with a newer version (or the cache evict it), and a row that came back
  // without its body names the version offered, not whatever the cache holds by then
  const held = new Map<string, { zone: string; part: string; fragment: Fragment }>();
  const key = (zone: string, part: string) => `${zone}\u0000${part}`;
  if (memory) {
    for (const zone of zoneIds) {
      for (const part of parts) {
        const c = memory.part(zone, part);
        if (c) held.set(key(zone, part), { zone, part, fragment: c.fragment });
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
    if (memory) {
      let fragment: Fragment | undefined;
      if (r.body) {
        fragment = { sha256: r.sha256, crc: Number(r.crc32), length: Number(r.length), deflate: r.body };
        memory.rememberPart(r.zone_id, r.part, { fragment });
      } else {
        // the body is omitted only when this read offered this very version
        fragment = held.get(key(r.zone_id, r.part))?.fragment;
        if (fragment?.sha256 !== r.sha256) throw new Error(`part ${r.part} of zone ${r.zone_id} came back without its content`);
      }
      ref = { sha256: r.sha256, fragment };
    }
    let zone = out.get(r.zone_id);
    if (!zone) out.set(r.zone_id, (zone = new Map<string, PartRef>()));
    zone.set(r.part, ref);
  }
}

/** The parsed JSON of a part (a summary), parsed once per version held in `memory`. */
export function parsedPart<T>(memory: GbfsMemory, zoneId: string, part: string, ref: PartRef, parse: (text: string) => T): T {
  const c = memory.part(zoneId, part);
  if (c && c.fragment.sha256 === ref.sha256 && c.parsed !== undefined) return c.parsed as T;
  if (!ref.fragment) throw new Error(`part ${part} of zone ${zoneId} read without its content`);
  const parsed = parse(inflateFragment(ref.fragment).toString('utf8'));
  memory.rememberPart(zoneId, part, { fragment: ref.fragment, parsed });
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
export async function storeParts(tx: Queryable, memory: GbfsMemory, changed: readonly NewPart[]): Promise<Array<{ zone: string; part: string }>> {
  if (!changed.length) return [];
  const rows = await tx.many(sql('GbfsZonePartsUpsert'), [
    changed.map((c) => c.zone),
    changed.map((c) => c.part),
    changed.map((c) => c.fragment.sha256),
    changed.map((c) => c.fragment.crc),
    changed.map((c) => c.fragment.length),
    changed.map((c) => c.fragment.deflate),
  ]);
  for (const c of changed) memory.rememberPart(c.zone, c.part, { fragment: c.fragment });
  return rows.map((r) => ({ zone: r.zone_id, part: r.part }));
}
