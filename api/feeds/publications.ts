/**
 * The feed_publications rows the file routes read, cached in-process for a short time (default 2 s
 * by the clock). Every hourly-file request needs its row, and with a hot file the query was a large
 * share of the request; a partner polling one hour now costs one query per process every 2 s.
 * The cost is staleness bounded by the TTL: a republished hour is served with its new ETag, and a
 * newly published hour stops answering "not published yet", at most `ttlMs` after the row changed
 * (documented in docs/feeds-access.md "Performance"). Absent rows are cached the same way.
 * Concurrent misses on one row share one query; errors are not cached.
 */
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

interface Entry {
  row: PublicationRow | undefined;
  at: number;
}

/** Rows older than this are read again (ms). Keep ≤ 2000: it is the documented freshness bound. */
export const PUBLICATION_TTL_MS = 2000;

export class PublicationIndex {
  private readonly rows = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<PublicationRow | undefined>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    opts: { ttlMs?: number; maxEntries?: number } = {},
  ) {
    this.ttlMs = opts.ttlMs ?? PUBLICATION_TTL_MS;
    this.maxEntries = opts.maxEntries ?? 10_000;
  }

  /** The row of (feed, version, zone, hour) as of at most `ttlMs` ago; undefined when there is none. */
  async get(feed: HourlyFeedName, version: string, zone: string, hourSql: string): Promise<PublicationRow | undefined> {
    const id = `${feed}|${version}|${zone}|${hourSql}`;
    const now = this.clock.now().getTime();
    const hit = this.fresh(id, now);
    if (hit) return hit.row;
    let p = this.inflight.get(id);
    if (!p) {
      p = this.load(id, [feed, version, zone, hourSql], now);
      this.inflight.set(id, p);
    }
    return p;
  }

  /**
   * The cached entry of (feed, version, zone, hour) when it is fresh (its `row` may be undefined: a
   * cached absence); undefined when `get` has to read it. Synchronous, for the hot path.
   */
  peek(feed: HourlyFeedName, version: string, zone: string, hourSql: string, now: number): { readonly row: PublicationRow | undefined } | undefined {
    return this.fresh(`${feed}|${version}|${zone}|${hourSql}`, now);
  }

  private fresh(id: string, now: number): Entry | undefined {
    const hit = this.rows.get(id);
    // a clock set backwards (tests) makes the age negative: treat that as stale too
    return hit && now - hit.at < this.ttlMs && now >= hit.at ? hit : undefined;
  }

  private async load(id: string, params: unknown[], at: number): Promise<PublicationRow | undefined> {
    try {
      const row = (await this.db.maybeOne(q('FeedPublication'), params)) as PublicationRow | undefined;
      this.rows.delete(id);
      if (this.rows.size >= this.maxEntries) this.rows.delete(this.rows.keys().next().value!);
      this.rows.set(id, { row, at });
      return row;
    } finally {
      this.inflight.delete(id);
    }
  }
}
