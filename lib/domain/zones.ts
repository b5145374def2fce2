/**
 * Zone rules the rental engine and the partner API share: sleep windows (local wall-clock time in the
 * zone's timezone, from the injected clock) and the start/end rules at a point (PostGIS, the same
 * SQL decision the GBFS geofencing rules are published from).
 */
import type { FromSchema } from 'json-schema-to-ts';
import { type Queryable } from '../core/db.js';
import { sql } from '../core/sql/typed.js';
import { LOCAL_TIME_SCHEMA, type SLEEP_WINDOW_SCHEMA } from '../../schemas/common.js';

/**
 * The zone id rule, the one every API, the console and the zone import check: a letter or digit,
 * then up to 63 letters, digits, `_` or `-` (it becomes part of URLs and object keys).
 */
export const ZONE_ID_SCHEMA = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' } as const;
const ZONE_ID = new RegExp(ZONE_ID_SCHEMA.pattern);

export function isZoneId(s: unknown): s is string {
  return typeof s === 'string' && ZONE_ID.test(s);
}

/** A sleep window as the zone file and `zones.sleep_windows` hold it (schemas/common.ts). */
export type SleepWindow = FromSchema<typeof SLEEP_WINDOW_SCHEMA>;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Minutes since local midnight of `at` in `timeZone`. */
function localMinutes(at: Date, timeZone: string): number {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, f);
  }
  let h = 0;
  let m = 0;
  for (const p of f.formatToParts(at)) {
    if (p.type === 'hour') h = Number(p.value);
    else if (p.type === 'minute') m = Number(p.value);
  }
  return h * 60 + m;
}

const LOCAL_TIME = new RegExp(LOCAL_TIME_SCHEMA.pattern);

/**
 * A sleep window's local time (LOCAL_TIME_SCHEMA: `H:MM`, `HH:MM`, `24:00`) as minutes since local
 * midnight; undefined for anything else. The one reading of the grammar the zone file is checked by.
 */
export function localTimeMinutes(hhmm: unknown): number | undefined {
  if (typeof hhmm !== 'string' || !LOCAL_TIME.test(hhmm)) return undefined;
  const [h, m] = hhmm.split(':');
  return Number(h) * 60 + Number(m);
}

/**
 * The one reading of a zone's sleep windows, for the rental engine and the GBFS files alike:
 * well-formed, non-empty windows as [start, end) minutes of the local day; an end before its start
 * runs over midnight; start = end is empty; malformed windows are ignored.
 */
export function sleepWindowMinutes(raw: unknown): Array<[number, number]> {
  if (!Array.isArray(raw)) return [];
  const out: Array<[number, number]> = [];
  for (const w of raw as Array<Partial<SleepWindow> | null>) {
    const s = localTimeMinutes(w?.start);
    const e = localTimeMinutes(w?.end);
    if (s !== undefined && e !== undefined && s !== e) out.push([s, e]);
  }
  return out;
}

/**
 * True when `now` falls in one of the windows, read in the zone's timezone. A window [start, end)
 * whose end is before its start runs over midnight; start = end is an empty window; malformed
 * windows are ignored. A closed zone counts as sleeping (no rental can start there).
 */
export function isSleeping(zone: { timezone: string; sleepWindows: unknown; status?: string }, now: Date): boolean {
  if (zone.status === 'closed') return true;
  const windows = sleepWindowMinutes(zone.sleepWindows);
  if (windows.length === 0) return false;
  const t = localMinutes(now, zone.timezone);
  return windows.some(([s, e]) => (s < e ? t >= s && t < e : t >= s || t < e));
}

export type ParkingDecision = 'good-parking' | 'bad-parking';

export interface ParkingVerdict {
  parkingMode: 'free-floating' | 'parking-spot';
  /** the deciding area's type; null: outside every applicable area (the zone's global rule) */
  areaType: string | null;
  inParkingSpot: boolean;
  inIncentive: boolean;
  /** may a ride start here? */
  canStart: boolean;
  /** may a rental end here? */
  canEnd: boolean;
  /** the parking decision for a photo taken here */
  decision: ParkingDecision;
}

/**
 * The zone's rules at a point for a vehicle type, from the one SQL decision `zone_rules_at`
 * (sql/migrations/000081_zone_rules.sql) that the GBFS geofencing rules are published from: the
 * first applicable area in precedence order (no-riding, no-parking, parking-spot, slow-zone,
 * incentive, free-floating, operations), else the zone's global rule (outside the operations
 * areas nothing starts or ends). An area's vehicle_types restricts it to those form factors or
 * type ids; empty means every vehicle.
 */
export async function parkingAt(db: Queryable, zoneId: string, point: { lat: number; lng: number }, vehicleTypeId: string): Promise<ParkingVerdict> {
  const r = await db.one(sql('ZoneRulesAt'), [zoneId, point.lng, point.lat, vehicleTypeId]);
  const inParkingSpot = r.in_parking_spot;
  const inIncentive = r.in_incentive;
  const canEnd = r.ride_end_allowed;
  const good = inIncentive || inParkingSpot || canEnd;
  return {
    parkingMode: r.parking_mode,
    areaType: r.area_type,
    inParkingSpot,
    inIncentive,
    canStart: r.ride_start_allowed,
    canEnd,
    decision: good ? 'good-parking' : 'bad-parking',
  };
}
