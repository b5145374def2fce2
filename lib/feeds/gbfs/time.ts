/**
 * Time in GBFS: POSIX seconds in 2.2, RFC 3339 in UTC without fractional seconds in 3.0 (the
 * requirement: "ISO 8601 UTC string in the v3 responses"; lib/core/clock.ts rfc3339Utc). Sleep windows
 * are local wall-clock windows of the zone (`zones.sleep_windows`, e.g.
 * `[{"start":"01:00","end":"05:00"}]`, a window whose end is before its start runs over midnight).
 */
import { sleepWindowMinutes } from '../../domain/zones.js';
import { TZDate } from '@date-fns/tz';

/** Integer POSIX seconds (GBFS 2.2). */
export function posix(d: Date): number {
  return Math.floor(d.getTime() / 1000);
}

/** Truncates to whole seconds: what we store must round-trip through both formats unchanged. */
export function wholeSeconds(d: Date): Date {
  return new Date(Math.floor(d.getTime() / 1000) * 1000);
}

/** The zone's sleep windows as the rental engine reads them (lib/domain/zones.ts): one reading for both. */
const windows = sleepWindowMinutes;
function localAt(base: TZDate, dayOffset: number, minute: number, timeZone: string): Date {
  const t = new TZDate(base.getFullYear(), base.getMonth(), base.getDate() + dayOffset, Math.floor(minute / 60), minute % 60, timeZone);
  return new Date(t.getTime());
}

/** The sleep window the zone is in at `now`, as absolute times, or undefined when awake. */
export function currentSleepWindow(raw: unknown, timeZone: string, now: Date): { start: Date; end: Date } | undefined {
  const local = new TZDate(now.getTime(), timeZone);
  const cur = local.getHours() * 60 + local.getMinutes();
  for (const [s, e] of windows(raw)) {
    if (s < e) {
      if (cur >= s && cur < e) return { start: localAt(local, 0, s, timeZone), end: localAt(local, 0, e, timeZone) };
    } else if (cur >= s) {
      return { start: localAt(local, 0, s, timeZone), end: localAt(local, 1, e, timeZone) };
    } else if (cur < e) {
      return { start: localAt(local, -1, s, timeZone), end: localAt(local, 0, e, timeZone) };
    }
  }
  return undefined;
}

function hhmm(minute: number): string {
  return `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;
}

/**
 * OSM opening_hours of a zone: every day, the complement of its sleep windows (`24/7` without any;
 * a range running over midnight is written `05:00-01:00`, as OSM allows).
 */
export function openingHours(raw: unknown): string {
  const asleep = new Array<boolean>(1440).fill(false);
  for (const [s, e] of windows(raw)) {
    if ((e - s) % 1440 === 0) asleep.fill(true); // 00:00-24:00
    for (let m = s % 1440; m !== e % 1440; m = (m + 1) % 1440) asleep[m] = true;
  }
  if (!asleep.includes(true)) return '24/7';
  if (!asleep.includes(false)) return 'Mo-Su off';
  const ranges: Array<[number, number]> = [];
  for (let m = 0; m < 1440; m++) {
    if (asleep[m]) continue;
    const start = m;
    while (m < 1440 && !asleep[m]) m++;
    ranges.push([start, m]);
  }
  // join a range ending at midnight with one starting at midnight: 22:00-24:00 + 00:00-02:00 → 22:00-02:00
  if (ranges.length > 1 && ranges[0][0] === 0 && ranges[ranges.length - 1][1] === 1440) {
    const first = ranges.shift()!;
    ranges[ranges.length - 1][1] = first[1];
  }
  return `Mo-Su ${ranges.map(([s, e]) => `${hhmm(s)}-${e === 1440 ? '24:00' : hhmm(e)}`).join(',')}`;
}
