/**
 * Time source. Production code asks the clock, never `Date.now()` directly, so that tests can set
 * the time (sleep windows, auto end after 10 minutes, photo windows, hour lateness).
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * RFC 3339 in UTC without fractional seconds (`2026-11-21T10:15:00Z`): the one way the APIs and
 * the GBFS 3.0 files write a time.
 */
export function rfc3339Utc(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A clock that stays where it is put; `advance` moves it forward. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start: Date | string | number = Date.now()) {
    this.t = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  set(t: Date | string | number): void {
    this.t = new Date(t).getTime();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
