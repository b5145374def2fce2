/**
 * What the GBFS builders read from the database: the zones a build covers (a per-zone job: one),
 * loaded with a handful of batched queries (zone ids as an array), never one query per zone; and a
 * zone's summary, what a GBFS 2.2 system of many zones needs of each zone besides its vehicles and
 * areas (stored with the zone's parts, docs/gbfs.md "GBFS 2.2 at breadth").
 */
import type { Queryable } from '../../core/db.js';
import { sql } from '../../core/sql/typed.js';
import { currentSleepWindow } from './time.js';

export interface MultiPolygon {
  type: 'MultiPolygon';
  coordinates: number[][][][];
}

export interface GbfsZone {
  id: string;
  name: string;
  city: string;
  country: string;
  timezone: string;
  currency: string;
  language: string;
  parkingMode: 'free-floating' | 'parking-spot';
  maxSpeedKph: number;
  reducedSpeedKph: number;
  minBatteryPercent: number;
  sleepWindows: unknown;
  status: 'operating' | 'closed';
  supportEmail: string;
  createdAt: Date;
  updatedAt: Date;
  /** the rule outside every area, from the zone-rules decision in SQL (zone_global_rule) */
  globalRule: RulePermissions;
}

/** Start/end/through permissions and station parking as the SQL zone-rules decision gives them (migration 000081). */
export interface RulePermissions {
  rideStartAllowed: boolean;
  rideEndAllowed: boolean;
  rideThroughAllowed: boolean;
  stationParking: boolean;
}

export interface GbfsVehicleType {
  id: string;
  formFactor: 'scooter' | 'bicycle';
  propulsionType: 'electric' | 'electric_assist' | 'human';
  name: string;
  make: string;
  model: string;
  color: string;
  maxRangeMeters: number;
  maxSpeedKph: number;
  ratedPowerW: number;
  wheelCount: number;
  riderCapacity: number;
}

export interface GbfsPrice {
  vehicleTypeId: string;
  startPrice: number;
  pricePerMinute: number;
}

export type AreaType = 'operations' | 'no-parking' | 'parking-spot' | 'slow-zone' | 'no-riding' | 'incentive' | 'free-floating';

export interface GbfsArea {
  id: string;
  name: string;
  areaType: AreaType;
  vehicleTypes: string[];
  capacity: number | null;
  maxSpeedKph: number | null;
  geometry: MultiPolygon;
  lat: number;
  lon: number;
  /** feature order (zone_area_order: the city's areas, then by type): lower first, the first listed wins on overlap */
  precedence: number;
  /** the permissions inside the area (zone_area_rule) */
  rule: RulePermissions;
}

export interface GbfsStation {
  id: string;
  createdAt: Date;
}

export interface GbfsVehicle {
  gbfsId: string;
  vehicleTypeId: string;
  status: 'ready' | 'booked';
  batteryPercent: number;
  lastSeenAt: Date;
  lat: number;
  lon: number;
  maxRangeMeters: number;
  stationId: string | null;
}

/**
 * The blocks of a zone's listed vehicles, in file order: by the first hex digit of their GBFS id
 * (a uuid), each a run of consecutive items of the vehicle files (publisher/feeds/gbfs/vehicles.ts
 * renders and compresses them one by one). Postgres groups the vehicles the same way
 * (GbfsVehicleBlocks), so a build loads and parses only the blocks that changed. 16: a zone of
 * 1,000 vehicles has ~60 in a block (~20 KB of JSON), and a ride (its start unlists a vehicle, its
 * end lists it again under a new id) loads and renders two sixteenths of the zone again.
 */
export const BLOCK_KEYS = [...'0123456789abcdef'];

/** A block of a zone's listed vehicles, ordered by GBFS id, and the sha256 of the text it was parsed from. */
export interface VehicleBlock {
  /** undefined: not from GbfsVehicleBlocks (a block no load can compare with) */
  readonly sha256: string | undefined;
  readonly vehicles: readonly GbfsVehicle[];
}

/**
 * The blocks of a zone that the caller holds parsed (undefined: none, or not that one): a load sends
 * their digests, and Postgres sends only the text of the blocks that differ.
 */
export type KnownBlocks = (zoneId: string) => ReadonlyArray<VehicleBlock | undefined> | undefined;

const EMPTY_BLOCK: VehicleBlock = { sha256: 'empty', vehicles: [] };

export interface ZoneData {
  zone: GbfsZone;
  types: GbfsVehicleType[];
  prices: GbfsPrice[];
  /** every area (only when static files are built) */
  areas: GbfsArea[];
  /** parking-spot areas = stations */
  stations: GbfsStation[];
  /** listed vehicles (only when status files are built) */
  vehicles: readonly GbfsVehicle[];
  /** the same in BLOCK_KEYS' blocks, as they were loaded (absent: not loaded by block) */
  blocks?: readonly VehicleBlock[];
  /** the sleep window the zone is in now, if any */
  sleeping: { start: Date; end: Date } | undefined;
}

export interface LoadOptions {
  /** null: every zone */
  zoneIds: string[] | null;
  now: Date;
  areas: boolean;
  vehicles: boolean;
  /** the vehicle blocks the caller holds parsed, not sent again where unchanged */
  knownBlocks?: KnownBlocks;
}

function group<T, R>(rows: readonly T[], key: (r: T) => string, map: (r: T) => R, into: Map<string, ZoneData>, pick: (z: ZoneData) => R[]): void {
  for (const r of rows) {
    const z = into.get(key(r));
    if (z) pick(z).push(map(r));
  }
}

/** Loads the zones of `opts.zoneIds` (ordered by id) with what their GBFS files need. */
export async function loadZoneData(db: Queryable, opts: LoadOptions): Promise<Map<string, ZoneData>> {
  const zones = await db.many(sql('GbfsZones'), [opts.zoneIds]);
  const out = new Map<string, ZoneData>();
  for (const r of zones) {
    const zone: GbfsZone = {
      id: r.id,
      name: r.name,
      city: r.city,
      country: r.country,
      timezone: r.timezone,
      currency: r.currency,
      language: r.language,
      parkingMode: r.parking_mode,
      maxSpeedKph: r.max_speed_kph,
      reducedSpeedKph: r.reduced_speed_kph,
      minBatteryPercent: r.min_battery_percent,
      sleepWindows: r.sleep_windows,
      status: r.status,
      supportEmail: r.support_email,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      globalRule: {
        rideStartAllowed: r.global_start,
        rideEndAllowed: r.global_end,
        rideThroughAllowed: r.global_through,
        stationParking: r.global_station_parking,
      },
    };
    out.set(zone.id, {
      zone,
      types: [],
      prices: [],
      areas: [],
      stations: [],
      vehicles: [],
      sleeping: currentSleepWindow(zone.sleepWindows, zone.timezone, opts.now),
    });
  }
  const ids = [...out.keys()];
  if (ids.length === 0) return out;

  // one after the other: `db` is a job's transaction (one connection) as often as the pool
  const types = await db.many(sql('GbfsVehicleTypes'), [ids]);
  const prices = await db.many(sql('GbfsPricing'), [ids]);
  // the static files need every area (the stations among them), the status files only the stations
  const areas = opts.areas ? await db.many(sql('GbfsAreas'), [ids]) : [];
  const stations = opts.areas ? areas.filter((a) => a.area_type === 'parking-spot') : await db.many(sql('GbfsStations'), [ids]);
  const vehicles = opts.vehicles ? await loadVehicleBlocks(db, ids, opts.knownBlocks) : new Map<string, VehicleBlock[]>();
  const byZone = (r: { zone_id: string }): string => r.zone_id;
  group(
    types,
    byZone,
    (r): GbfsVehicleType => ({
      id: r.id,
      formFactor: r.form_factor,
      propulsionType: r.propulsion_type,
      name: r.name,
      make: r.make,
      model: r.model,
      color: r.color,
      maxRangeMeters: r.max_range_meters,
      maxSpeedKph: r.max_speed_kph,
      ratedPowerW: r.rated_power_w,
      wheelCount: r.wheel_count,
      riderCapacity: r.rider_capacity,
    }),
    out,
    (z) => z.types,
  );
  group(
    prices,
    byZone,
    (r): GbfsPrice => ({ vehicleTypeId: r.vehicle_type_id, startPrice: r.start_price, pricePerMinute: r.price_per_minute }),
    out,
    (z) => z.prices,
  );
  group(
    areas,
    byZone,
    (r): GbfsArea => ({
      id: r.id,
      // a rider and a city tell the city's areas (its MDS Policy rules in force) from the operator's
      // by the name; their precedence puts them first (zone_area_order)
      name: r.source === 'city' ? `${r.name} (city rule)` : r.name,
      areaType: r.area_type,
      vehicleTypes: r.vehicle_types,
      capacity: r.capacity,
      maxSpeedKph: r.max_speed_kph,
      // areas.geom is a MultiPolygon column (ST_Multi on import)
      geometry: r.geometry as unknown as MultiPolygon,
      // null only for an empty geometry, which has no point on its surface (gbfs.sql GbfsAreas)
      lat: r.lat!,
      lon: r.lon!,
      precedence: r.precedence,
      rule: { rideStartAllowed: r.rule_start, rideEndAllowed: r.rule_end, rideThroughAllowed: r.rule_through, stationParking: r.rule_station_parking },
    }),
    out,
    (z) => z.areas,
  );
  group(
    stations,
    byZone,
    (r): GbfsStation => ({ id: r.id, createdAt: r.created_at }),
    out,
    (z) => z.stations,
  );
  for (const [zoneId, blocks] of vehicles) {
    const z = out.get(zoneId);
    if (z) Object.assign(z, withBlocks(blocks));
  }
  return out;
}

/** A vehicle as GbfsVehicleBlocks writes it: [gbfs_id, vehicle_type_id, status, battery_percent, last_seen_ms, lat, lon, max_range_meters, station_id]. */
type VehicleTuple = [string, string, GbfsVehicle['status'], number, number, number, number, number, string | null];

/** A block's text from GbfsVehicleBlocks: its vehicles, in GBFS id order. */
function vehiclesOf(text: string): GbfsVehicle[] {
  return (JSON.parse(text) as VehicleTuple[]).map(([gbfsId, vehicleTypeId, status, batteryPercent, lastSeenMs, lat, lon, maxRangeMeters, stationId]) => ({
    gbfsId,
    vehicleTypeId,
    // GbfsVehicleBlocks lists only ready and booked vehicles
    status,
    batteryPercent,
    lastSeenAt: new Date(lastSeenMs),
    lat,
    lon,
    maxRangeMeters,
    stationId,
  }));
}

/**
 * The vehicle blocks of `zoneIds` (every zone of them, its blocks in BLOCK_KEYS order; a block
 * without vehicles is EMPTY_BLOCK): those `known` holds with the same digest are its own objects,
 * the others parsed from the text Postgres sent.
 */
export async function loadVehicleBlocks(db: Queryable, zoneIds: readonly string[], known: KnownBlocks | undefined): Promise<Map<string, VehicleBlock[]>> {
  // read once: what the caller holds may change (an LRU's eviction) while the query runs
  const mine = new Map(zoneIds.map((z) => [z, known?.(z)]));
  const held: [string[], string[], string[]] = [[], [], []];
  for (const [z, blocks] of mine) {
    blocks?.forEach((b, i) => {
      if (b?.sha256 === undefined) return;
      held[0].push(z);
      held[1].push(BLOCK_KEYS[i]);
      held[2].push(b.sha256);
    });
  }
  const out = new Map<string, VehicleBlock[]>(zoneIds.map((z) => [z, BLOCK_KEYS.map(() => EMPTY_BLOCK)]));
  for (const r of await db.many(sql('GbfsVehicleBlocks'), [zoneIds, ...held])) {
    const blocks = out.get(r.zone_id);
    const i = BLOCK_KEYS.indexOf(r.block);
    // gbfs_id is a uuid: its text starts with a lower-case hex digit
    if (!blocks || i < 0) throw new Error(`gbfs vehicle block ${r.block} of zone ${r.zone_id}: not one of the blocks asked for`);
    if (r.vehicles !== null) blocks[i] = { sha256: r.sha256, vehicles: vehiclesOf(r.vehicles) };
    else {
      // no text: the block is the one the caller holds with this digest
      const same = mine.get(r.zone_id)?.[i];
      if (same?.sha256 !== r.sha256) throw new Error(`gbfs vehicle block ${r.block} of zone ${r.zone_id} sent without its text, and not held`);
      blocks[i] = same;
    }
  }
  return out;
}

const withBlocks = (blocks: readonly VehicleBlock[]): Pick<ZoneData, 'vehicles' | 'blocks'> => ({ vehicles: blocks.flatMap((b) => b.vehicles), blocks });

/**
 * A zone loaded before (`known`: loadZoneData's, its vehicles and areas aside) with its listed
 * vehicles now and its sleep window at `now`: one query instead of loadZoneData's five, for a build
 * of the status files whose caller knows the rest has not changed since (its static change counter).
 * `knownBlocks`: the vehicle blocks the caller holds parsed, not sent again where unchanged.
 */
export async function loadZoneVehicles(db: Queryable, known: ZoneData, now: Date, knownBlocks?: KnownBlocks): Promise<ZoneData> {
  return zoneWithVehicles(known, (await loadVehicleBlocks(db, [known.zone.id], knownBlocks)).get(known.zone.id)!, now);
}

/** A zone loaded before (loadZoneVehicles' `known`) with vehicle blocks loaded since (loadVehicleBlocks) and its sleep window at `now`. */
export function zoneWithVehicles(known: ZoneData, blocks: readonly VehicleBlock[], now: Date): ZoneData {
  return { ...known, areas: [], ...withBlocks(blocks), sleeping: currentSleepWindow(known.zone.sleepWindows, known.zone.timezone, now) };
}

/**
 * The zone without its vehicles and areas, as JSON: what the 2.2 system files of a scope are built
 * from (information, regions, vehicle types, pricing plans, alerts, the manifest). Stable: the same
 * data gives the same text, so its sha256 says whether a scope must be assembled again.
 */
export function zoneSummaryJson(z: ZoneData): string {
  return JSON.stringify({ zone: z.zone, types: z.types, prices: z.prices, stations: z.stations, sleeping: z.sleeping ?? null });
}

/** A zone from its summary: vehicles and areas empty (the 2.2 files of those are the zones' fragments). */
export function zoneFromSummary(json: string): ZoneData {
  const s = JSON.parse(json) as {
    zone: GbfsZone & { createdAt: string; updatedAt: string };
    types: GbfsVehicleType[];
    prices: GbfsPrice[];
    stations: Array<{ id: string; createdAt: string }>;
    sleeping: { start: string; end: string } | null;
  };
  return {
    zone: { ...s.zone, createdAt: new Date(s.zone.createdAt), updatedAt: new Date(s.zone.updatedAt) },
    types: s.types,
    prices: s.prices,
    areas: [],
    stations: s.stations.map((st) => ({ id: st.id, createdAt: new Date(st.createdAt) })),
    vehicles: [],
    sleeping: s.sleeping ? { start: new Date(s.sleeping.start), end: new Date(s.sleeping.end) } : undefined,
  };
}
