/**
 * Per-key request budget in fixed one-minute windows, summed over every API process, without a
 * database round trip per request.
 *
 * The budget of a window is a sequence of positions 1..limit counted in the UNLOGGED table
 * rate_limit_counters. A process claims a slice of the next positions with one call of
 * rate_limit_claim (migration 000230: under the row's lock, the positions (count, count + slice]
 * up to the limit, never past it), then spends that slice locally. The sum of allowed requests over
 * all processes can therefore never exceed the limit. The slice is at most 1/20 of the limit (and
 * at most 50), and shrinks as the window's count nears the limit: at most 1/20 of what was left at
 * the process's last claim, down to 1, so the last positions are claimed one at a time and, while
 * the key's requests keep coming to every process (a load balancer's spread), the budget ends at
 * the same request everywhere.
 *
 * Positions a process claimed and has not spent for IDLE_RETURN_MS (its clients went to another
 * process, or the key is quiet) are handed back to the window's count. A process that finds the
 * count at the limit while other processes hold positions waits once, for their hand-back, before
 * its first refusal of the window, and claims again at most every RECHECK_MS after that; so the
 * (limit+1)-th request is the first 429 even when a key's traffic moves from one process to
 * another mid-minute. The price: a key with fewer requests than one per IDLE_RETURN_MS at a process
 * costs two round trips per request there (a claim and its return), and the first refusal of a
 * window waits that once when other processes took part in it.
 * A crash of Postgres empties the table (unlogged), which forgives at most one minute of counts.
 */
import type { Clock } from '../../lib/core/clock.js';
import { type Db } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';

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
/** positions claimed and not spent for this long are handed back */
const IDLE_RETURN_MS = 500;
/** a key whose window's count is at the limit is claimed again at most this often */
const RECHECK_MS = 250;
/** how long a hand-back can take: the idle time, one period of the sweep (half of it), a round trip */
const RETURN_WAIT_MS = IDLE_RETURN_MS + IDLE_RETURN_MS / 2 + 100;

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
  /** positions this process was granted in the window, less those it handed back */
  held: number;
  /** performance.now() of the claim that found the window's count at the limit; undefined: not at it */
  exhaustedAt?: number;
  /** the window's count at this process's last claim (the slices shrink as it nears the limit) */
  seen: number;
  /** performance.now() of the last position spent or claimed */
  usedAt: number;
  /** this process already waited once in the window for other processes' hand-backs */
  waitedForReturns: boolean;
  /** at the last claim, the window's count was more than this process holds: others hold or spent positions */
  othersHold: boolean;
  /** the claim in flight, shared by every request of this key that waits for positions */
  claiming?: Promise<void>;
}

export class RateLimiter {
  private nextPruneAt = 0;
  private readonly leases = new Map<string, Lease>();
  /** hands back idle positions; runs only while some lease holds unspent positions */
  private sweeper: NodeJS.Timeout | undefined;
  /** database round trips made for claims, and hand-backs (for tests and the bench) */
  claims = 0;
  returns = 0;

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
        found = { windowStart, next: 1, last: 0, held: 0, seen: 0, usedAt: performance.now(), waitedForReturns: false, othersHold: false };
        this.leases.set(keyId, found);
      }
      const lease = found;
      if (lease.next <= lease.last) {
        const position = lease.next++;
        lease.usedAt = performance.now();
        return { allowed: true, remaining: Math.max(0, limitPerMinute - position), retryAfterSeconds: 0 };
      }
      // at the limit: refused here until the next re-check, unless other processes hold positions of
      // the window and this process has not yet waited for their hand-back (claim)
      const othersMayReturn = !lease.waitedForReturns && lease.othersHold;
      if (lease.exhaustedAt !== undefined && !othersMayReturn && performance.now() - lease.exhaustedAt < RECHECK_MS) {
        return { allowed: false, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000)) };
      }
      // one claim per key at a time in this process; everyone waiting re-checks the lease after it
      // (a claim that grants nothing sets exhaustedAt and either waits for hand-backs or finds that no
      // other process holds any: the loop then ends in a refusal)
      lease.claiming ??= this.claim(keyId, lease, limitPerMinute, now).finally(() => {
        lease.claiming = undefined;
      });
      await lease.claiming;
    }
  }

  private async claim(keyId: string, lease: Lease, limit: number, now: number): Promise<void> {
    const window = new Date(lease.windowStart);
    const once = async () => {
      this.claims++;
      return this.db.one(sql('AuthRateLimitClaim'), [keyId, window, sliceFor(limit, lease.seen), limit]);
    };
    let r = await once();
    if (r.claimed_to === r.claimed_from && !lease.waitedForReturns && r.claimed_from > lease.held) {
      // the limit is reached and other processes hold positions of it: what they stop spending comes
      // back within RETURN_WAIT_MS; wait for that once a window
      lease.waitedForReturns = true;
      await new Promise((resolve) => setTimeout(resolve, RETURN_WAIT_MS));
      r = await once();
    }
    lease.seen = Math.max(lease.seen, r.claimed_to);
    if (r.claimed_to > r.claimed_from) {
      lease.next = r.claimed_from + 1;
      lease.last = r.claimed_to;
      lease.held += r.claimed_to - r.claimed_from;
      this.startSweeper();
    }
    lease.othersHold = r.claimed_to > lease.held;
    lease.exhaustedAt = r.claimed_to >= limit ? performance.now() : undefined;
    lease.usedAt = performance.now();
    await this.maybePrune(now);
  }

  /** Starts the hand-back sweep (unref'd: it never keeps a process alive). */
  private startSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.returnIdle(), IDLE_RETURN_MS / 2);
    this.sweeper.unref();
  }

  /**
   * Hands back the positions of the current window's leases not spent for IDLE_RETURN_MS. The lease
   * gives them up before the round trip (a request meanwhile claims anew); a failed return loses them
   * for the rest of the window, as a process that stops does. Stops itself once nothing is held.
   */
  private returnIdle(): void {
    const t = performance.now();
    const now = this.clock.now().getTime();
    const current = now - (now % WINDOW_MS);
    let holding = false;
    for (const [keyId, lease] of this.leases) {
      const unspent = lease.last - lease.next + 1;
      if (unspent <= 0 || lease.windowStart !== current) continue;
      if (lease.claiming || t - lease.usedAt < IDLE_RETURN_MS) {
        holding = true;
        continue;
      }
      lease.next = lease.last + 1;
      lease.held -= unspent;
      this.returns++;
      this.db.query(sql('AuthRateLimitReturn'), [keyId, new Date(lease.windowStart), unspent]).catch(() => undefined);
    }
    if (!holding) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
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
