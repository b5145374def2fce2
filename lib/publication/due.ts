/**
 * When an hourly file is due: its hour has closed at least the configured lateness ago. Shared by
 * the publisher's schedule (publisher/schedule.ts, which enqueues what is due) and the publication
 * status (status.ts, which calls a missing file 'missing' or 'not_due').
 */
import { addHours, floorHour, HOUR_MS } from '../feeds/hours.js';

/** The latest hour that is due at `now`: closed at least `latenessSeconds` ago. */
export function latestDueHour(now: Date, latenessSeconds: number): Date {
  return floorHour(new Date(now.getTime() - latenessSeconds * 1000 - HOUR_MS));
}

/** Hours the publisher's tick checks every time for files never published; older ones are the catch-up's. */
const LOOKBACK_HOURS = 48;

/** The first hour of the tick's look-back at `now`. */
export function lookbackStart(now: Date, latenessSeconds: number, lookbackHours = LOOKBACK_HOURS): Date {
  return addHours(latestDueHour(now, latenessSeconds), -(lookbackHours - 1));
}
