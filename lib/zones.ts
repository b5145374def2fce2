/**
 * Zone rules the rental engine and the partner API share: sleep windows (local wall-clock time in the
 * zone's timezone, from the injected clock) and the parking rules at a point (PostGIS).
 */
import { q, type Queryable } from './db.js';

export interface SleepWindow {
  start: string;
  end: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Minutes since local midnight of `at` in `timeZone`. */
export function localMinutes(at: Date, timeZone: string): number {
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

function toMinutes(hhmm: string): number | undefined {
  const m = /^(\d{1,2}):(\d{2})$/.exec(hhmm);
  if (!m) return undefined;
  const v = Number(m[1]) * 60 + Number(m[2]);
  return v <= 24 * 60 ? v : undefined;
}

/**
 * True when `now` falls in one of the windows, read in the zone's timezone. A window [start, end)
 * whose end is before its start runs over midnight; start = end is an empty window; malformed
 * windows are ignored. A closed zone counts as sleeping (no rental can start there).
 */
export function isSleeping(zone: { timezone: string; sleepWindows: unknown; status?: string }, now: Date): boolean {
  if (zone.status === 'closed') return true;
  if (!Array.isArray(zone.sleepWindows) || zone.sleepWindows.length === 0) return false;
  const t = localMinutes(now, zone.timezone);
  for (const w of zone.sleepWindows as SleepWindow[]) {
    const s = toMinutes(String(w?.start));
    const e = toMinutes(String(w?.end));
    if (s === undefined || e === undefined || s === e) continue;
    if (s < e ? t >= s && t < e : t >= s || t < e) return true;
  }
  return false;
}

export type ParkingDecision = 'good-parking' | 'bad-parking';

export interface ParkingVerdict {
  parkingMode: 'free-floating' | 'parking-spot';
  inNoParking: boolean;
  inNoRiding: boolean;
  inParkingSpot: boolean;
  inIncentive: boolean;
  /** may a rental end here? free-floating: outside no-parking and no-riding; parking-spot: inside a spot */
  canEnd: boolean;
  /** the parking decision for a photo taken here */
  decision: ParkingDecision;
}

/**
 * The zone's parking rules at a point for a vehicle form factor (an area's vehicle_types restricts
 * the area to those form factors; empty means every vehicle).
 */
export async function parkingAt(db: Queryable, zoneId: string, point: { lat: number; lng: number }, formFactor: string): Promise<ParkingVerdict> {
  const r = await db.one(q('RentalParkingAt'), [zoneId, point.lng, point.lat, formFactor]);
  const parkingMode = r.parking_mode as ParkingVerdict['parkingMode'];
  const inNoParking = r.in_no_parking as boolean;
  const inNoRiding = r.in_no_riding as boolean;
  const inParkingSpot = r.in_parking_spot as boolean;
  const inIncentive = r.in_incentive as boolean;
  const canEnd = parkingMode === 'parking-spot' ? inParkingSpot : !inNoParking && !inNoRiding;
  const good = inIncentive || inParkingSpot || canEnd;
  return { parkingMode, inNoParking, inNoRiding, inParkingSpot, inIncentive, canEnd, decision: good ? 'good-parking' : 'bad-parking' };
}
