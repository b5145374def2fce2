/**
 * What keeps the token endpoints (api/feeds/token.ts) from being a guessing oracle or a CPU sink:
 *
 * - **Failure throttle**: failed client authentications are counted per client id and per address
 *   in fixed one-minute windows; past the limit the endpoint answers 429 with Retry-After before any
 *   database lookup or hashing, so a throttled request costs nothing. A success clears its client
 *   id's count. The counters live in this process, in a Map bounded to `maxEntries` (the oldest goes
 *   first), not in Postgres: a refusal must not cost a round trip (the point is to stay cheap under a
 *   flood), and the price of per-process counting is small: with k API workers a guesser gets k times
 *   the few failures per minute, against 256-bit secrets. A restart forgives one window.
 * - **Hash gate**: scrypt (lib/auth/secrets.ts) costs tens of milliseconds of CPU on the libuv pool.
 *   At most `concurrency` checks run at once, at most `queue` wait; beyond that the request is
 *   refused with 503 at once, so a flood of bad secrets queues here instead of taking the cores and
 *   the thread pool from the partner API.
 */
import type { Clock } from '../clock.js';

export interface TokenGuardOptions {
  failuresPerClient: number;
  failuresPerAddress: number;
  hashConcurrency: number;
  hashQueue: number;
  windowMs?: number;
  maxEntries?: number;
}

interface Window {
  start: number;
  failures: number;
}

/** Thrown by `withHashSlot` when the gate and its queue are full. */
export class HashGateFull extends Error {
  constructor() {
    super('too many client authentications in progress');
    this.name = 'HashGateFull';
  }
}

export class TokenGuard {
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private readonly maxEntries: number;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly clock: Clock,
    private readonly opts: TokenGuardOptions,
  ) {
    this.windowMs = opts.windowMs ?? 60_000;
    this.maxEntries = opts.maxEntries ?? 10_000;
  }

  /** Seconds until the caller may try again, or 0 when neither its client id nor address is throttled. */
  retryAfter(clientId: string | undefined, address: string): number {
    const now = this.clock.now().getTime();
    let wait = 0;
    for (const [key, limit] of this.keys(clientId, address)) {
      const w = this.windows.get(key);
      if (w && w.start + this.windowMs > now && w.failures >= limit) wait = Math.max(wait, Math.ceil((w.start + this.windowMs - now) / 1000));
    }
    return wait;
  }

  failed(clientId: string | undefined, address: string): void {
    const now = this.clock.now().getTime();
    for (const [key] of this.keys(clientId, address)) {
      let w = this.windows.get(key);
      if (!w || w.start + this.windowMs <= now) {
        w = { start: now, failures: 0 };
        this.windows.delete(key);
        this.windows.set(key, w);
        if (this.windows.size > this.maxEntries) this.windows.delete(this.windows.keys().next().value!);
      }
      w.failures++;
    }
  }

  succeeded(clientId: string): void {
    this.windows.delete(`c:${clientId.slice(0, 129)}`);
  }

  /** Runs `work` (a secret check) within the concurrency bound; HashGateFull when the queue is full too. */
  async withHashSlot<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.opts.hashConcurrency) {
      if (this.waiting.length >= this.opts.hashQueue) throw new HashGateFull();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await work();
    } finally {
      // hand the slot straight to the next waiter (running stays the same), or give it back
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  private keys(clientId: string | undefined, address: string): Array<[string, number]> {
    const keys: Array<[string, number]> = [[`a:${address}`, this.opts.failuresPerAddress]];
    // client ids are at most 128 characters (lib/auth/feed-clients.ts); a longer guess is one key
    if (clientId) keys.push([`c:${clientId.slice(0, 129)}`, this.opts.failuresPerClient]);
    return keys;
  }
}
