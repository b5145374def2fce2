/**
 * The feed_publications rows the file routes read, cached in-process for a short time (default 2 s
 * by the clock). Every hourly-file request needs its row, and with a hot file the query was a large
 * share of the request; a partner polling one hour now costs one query per process every 2 s.
 * The cost is staleness bounded by the TTL: a republished hour is served with its new ETag, and a
 * newly published hour stops answering "not published yet", at most `ttlMs` after the row changed
 * (documented in docs/feeds-access.md "Performance"). Absent rows are cached the same way.
 * Concurrent misses on one row share one query; errors are not cached (lru-cache's fetchMethod).
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../lib/clock.js';
import type { Db } from '../../lib/db.js';
import { q } from '../../lib/db.js';
import type { HourlyFeedName } from '../../lib/feeds/publications.js';

export interface PublicationRow {
  status: 'published' | 'failed';
  object_key: string | null;
  sha256: string | null;
  dirty: boolean;
}

/** Rows older than this are read again (ms). Keep ≤ 2000: it is the documented freshness bound. */
export const PUBLICATION_TTL_MS = 2000;

/** A cached row, or a cached absence (lru-cache holds no undefined values). */
interface Entry {
  readonly row: PublicationRow | undefined;
}

export class PublicationIndex {
  private readonly cache: LRUCache<string, Entry, unknown[]>;
  private lastNow = -Infinity;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    opts: { ttlMs?: number; maxEntries?: number } = {},
  ) {
    this.cache = new LRUCache<string, Entry, unknown[]>({
      max: opts.maxEntries ?? 10_000,
      // lru-cache counts an entry stale once older than ttl; the documented bound is "at ttl"
      ttl: Math.max(1, (opts.ttlMs ?? PUBLICATION_TTL_MS) - 1),
      // the app's clock (tests move it), read at every check rather than cached for a millisecond
      perf: { now: () => clock.now().getTime() },
      ttlResolution: 0,
      // one query for concurrent misses on a row; a failed read is not kept
      fetchMethod: async (_id, _stale, { context }) => ({ row: (await this.db.maybeOne(q('FeedPublication'), context)) as PublicationRow | undefined }),
    });
  }

  /** The row of (feed, version, zone, hour) as of at most `ttlMs` ago; undefined when there is none. */
  async get(feed: HourlyFeedName, version: string, zone: string, hourSql: string): Promise<PublicationRow | undefined> {
    this.forgetIfClockWentBack();
    return (await this.cache.fetch(`${feed}|${version}|${zone}|${hourSql}`, { context: [feed, version, zone, hourSql] }))!.row;
  }

  /**
   * The cached entry of (feed, version, zone, hour) when it is fresh (its `row` may be undefined: a
   * cached absence); undefined when `get` has to read it. Synchronous, for the hot path.
   */
  peek(feed: HourlyFeedName, version: string, zone: string, hourSql: string, _now: number): { readonly row: PublicationRow | undefined } | undefined {
    this.forgetIfClockWentBack();
    return this.cache.get(`${feed}|${version}|${zone}|${hourSql}`);
  }

  /** A clock set backwards (tests) would make every entry look younger than it is: start over. */
  private forgetIfClockWentBack(): void {
    const now = this.clock.now().getTime();
    if (now < this.lastNow) this.cache.clear();
    this.lastNow = now;
  }
}
