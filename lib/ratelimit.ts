/**
 * Per-key request budget in fixed one-minute windows, summed over every API process: each request
 * is one upsert on the UNLOGGED table rate_limit_counters and the returned count decides. A crash
 * of Postgres empties the table (unlogged), which forgives at most one minute of counts.
 */
import type { Clock } from './clock.js';
import { q, type Db } from './db.js';

export interface RateLimitResult {
  allowed: boolean;
  /** requests left in the current window after this one */
  remaining: number;
  /** 0 when allowed; otherwise whole seconds until the window rolls over (at least 1) */
  retryAfterSeconds: number;
}

const WINDOW_MS = 60_000;
/** windows older than this are deleted; one spare window covers clock skew between processes */
const KEEP_MS = 2 * WINDOW_MS;

export class RateLimiter {
  private nextPruneAt = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Counts one request of `keyId`. Throws DbError when the database is unavailable. */
  async hit(keyId: string, limitPerMinute: number): Promise<RateLimitResult> {
    const now = this.clock.now().getTime();
    const windowStart = now - (now % WINDOW_MS);
    const { count } = await this.db.one<{ count: number }>(q('AuthRateLimitHit'), [keyId, new Date(windowStart)]);
    await this.maybePrune(now);
    if (count <= limitPerMinute) return { allowed: true, remaining: limitPerMinute - count, retryAfterSeconds: 0 };
    return { allowed: false, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000)) };
  }

  /**
   * At most once a minute per process: every process prunes, the DELETE is idempotent and touches
   * only a few rows, so no coordination is needed. A failed prune is retried next time, never thrown.
   */
  private async maybePrune(now: number): Promise<void> {
    if (now < this.nextPruneAt) return;
    this.nextPruneAt = now + WINDOW_MS;
    try {
      await this.db.query(q('AuthRateLimitPrune'), [new Date(now - (now % WINDOW_MS) - KEEP_MS)]);
    } catch {
      this.nextPruneAt = 0;
    }
  }
}
