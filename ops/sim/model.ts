/**
 * What the simulator and the seed need to know about a zone, loaded once from the database:
 * areas as in-memory shapes, prices, sleep windows as UTC intervals.
 */
import { TZDate } from '@date-fns/tz';
import { type Queryable } from '../../lib/core/db.js';
import { sleepWindowMinutes, type SleepWindow } from '../../lib/domain/zones.js';
import { sql } from '../../lib/core/sql/typed.js';
import { contains, inAny, randomPointIn, shape, type MultiPolygonCoords, type Position, type Shape } from './geo.js';
import type { Prng } from './prng.js';

export interface SpotShape extends Shape {
  capacity: number;
}

export interface ZoneModel {
  id: string;
  timezone: string;
  currency: string;
  vatRate: number;
  parkingMode: 'free-floating' | 'parking-spot';
  minBatteryPercent: number;
  sleepWindows: SleepWindow[];
  ops: Shape;
  noRiding: Shape[];
  noParking: Shape[];
  spots: SpotShape[];
  pricing: Map<string, { startPrice: number; pricePerMinute: number }>;
}

export async function loadZoneModels(db: Queryable, zoneIds: string[] | null): Promise<ZoneModel[]> {
  const zones = await db.many(sql('SimZones'), [zoneIds]);
  const areas = await db.many(sql('SimAreas'), [zones.map((z) => z.id)]);
  const prices = await db.many(sql('SimPricing'), [zones.map((z) => z.id)]);
  return zones.map((z): ZoneModel => {
    const mine = areas.filter((a) => a.zone_id === z.id);
    const shapes = (t: string) => mine.filter((a) => a.area_type === t).map((a) => shape(toMulti(a.geojson)));
    const opsRow = mine.find((a) => a.area_type === 'operations-union');
    return {
      id: z.id,
      timezone: z.timezone,
      currency: z.currency,
      vatRate: Number(z.vat_rate),
      parkingMode: z.parking_mode,
      minBatteryPercent: z.min_battery_percent,
      // their shape is the zone file's (ops/admin/zone-file.ts), checked when the zone was written
      sleepWindows: Array.isArray(z.sleep_windows) ? (z.sleep_windows as ZoneModel['sleepWindows']) : [],
      ops: shape(toMulti(opsRow?.geojson ?? z.boundary_geojson)),
      noRiding: shapes('no-riding'),
      noParking: shapes('no-parking'),
      // a parking spot always has a capacity (CHECK on areas)
      spots: mine.filter((a) => a.area_type === 'parking-spot').map((a) => ({ ...shape(toMulti(a.geojson)), capacity: a.capacity! })),
      pricing: new Map(
        prices.filter((p) => p.zone_id === z.id).map((p) => [p.vehicle_type_id, { startPrice: p.start_price, pricePerMinute: p.price_per_minute }]),
      ),
    };
  });
}

function toMulti(geojson: string | { type: string; coordinates: unknown }): MultiPolygonCoords {
  // ST_AsGeoJSON of a zone's or an area's geometry, a (multi)polygon by the zone file's checks
  const g = (typeof geojson === 'string' ? JSON.parse(geojson) : geojson) as { type: string; coordinates: unknown };
  if (g.type === 'Polygon') return [g.coordinates as MultiPolygonCoords[number]];
  if (g.type === 'MultiPolygon') return g.coordinates as MultiPolygonCoords;
  throw new Error(`unexpected geometry type ${g.type}`);
}

/** Where a parked vehicle may stand: inside operations, outside no-riding / no-parking areas. */
export function canPark(z: ZoneModel, lng: number, lat: number): boolean {
  if (!contains(z.ops, lng, lat) || inAny(z.noRiding, lng, lat)) return false;
  if (z.parkingMode === 'parking-spot') return inAny(z.spots, lng, lat);
  return !inAny(z.noParking, lng, lat);
}

/** A parking place for a vehicle: inside a parking spot (spot zones) or anywhere allowed. */
export function parkingPlace(rng: Prng, z: ZoneModel, spotIndex?: number): Position {
  if (z.parkingMode === 'parking-spot' && z.spots.length > 0) {
    const s = z.spots[spotIndex === undefined ? rng.int(0, z.spots.length - 1) : spotIndex % z.spots.length];
    const p = randomPointIn(rng, s, (lng, lat) => contains(z.ops, lng, lat) && !inAny(z.noRiding, lng, lat));
    if (p) return p;
  }
  const p = randomPointIn(rng, z.ops, (lng, lat) => canPark(z, lng, lat));
  if (!p) throw new Error(`zone ${z.id}: no place to park found`);
  return p;
}

/** Sleep windows turned into UTC intervals [start, end) in ms, covering [from, to]. */
export function sleepIntervals(z: ZoneModel, from: Date, to: Date): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  if (z.sleepWindows.length === 0) return out;
  const dayMs = 86400000;
  for (let t = from.getTime() - 2 * dayMs; t <= to.getTime() + 2 * dayMs; t += dayMs) {
    const local = new TZDate(t, z.timezone);
    const [y, m, d] = [local.getFullYear(), local.getMonth(), local.getDate()];
    // the engine's reading of the windows (lib/domain/zones.ts): the same grammar, the same empty windows
    for (const [s, e] of sleepWindowMinutes(z.sleepWindows)) {
      // wall-clock hours and minutes of the zone (24:00 is the next day's midnight)
      const start = new TZDate(y, m, d, Math.floor(s / 60), s % 60, z.timezone).getTime();
      const end = new TZDate(y, m, d + (e < s ? 1 : 0), Math.floor(e / 60), e % 60, z.timezone).getTime();
      out.push([start, end]);
    }
  }
  out.sort((a, b) => a[0] - b[0]);
  // merge duplicates/overlaps from neighbouring days
  const merged: Array<[number, number]> = [];
  for (const iv of out) {
    const last = merged[merged.length - 1];
    if (last && iv[0] <= last[1]) last[1] = Math.max(last[1], iv[1]);
    else merged.push([iv[0], iv[1]]);
  }
  return merged;
}

/** Sleep-window lookups on sorted, disjoint intervals. */
export class SleepCalendar {
  constructor(private readonly iv: Array<[number, number]>) {}

  /** The interval containing t, if any. */
  containing(t: number): [number, number] | undefined {
    const i = this.indexAfter(t) - 1;
    const c = this.iv[i];
    return c && c[0] <= t && t < c[1] ? c : undefined;
  }

  /** The first interval starting strictly after t. */
  nextStart(t: number): [number, number] | undefined {
    return this.iv[this.indexAfter(t)];
  }

  private indexAfter(t: number): number {
    let lo = 0;
    let hi = this.iv.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.iv[mid][0] <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
