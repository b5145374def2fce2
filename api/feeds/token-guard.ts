/**
 * What keeps the token endpoints (api/feeds/token.ts) from being a guessing oracle or a CPU sink:
 *
 * - **Failure throttle**: failed client authentications are counted per (client id, address) pair
 *   and per address in fixed one-minute windows; past either limit the endpoint answers 429 with
 *   Retry-After before any database lookup or hashing, so a throttled request costs nothing. Client
 *   ids are not secret, so nothing is counted per client id alone: guesses from one address can never
 *   refuse the right secret from another (a stranger who knows a city's id cannot keep it from
 *   renewing its tokens). A guesser gets `failuresPerClientAddress` tries per id and minute from each
 *   address, and at most `failuresPerAddress` over all ids. A success clears its pair's count only,
 *   never the address's (one valid client of one's own must not reset the guessing budget).
 *   `failed` reports when a key reaches its limit, so the caller can log a client id under attack
 *   from many addresses without refusing it.
 * - **Which address**: the socket's peer unless `trustedProxyHops` > 0; then the entry that many
 *   places from the right of X-Forwarded-For (what the outermost of that many reverse proxies
 *   appended), never anything to its left, which the client wrote. IPv4-mapped IPv6 counts as its
 *   IPv4 address, and IPv6 is counted per /64 (one host's usual allocation: a guesser must not get a
 *   fresh budget per address of its own prefix).
 * - **Memory**: the counters live in this process, in one Map in window-start order; expired windows
 *   are dropped from its front as new ones start, and past `maxEntries` live keys the oldest goes
 *   first. Each failure adds at most two keys (its pair and its address) and an address adds at most
 *   `failuresPerAddress` pairs a window, so pushing a live counter out takes thousands of failures
 *   from hundreds of addresses (hundreds of /64s) within one minute. Not in Postgres: a refusal must
 *   not cost a round trip (the point is to stay cheap under a flood), and the price of per-process
 *   counting is small: with k API workers a guesser gets k times the few failures per minute,
 *   against 256-bit secrets. A restart forgives one window.
 * - **Hash gate**: scrypt (lib/domain/credentials/secrets.ts) costs tens of milliseconds of CPU on the libuv pool.
 *   At most `hashConcurrency` checks run at once; the rest wait in the same deadline queue as the
 *   partner API's requests (api/kit/admission.ts): a burst of clients renewing their tokens at once
 *   is served, and only a check that would wait past its budget is refused with 503 and Retry-After,
 *   so a flood of bad secrets queues here instead of taking the cores and the thread pool from the
 *   partner API.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Clock } from '../../lib/core/clock.js';
import type { AdmissionLimits } from '../../lib/core/config.js';
import { Admission } from '../kit/admission.js';

export interface TokenGuardOptions {
  failuresPerClientAddress: number;
  failuresPerAddress: number;
  hashConcurrency: number;
  /** secret checks waiting at most (a memory bound: refusals are decided by the predicted wait) */
  hashQueue: number;
  /** the wait budgets of the hash gate's queue (the API's admission settings) */
  queue?: Pick<AdmissionLimits, 'deadlineMs' | 'overloadWaitMs' | 'burstMs'>;
  /** Reverse proxies in front of the API whose X-Forwarded-For entries are trusted; 0: the header is ignored. */
  trustedProxyHops?: number;
  windowMs?: number;
  maxEntries?: number;
}

interface Window {
  start: number;
  failures: number;
}

/** Which limits a failure has just reached (each at most once per window). */
export interface Reached {
  pair: boolean;
  address: boolean;
}

export class TokenGuard {
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private readonly maxEntries: number;
  private readonly hashGate: Admission;

  constructor(
    private readonly clock: Clock,
    private readonly opts: TokenGuardOptions,
  ) {
    this.windowMs = opts.windowMs ?? 60_000;
    this.maxEntries = opts.maxEntries ?? 10_000;
    const queue = opts.queue ?? { deadlineMs: 2000, overloadWaitMs: 500, burstMs: 1000 };
    this.hashGate = new Admission({ maxInFlight: opts.hashConcurrency, maxQueue: opts.hashQueue, maxLagMs: 0, ...queue });
  }

  /** The caller's address as the throttle counts it (see the module comment). */
  addressOf(req: IncomingMessage): string {
    return clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], this.opts.trustedProxyHops ?? 0);
  }

  /** Seconds until the caller may try again, or 0 when neither its (client id, address) pair nor its address is throttled. */
  retryAfter(clientId: string | undefined, address: string): number {
    const now = this.clock.now().getTime();
    let wait = 0;
    for (const [key, limit] of this.keys(clientId, address)) {
      const w = this.windows.get(key);
      if (w && w.start + this.windowMs > now && w.failures >= limit) wait = Math.max(wait, Math.ceil((w.start + this.windowMs - now) / 1000));
    }
    return wait;
  }

  failed(clientId: string | undefined, address: string): Reached {
    const now = this.clock.now().getTime();
    this.dropExpired(now);
    const reached: Reached = { pair: false, address: false };
    for (const [key, limit, kind] of this.keys(clientId, address)) {
      let w = this.windows.get(key);
      if (!w || w.start + this.windowMs <= now) {
        w = { start: now, failures: 0 };
        // re-inserted at the end: the Map stays in window-start order
        this.windows.delete(key);
        this.windows.set(key, w);
        if (this.windows.size > this.maxEntries) this.windows.delete(this.windows.keys().next().value!);
      }
      if (++w.failures === limit) reached[kind] = true;
    }
    return reached;
  }

  /** A right secret: that pair's count starts again (the address's does not). */
  succeeded(clientId: string, address: string): void {
    this.windows.delete(pairKey(clientId, address));
  }

  /** Runs `work` (a secret check) within the concurrency bound; AdmissionRefused when it would wait past its budget. */
  withHashSlot<T>(work: () => Promise<T>): Promise<T> {
    return this.hashGate.run(work);
  }

  private dropExpired(now: number): void {
    for (const [key, w] of this.windows) {
      if (w.start + this.windowMs > now) return;
      this.windows.delete(key);
    }
  }

  private keys(clientId: string | undefined, address: string): Array<[string, number, keyof Reached]> {
    const keys: Array<[string, number, keyof Reached]> = [[`a:${address}`, this.opts.failuresPerAddress, 'address']];
    if (clientId) keys.push([pairKey(clientId, address), this.opts.failuresPerClientAddress, 'pair']);
    return keys;
  }
}

/** Client ids are at most 128 characters (lib/feeds/clients.ts): a longer guess is one key. No address holds a space. */
function pairKey(clientId: string, address: string): string {
  return `p:${address} ${clientId.slice(0, 129)}`;
}

/**
 * The address a request is counted under. `hops` = 0: the socket's peer, whatever the headers say.
 * `hops` = n: the n-th X-Forwarded-For entry from the right, the one the outermost of n trusted
 * proxies appended (each proxy appends its own peer); entries further left are the client's own
 * words. A header with fewer than n entries, or an entry that is not an IP address, did not come
 * through the n proxies as configured: the socket's peer is used then, never a guess from the header.
 */
export function clientAddress(remote: string | undefined, forwardedFor: string | string[] | undefined, hops: number): string {
  const peer = addressKey(remote ?? '') ?? 'unknown';
  if (hops <= 0 || forwardedFor === undefined) return peer;
  // node joins repeated X-Forwarded-For lines with ", ", in order; an array only from hand-built requests
  const entries = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  if (entries.length < hops) return peer;
  return addressKey(stripPort(entries[entries.length - hops].trim())) ?? peer;
}

/** `1.2.3.4:5678` → `1.2.3.4`, `[2001:db8::1]:443` → `2001:db8::1`; anything else unchanged. */
function stripPort(entry: string): string {
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(entry);
  if (bracketed) return bracketed[1];
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry);
  return v4 ? v4[1] : entry;
}

/**
 * An address as the throttle counts it: IPv4 as written, an IPv4-mapped IPv6 address as its IPv4
 * address, other IPv6 as its /64 (`2001:db8:0:1::/64`); undefined when `ip` is not an address.
 */
export function addressKey(ip: string): string | undefined {
  const bare = ip.replace(/%.*$/, '');
  const kind = isIP(bare);
  if (kind === 4) return bare;
  if (kind !== 6) return undefined;
  const groups = ipv6Groups(bare.toLowerCase());
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted IPv4 as two groups). */
function ipv6Groups(ip: string): number[] {
  const parse = (s: string): number[] =>
    s === ''
      ? []
      : s.split(':').flatMap((g) => {
          if (!g.includes('.')) return [parseInt(g, 16)];
          const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = ip.indexOf('::');
  if (gap < 0) return parse(ip);
  const head = parse(ip.slice(0, gap));
  const tail = parse(ip.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
