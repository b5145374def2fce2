/**
 * A zone's vehicle files in blocks (docs/gbfs.md "Vehicle blocks"): the data of its 3.0
 * vehicle_status and its items of the 2.2 free_bike_status, each cut into 16 blocks by the first hex
 * digit of the vehicles' GBFS ids. The files list the vehicles ordered by that id (GbfsVehicleBlocks), so
 * a block is a run of consecutive items and a file is its blocks end to end, a comma between the
 * non-empty ones: byte for byte the text of the whole-file builders (buildV3, buildV2).
 *
 * A block is rendered and compressed only when one of its vehicles changed (any field of the
 * loaded row), a vehicle joined or left it, or the zone inputs its items read changed
 * (`itemContext`); the other blocks are the fragments this process made at the zone's previous
 * build; of a block rendered again, only the items of vehicles that changed are rendered and
 * validated again, the others cut from the block's previous text.
 * The load itself follows change: it sends Postgres the digests of the blocks the publisher's
 * memory holds (memory.ts `heldBlocks`), and only the blocks whose text differs come back and are parsed.
 * Each block is one of the zone's parts (parts.ts), so what a build compresses, stores and sends
 * on to the 2.2 scopes follows the vehicles that changed, not the size of the zone. Items are
 * validated one by one (our schemas constrain each item, never the array as a whole: valid items in
 * a valid skeleton make a valid file). A process that has no blocks of the zone (it just started,
 * or another process built the zone last) renders every block, and so does the zone's hourly
 * rebuild: a block's bytes are a function of its vehicles, wherever and whenever it is rendered.
 */
import type { BuildEnv } from '../../../lib/feeds/gbfs/common.js';
import { fragment, inflateFragment, type Fragment } from '../../../lib/core/gzip.js';
import { BLOCK_KEYS, type GbfsVehicle, type VehicleBlock, type ZoneData } from '../../../lib/feeds/gbfs/model.js';
import type { Block, GbfsMemory } from './memory.js';
import { freeBikeItemV2, pricedTypes } from '../../../lib/feeds/gbfs/v2.js';
import { vehicleStatusItemV3 } from '../../../lib/feeds/gbfs/v3.js';
import { compile } from '../../../lib/core/validate.js';
import { GBFS_V2_SCHEMAS } from '../../../schemas/gbfs/v2.js';
import { GBFS_V3_SCHEMAS } from '../../../schemas/gbfs/v3.js';

/**
 * zlib level of the blocks. A block starts its compression afresh (a fragment refers to nothing
 * before it): at the stored objects' level 3 sixteen blocks are ~7 % larger than the file compressed
 * whole, at 6 about the same size (measured: docs/gbfs.md "Figures"). A block is compressed once
 * and then written with every refresh of every file that holds it, so the extra CPU of level 6 is
 * paid once per change, the bytes at every write.
 */
const BLOCK_LEVEL = 6;

export interface VehicleFiles {
  /** the comma-joined items of each block of the 3.0 vehicle_status (empty fragment: no vehicle) */
  v3: Fragment[];
  /** the same for the zone's items of the 2.2 free_bike_status */
  v2: Fragment[];
  /** the items that fail their schema (none: every block is valid) */
  invalidV3: unknown[];
  invalidV2: unknown[];
}

const validV3 = compile(GBFS_V3_SCHEMAS.vehicle_status.properties.data.properties.vehicles.items);
const validV2 = compile(GBFS_V2_SCHEMAS.free_bike_status.properties.data.properties.bikes.items);

/**
 * What an item reads besides its vehicle (vehicleStatusItemV3, freeBikeItemV2): the zone row (id,
 * status, minimum battery), its sleep window, its prices, the base URL of the links. More than the
 * items need (any edit of the zone renders its blocks again), never less.
 */
function itemContext(z: ZoneData, env: BuildEnv): string {
  return JSON.stringify([z.zone, z.sleeping ?? null, z.prices, env.publicBaseUrl]);
}

/** Every field of a loaded vehicle: a field added to GbfsVehicle must be added here (the type says so). */
const VEHICLE_FIELDS = Object.keys({
  gbfsId: true,
  vehicleTypeId: true,
  status: true,
  batteryPercent: true,
  lastSeenAt: true,
  lat: true,
  lon: true,
  maxRangeMeters: true,
  stationId: true,
} satisfies Record<keyof GbfsVehicle, true>) as Array<keyof GbfsVehicle>;

function sameVehicle(a: GbfsVehicle, b: GbfsVehicle): boolean {
  for (const k of VEHICLE_FIELDS) {
    const x = a[k];
    const y = b[k];
    if (x instanceof Date ? !(y instanceof Date) || x.getTime() !== y.getTime() : x !== y) return false;
  }
  return true;
}

function sameVehicles(a: readonly GbfsVehicle[], b: readonly GbfsVehicle[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameVehicle(a[i], b[i])) return false;
  return true;
}

/** The zone's listed vehicles by block, in file order; throws if they are not ordered by GBFS id. */
function byBlock(vehicles: readonly GbfsVehicle[]): GbfsVehicle[][] {
  const out: GbfsVehicle[][] = BLOCK_KEYS.map(() => []);
  let last = 0;
  for (const v of vehicles) {
    const i = BLOCK_KEYS.indexOf(v.gbfsId[0]);
    // a block is a run of the file's items only if the rows come ordered by gbfs_id (GbfsVehicleBlocks)
    if (i < last) throw new Error(`gbfs vehicles not ordered by GBFS id: ${v.gbfsId} after block ${BLOCK_KEYS[last]}`);
    last = i;
    out[i].push(v);
  }
  return out;
}

const COMMA = Buffer.from(',');

/** The text of one item of a block: `text` the block's, `ends` where its items end. */
const itemOf = (text: Buffer, ends: Uint32Array, j: number): Buffer => text.subarray(j ? ends[j - 1] + 1 : 0, ends[j]);

/**
 * A block rendered again. `prev`: this process's previous valid render of the block, in the same
 * item context. An item is a function of its vehicle and that context, so the item of a vehicle
 * found there unchanged is the text rendered and validated then: it is taken from the previous
 * fragment (decompressed once, cut at the item ends it recorded), and only the items of vehicles
 * that changed are rendered and validated (a ride changes two vehicles of two blocks' ~120). A
 * vehicle keeps its block while it keeps its GBFS id: the block's previous vehicles are all it can
 * be found among.
 */
function render(z: ZoneData, env: BuildEnv, priced: ReadonlySet<string>, loaded: VehicleBlock, into: VehicleFiles, prev: Block | undefined): Block | undefined {
  const index = new Map(prev?.vehicles.map((v, j) => [v.gbfsId, j]));
  let text3: Buffer | undefined;
  let text2: Buffer | undefined;
  const n = loaded.vehicles.length;
  const t3: Buffer[] = [];
  const t2: Buffer[] = [];
  const ends3 = new Uint32Array(n);
  const ends2 = new Uint32Array(n);
  let end3 = 0;
  let end2 = 0;
  let valid = true;
  for (let k = 0; k < n; k++) {
    const v = loaded.vehicles[k];
    const j = index.get(v.gbfsId);
    let a: Buffer;
    let b: Buffer;
    if (prev && j !== undefined && sameVehicle(prev.vehicles[j], v)) {
      text3 ??= inflateFragment(prev.v3);
      text2 ??= inflateFragment(prev.v2);
      a = itemOf(text3, prev.ends3, j);
      b = itemOf(text2, prev.ends2, j);
    } else {
      const item3 = vehicleStatusItemV3(z, env, v);
      const item2 = freeBikeItemV2(z, env, priced, v);
      if (!validV3(item3)) {
        into.invalidV3.push(item3);
        valid = false;
      }
      if (!validV2(item2)) {
        into.invalidV2.push(item2);
        valid = false;
      }
      a = Buffer.from(JSON.stringify(item3));
      b = Buffer.from(JSON.stringify(item2));
    }
    if (k) {
      t3.push(COMMA);
      t2.push(COMMA);
      end3++;
      end2++;
    }
    t3.push(a);
    t2.push(b);
    ends3[k] = end3 += a.length;
    ends2[k] = end2 += b.length;
  }
  const block = {
    ...loaded,
    v3: fragment(Buffer.concat(t3, end3), undefined, BLOCK_LEVEL),
    v2: fragment(Buffer.concat(t2, end2), undefined, BLOCK_LEVEL),
    ends3,
    ends2,
  };
  into.v3.push(block.v3);
  into.v2.push(block.v2);
  // a block with an invalid item is rendered again at every build, and so logged again
  return valid ? block : undefined;
}

/**
 * The vehicle files of a zone whose vehicles are loaded, block by block; `fresh`: render every block
 * (the zone's hourly rebuild, a forced build) rather than reuse the blocks `memory` holds.
 */
export function vehicleFiles(memory: GbfsMemory, z: ZoneData, env: BuildEnv, fresh: boolean): VehicleFiles {
  const context = itemContext(z, env);
  const before = fresh ? undefined : memory.zoneBlocks(z.zone.id);
  const reuse = before?.context === context ? before.blocks : [];
  const priced = pricedTypes(z);
  const out: VehicleFiles = { v3: [], v2: [], invalidV3: [], invalidV2: [] };
  const loaded = z.blocks ?? byBlock(z.vehicles).map((vehicles): VehicleBlock => ({ sha256: undefined, vehicles }));
  const blocks = loaded.map((b, i) => {
    const prev = reuse[i];
    // the same array: the load found the block's text unchanged (its digest) and kept this one
    if (prev && (prev.vehicles === b.vehicles || sameVehicles(prev.vehicles, b.vehicles))) {
      out.v3.push(prev.v3);
      out.v2.push(prev.v2);
      return prev.vehicles === b.vehicles ? prev : { ...prev, ...b };
    }
    return render(z, env, priced, b, out, prev);
  });
  memory.rememberBlocks(z.zone.id, { context, blocks });
  return out;
}
