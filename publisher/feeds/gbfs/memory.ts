/**
 * What a publisher keeps of GBFS between builds, for one database: one object, made by whoever runs
 * the builds for a context (publisher/index.ts for its workers, publishGbfsSnapshots and
 * runGbfsTick for a run of their own) and handed to every builder, so that two databases in one
 * process, or a context made again after a restore, never share it. Its three caches are bounded
 * here, and report on /metrics under their names (lib/core/cache.ts):
 *
 *   gbfs_zones           the zones loaded, their vehicles and areas aside, by the static change
 *                        counter read before the load (zone.ts): a build of the status files alone,
 *                        whose counter has not moved since, loads only the vehicles
 *   gbfs_vehicle_blocks  each zone's rendered vehicle blocks (vehicles.ts), whose digests the next
 *                        load sends so that only the blocks that changed come back
 *   gbfs_parts           the zones' parts as stored in gbfs_zone_parts (parts.ts), so that a read
 *                        offers the versions it holds and gets back only the others
 *
 * Everything in it is a copy of what the database holds (its counters, its parts' digests): an entry
 * is used only when the database says it is still current, and an evicted one is loaded again. The
 * hourly rebuild and forced builds use none of it.
 */
import type { Fragment } from '../../../lib/core/gzip.js';
import { NamedCache } from '../../../lib/core/cache.js';
import type { KnownBlocks, VehicleBlock, ZoneData } from '../../../lib/feeds/gbfs/model.js';

/** Zones at most (their rows, prices and types: a few KB each). */
const MAX_ZONES = 10_000;
/** ~300 zones × 800 vehicles: ~25 MB of fragments and the rows they were rendered from. */
const BLOCK_BYTES = 128 * 1024 * 1024;
/** 300 zones × 800 vehicles are ~30 MB of fragments (every part of every zone). */
const PART_BYTES = 128 * 1024 * 1024;
/** what a loaded vehicle row costs in memory, roughly */
const VEHICLE_BYTES = 300;

/** A zone as loaded at a static counter, without its vehicles and areas. */
export interface KnownZone {
  token: number;
  data: ZoneData;
}

/** A rendered block: its vehicles as loaded (with the digest of their text), and its items. */
export interface Block extends VehicleBlock {
  v3: Fragment;
  v2: Fragment;
  /** where each vehicle's item ends in the block's text (bytes), in the 3.0 and the 2.2 fragment */
  ends3: Uint32Array;
  ends2: Uint32Array;
}

/** A zone's blocks, and the inputs besides its vehicles that its items were rendered from. */
export interface ZoneBlocks {
  context: string;
  blocks: Array<Block | undefined>;
}

/** A part as stored, and its parsed JSON once read (a summary). */
export interface HeldPart {
  fragment: Fragment;
  parsed?: unknown;
}

const partKey = (zoneId: string, part: string) => `${zoneId}\u0000${part}`;

export class GbfsMemory {
  private readonly zones = new NamedCache<string, KnownZone>('gbfs_zones', { max: MAX_ZONES });
  private readonly blocks = new NamedCache<string, ZoneBlocks>('gbfs_vehicle_blocks', {
    maxSize: BLOCK_BYTES,
    sizeCalculation: (z) => z.blocks.reduce((n, b) => n + (b ? b.v3.deflate.length + b.v2.deflate.length + b.vehicles.length * (VEHICLE_BYTES + 8) : 0), 1024),
  });
  private readonly parts = new NamedCache<string, HeldPart>('gbfs_parts', { maxSize: PART_BYTES, sizeCalculation: (c) => c.fragment.deflate.length + 256 });

  knownZone(zoneId: string): KnownZone | undefined {
    return this.zones.get(zoneId);
  }

  rememberZone(zoneId: string, known: KnownZone): void {
    this.zones.set(zoneId, known);
  }

  zoneBlocks(zoneId: string): ZoneBlocks | undefined {
    return this.blocks.get(zoneId);
  }

  rememberBlocks(zoneId: string, blocks: ZoneBlocks): void {
    this.blocks.set(zoneId, blocks);
  }

  /**
   * The vehicle blocks of a zone held rendered and valid, for the zone's next load
   * (lib/feeds/gbfs/model.ts KnownBlocks): Postgres sends only the text of the blocks that differ.
   */
  readonly heldBlocks: KnownBlocks = (zoneId) => this.blocks.peek(zoneId)?.blocks;

  part(zoneId: string, part: string): HeldPart | undefined {
    return this.parts.get(partKey(zoneId, part));
  }

  rememberPart(zoneId: string, part: string, held: HeldPart): void {
    this.parts.set(partKey(zoneId, part), held);
  }
}
