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
 * The price: positions a process claimed but did not spend are lost with the window. The slice is at
 * most 1/20 of the limit (and at most 50), and shrinks as the window's count nears the limit: at most
 * 1/20 of what was left at the process's last claim, down to 1, so the last positions are claimed one
 * at a time. While the key's requests keep coming to every process (a load balancer's spread), every
 * process spends what it holds and the budget ends, to within a position or two per process, at the
 * same request everywhere: the (limit+1)-th is the first 429, not one process's 429s interleaved with
 * another's last slice. A process that stops getting the key's requests still loses what it holds
 * (at most a slice) for the rest of the window.
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

/**
 * Positions claimed per round trip: 1/20 of what is left of the limit after `seen` (the window's count
 * at this process's last claim; 0 before its first), at least 1, at most 50.
 */
export function sliceFor(limitPerMinute: number, seen = 0): number {
  return Math.max(1, Math.min(MAX_SLICE, Math.floor((limitPerMinute - seen) / 20)));
}

/** What this process holds of one key's current window. */
interface Lease {
  windowStart: number;
  /** next position to hand out, and the last one claimed (next > last: nothing left locally) */
  next: number;
  last: number;
  /** the window's counter reached the limit: refuse locally until the window ends */
  exhausted: boolean;
  /** the window's count at this process's last claim (the slices shrink as it nears the limit) */
  seen: number;
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
        found = { windowStart, next: 1, last: 0, exhausted: false, seen: 0 };
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
    const slice = sliceFor(limit, lease.seen);
    this.claims++;
    const { count } = await this.db.one(sql('AuthRateLimitClaim'), [keyId, new Date(lease.windowStart), slice]);
    lease.seen = Math.max(lease.seen, count);
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
