/**
 * The index rows the file routes read (hourly files, GBFS snapshots, monthly reports), cached
 * in-process for a short time (default 2 s
 * by the clock). Every hourly-file request needs its row, and with a hot file the query was a large
 * share of the request; a partner polling one hour now costs one query per process every 2 s.
 * The cost is staleness bounded by the TTL: a republished hour is served with its new ETag, and a
 * newly published hour stops answering "not published yet", at most `ttlMs` after the row changed
 * (documented in docs/feeds-access.md "Performance"). Absent rows are cached the same way.
 * Concurrent misses on one row share one query; errors are not cached (lru-cache's fetchMethod).
 */
import { NamedCache, type CacheName } from '../../lib/core/cache.js';
import type { Clock } from '../../lib/core/clock.js';
import type { Db, NamedQuery } from '../../lib/core/db.js';
import type { HourlyFeedName } from '../../lib/feeds/publications.js';
import { sql, type QueryName, type RowOf } from '../../lib/core/sql/typed.js';

/** What the serving decision reads of an hourly file's feed_publications row. */
export type PublicationRow = RowOf<'PublicationHourRow'>;

/** What it reads of a monthly report's feed_reports row. */
export type ReportRow = RowOf<'ReportGet'>;

/** Rows older than this are read again (ms). Keep ≤ 2000: it is the documented freshness bound. */
export const PUBLICATION_TTL_MS = 2000;

/** A cached row, or a cached absence (lru-cache holds no undefined values). */
interface Entry<R> {
  readonly row: R | undefined;
}

/**
 * Rows of one named query keyed by its parameters, each cached for at most `ttlMs` by the app's
 * clock. The index of every published object goes through this: the hourly files'
 * feed_publications and the reports' feed_reports (PublicationIndex) and the GBFS gbfs_snapshots
 * (GbfsSnapshotIndex).
 */
export class CachedRows<N extends QueryName> {
  private readonly cache: NamedCache<string, Entry<RowOf<N>>, unknown[]>;
  private lastNow = -Infinity;

  constructor(
    name: CacheName,
    db: Db,
    private readonly clock: Clock,
    query: N,
    opts: { ttlMs?: number; maxEntries?: number } = {},
  ) {
    // the row type is the generated one of this very query; its parameters are the cache key's strings
    const named: NamedQuery = sql(query);
    this.cache = new NamedCache<string, Entry<RowOf<N>>, unknown[]>(name, {
      max: opts.maxEntries ?? 10_000,
      // lru-cache counts an entry stale once older than ttl; the documented bound is "at ttl"
      ttl: Math.max(1, (opts.ttlMs ?? PUBLICATION_TTL_MS) - 1),
      // the app's clock (tests move it), read at every check rather than cached for a millisecond
      perf: { now: () => clock.now().getTime() },
      ttlResolution: 0,
      // one query for concurrent misses on a row; a failed read is not kept
      fetchMethod: async (_id, _stale, { context }) => ({ row: await db.maybeOne<RowOf<N>>(named, context) }),
    });
  }

  /** The row of these parameters as of at most `ttlMs` ago; undefined when there is none. */
  async get(params: readonly string[]): Promise<RowOf<N> | undefined> {
    this.forgetIfClockWentBack();
    return (await this.cache.fetch(this.keyOf(...params), { context: [...params] }))!.row;
  }

  /** The cache key of these parameters, for `peekKey` (the hot path builds it once per connection). */
  keyOf(...params: readonly string[]): string {
    return params.join('|');
  }

  /**
   * The cached entry of the parameters `key` stands for (`keyOf`) when it is fresh (its `row` may be
   * undefined: a cached absence); undefined when `get` has to read it. Synchronous, for the hot path.
   */
  peekKey(key: string): Entry<RowOf<N>> | undefined {
    this.forgetIfClockWentBack();
    return this.cache.get(key);
  }

  /** A clock set backwards (tests) would make every entry look younger than it is: start over. */
  private forgetIfClockWentBack(): void {
    const now = this.clock.now().getTime();
    if (now < this.lastNow) this.cache.clear();
    this.lastNow = now;
  }
}

/** feed_publications rows by (feed, version, zone, hour), and feed_reports rows by (zone, month). */
export class PublicationIndex extends CachedRows<'PublicationHourRow'> {
  private readonly reports: CachedRows<'ReportGet'>;

  constructor(db: Db, clock: Clock, opts: { ttlMs?: number; maxEntries?: number } = {}) {
    super('publication_index', db, clock, 'PublicationHourRow', opts);
    this.reports = new CachedRows('report_index', db, clock, 'ReportGet', opts);
  }

  row(feed: HourlyFeedName, version: string, zone: string, hourSql: string): Promise<PublicationRow | undefined> {
    return this.get([feed, version, zone, hourSql]);
  }

  /** The report of a zone and month (`YYYY-MM`). */
  report(zone: string, month: string): Promise<ReportRow | undefined> {
    return this.reports.get([zone, `${month}-01`]);
  }
}

/** What the GBFS routes read of a gbfs_snapshots row. */
export type GbfsSnapshotRow = RowOf<'FeedGbfsSnapshot'>;

/**
 * gbfs_snapshots rows by (version, scope, file). GBFS files change every STATUS_REFRESH_SECONDS at
 * most, and each carries its own last_updated: ≤ 2 s of index staleness keeps every served file
 * within its ttl (test/gbfs-validator.test.ts checks ttl + 5 s).
 */
export class GbfsSnapshotIndex extends CachedRows<'FeedGbfsSnapshot'> {
  constructor(db: Db, clock: Clock, opts: { ttlMs?: number; maxEntries?: number } = {}) {
    super('gbfs_snapshot_index', db, clock, 'FeedGbfsSnapshot', opts);
  }
}
