/**
 * The time-hour of the hourly feeds: `YYYY-MM-DDTHH`, a UTC hour (ISO 8601 extended, hour 00–23).
 * Written by hand rather than reusing MDS 2.0's `iso-dayhour` pattern, which rejects November and is
 * not anchored (see specs/mds/README.md).
 */
import { TIME_HOUR_SCHEMA } from '../../schemas/common.js';

const HOUR_RE = new RegExp(TIME_HOUR_SCHEMA.pattern);
export const HOUR_MS = 3_600_000;

/** The UTC hour named by `s`, or undefined when it is malformed or not a real date (2026-02-30T00). */
export function parseHour(s: string): Date | undefined {
  const m = HOUR_RE.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23) return undefined;
  const t = Date.UTC(y, mo - 1, d, h);
  const back = new Date(t);
  // Date.UTC rolls 31 April over to 1 May: a round trip tells a real date from a rolled one.
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return undefined;
  return back;
}

/** `YYYY-MM-DDTHH` of the UTC hour containing `d`. */
export function formatHour(d: Date): string {
  return d.toISOString().slice(0, 13);
}

/** The start of the UTC hour containing `d`. */
export function floorHour(d: Date): Date {
  return new Date(Math.floor(d.getTime() / HOUR_MS) * HOUR_MS);
}

export function addHours(d: Date, n: number): Date {
  return new Date(d.getTime() + n * HOUR_MS);
}

/** Every hour start from `from` to `to` inclusive (both floored to the hour). */
export function* hoursBetween(from: Date, to: Date): Generator<Date> {
  for (let t = floorHour(from).getTime(); t <= floorHour(to).getTime(); t += HOUR_MS) yield new Date(t);
}
