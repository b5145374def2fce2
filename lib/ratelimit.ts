/**
 * Per-key request budget in fixed one-minute windows, summed over every API process, without a
 * database round trip per request.
 *
 * The budget of a window is a sequence of positions 1..limit counted in the UNLOGGED table
 * rate_limit_counters. A process claims a slice of the next positions with one atomic upsert
 * (count = count + slice RETURNING count: the claimed range is (count - slice, count], and the row
 * lock makes ranges of concurrent claims from any process disjoint), then spends that slice locally.
 * Positions past the limit are refused, so the sum of allowed requests over all processes can never
 * exceed the limit. Once a claim reaches the limit the process refuses the rest of the window locally.
 * The price: positions a process claimed but did not spend expire with the window, so near the limit
 * a key may get up to (processes × slice) fewer requests than its budget; the slice is at most 1/20 of
 * the limit (and at most 50), and 1 for limits under 40, where the counting is exact per request.
 * A crash of Postgres empties the table (unlogged), which forgives at most one minute of counts.
 */
import type { Clock } from './clock.js';
import { type Db } from './db.js';
import { sql } from './sql/typed.js';

export interface RateLimitResult {
  allowed: boolean;
  /** requests left in the current window after this one (as far as this process can know) */
  remaining: number;
  /** 0 when allowed; otherwise whole seconds until the window rolls over (at least 1) */
  retryAfterSeconds: number;
}

const WINDOW_MS = 60_000;
/** windows older than this are deleted; one spare window covers clock skew between processes */
const KEEP_MS = 2 * WINDOW_MS;
const MAX_SLICE = 50;

/** Positions claimed per round trip: 1/20 of the limit, at least 1, at most 50. */
export function sliceFor(limitPerMinute: number): number {
  return Math.max(1, Math.min(MAX_SLICE, Math.floor(limitPerMinute / 20)));
}

/** What this process holds of one key's current window. */
interface Lease {
  windowStart: number;
  /** next position to hand out, and the last one claimed (next > last: nothing left locally) */
  next: number;
  last: number;
  /** the window's counter reached the limit: refuse locally until the window ends */
  exhausted: boolean;
  /** the claim in flight, shared by every request of this key that waits for positions */
  claiming?: Promise<void>;
}

export class RateLimiter {
  private nextPruneAt = 0;
  private readonly leases = new Map<string, Lease>();
  /** database round trips made for claims (for tests and the bench) */
  claims = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Counts one request of `keyId`. Throws DbError when the database is unavailable. */
  async hit(keyId: string, limitPerMinute: number): Promise<RateLimitResult> {
    for (;;) {
      const now = this.clock.now().getTime();
      const windowStart = now - (now % WINDOW_MS);
      let found = this.leases.get(keyId);
      if (!found || found.windowStart !== windowStart) {
        found = { windowStart, next: 1, last: 0, exhausted: false };
        this.leases.set(keyId, found);
      }
      const lease = found;
      if (lease.next <= lease.last && lease.next <= limitPerMinute) {
        const position = lease.next++;
        return { allowed: true, remaining: limitPerMinute - position, retryAfterSeconds: 0 };
      }
      if (lease.exhausted || lease.next > limitPerMinute) {
        return { allowed: false, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000)) };
      }
      // one claim per key at a time in this process; everyone waiting re-checks the lease after it
      lease.claiming ??= this.claim(keyId, lease, limitPerMinute, now).finally(() => {
        lease.claiming = undefined;
      });
      await lease.claiming;
    }
  }

  private async claim(keyId: string, lease: Lease, limit: number, now: number): Promise<void> {
    const slice = sliceFor(limit);
    this.claims++;
    const { count } = await this.db.one(sql('AuthRateLimitClaim'), [keyId, new Date(lease.windowStart), slice]);
    const first = count - slice + 1;
    if (first <= limit) {
      lease.next = first;
      lease.last = Math.min(count, limit);
    }
    if (count >= limit) lease.exhausted = true;
    await this.maybePrune(now);
  }

  /**
   * At most once a minute per process: every process prunes, the DELETE is idempotent and touches
   * only a few rows, so no coordination is needed. A failed prune is retried next time, never thrown.
   * Leases of past windows are dropped here too, so the map holds only keys seen recently.
   */
  private async maybePrune(now: number): Promise<void> {
    if (now < this.nextPruneAt) return;
    this.nextPruneAt = now + WINDOW_MS;
    const current = now - (now % WINDOW_MS);
    for (const [key, lease] of this.leases) if (lease.windowStart < current && !lease.claiming) this.leases.delete(key);
    try {
      await this.db.query(sql('AuthRateLimitPrune'), [new Date(current - KEEP_MS)]);
    } catch {
      this.nextPruneAt = 0;
    }
  }
}
