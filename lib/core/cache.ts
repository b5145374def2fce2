/**
 * Every in-memory cache of the platform has a name from CACHES and reports on /metrics (supabase
 * storage's CacheName and monitor, with lru-cache underneath): `cache_entries` and, for a cache
 * bounded in bytes, `cache_size_bytes` (summed over the live caches of the name, at scrape time),
 * and `cache_hits_total`, `cache_misses_total`, `cache_evictions_total` (counted by every cache of
 * the name this process made, so they only grow). A hit or a miss is a `get`, or a `fetch` found in
 * the cache or not (one that joins a load in flight counts as a miss); an eviction is an entry
 * pushed out by the cache's bound, not one that expired or was replaced.
 *
 * A NamedCache is an LRUCache: callers keep lru-cache's API and options. Counting costs an integer
 * increment per read, nothing per request beyond it.
 */
import { LRUCache } from 'lru-cache';

/** Every cache by name, with what it holds and where (the help text of the cache metrics says so). */
export const CACHES = {
  api_keys: 'partner, TOMP and insurer API keys found, by hash (lib/domain/credentials/api-keys.ts)',
  api_keys_unknown: 'API keys nobody has, by hash, for a short while (lib/domain/credentials/api-keys.ts)',
  feed_client_secrets: 'feed client secrets verified, by a keyed hash (lib/feeds/clients.ts)',
  feed_client_standings: 'the revoked feed clients, one listing (lib/feeds/clients.ts)',
  feed_keys: "the feed clients' usable API keys, one listing (lib/feeds/keys.ts)",
  feed_keys_unknown: 'feed API keys nobody has (or no longer usable), by hash, until the next listing (lib/feeds/keys.ts)',
  feed_tokens: 'feed access tokens verified, until they expire (api/feeds/access-tokens.ts)',
  feed_zones: 'the zones the feed routes know, one listing (api/feeds/zones.ts)',
  publication_index: 'index rows of hourly files, at most 2 s (api/feeds/publications.ts)',
  report_index: 'index rows of monthly reports, at most 2 s (api/feeds/publications.ts)',
  gbfs_snapshot_index: 'index rows of GBFS files, at most 2 s (api/feeds/publications.ts)',
  object_bodies: 'stored objects served, bounded in bytes (api/kit/object-cache.ts)',
  gbfs_reenveloped: 'GBFS files served in a newer envelope than stored, bounded in bytes (api/feeds/gbfs.ts)',
  events_page_positions: 'where page[number] pages of recent-event windows start, by pinned window (api/feeds/paging.ts)',
  hot_path_memo: "the hourly-file hot path's memo tables (api/feeds/hot-path.ts)",
  partner_vehicle_lists: 'rendered vehicle lists by zone and version (api/partner/vehicle-list.ts)',
  gbfs_envelope_heads: 'compressed GBFS envelope heads by text (lib/feeds/gbfs/envelope.ts)',
  gbfs_zones: "a GBFS publisher's zones loaded, by static change counter (publisher/feeds/gbfs/memory.ts)",
  gbfs_vehicle_blocks: "a GBFS publisher's vehicle blocks, bounded in bytes (publisher/feeds/gbfs/memory.ts)",
  gbfs_parts: "a GBFS publisher's zone parts, bounded in bytes (publisher/feeds/gbfs/memory.ts)",
} as const;

export type CacheName = keyof typeof CACHES;

/** What the report reads of a live cache. */
interface Measured {
  readonly size: number;
  readonly maxSize: number;
  readonly calculatedSize: number;
}

/** What the caches of one name counted, and the live ones among them. */
export interface CacheStats {
  hits: number;
  misses: number;
  evictions: number;
  /** the live caches of the name (a cache made per context goes with its context) */
  readonly caches: Set<WeakRef<Measured>>;
}

const stats = new Map<CacheName, CacheStats>();

function statsOf(name: CacheName): CacheStats {
  let s = stats.get(name);
  if (!s) stats.set(name, (s = { hits: 0, misses: 0, evictions: 0, caches: new Set() }));
  return s;
}

/** Each name's counts and its live caches' entries and bytes (lib/core/metrics.ts reads them at scrape time). */
export function cacheReport(): Array<{ name: CacheName; hits: number; misses: number; evictions: number; entries: number; bytes: number | undefined }> {
  return [...stats].map(([name, s]) => {
    let entries = 0;
    let bytes: number | undefined;
    for (const ref of s.caches) {
      const c = ref.deref();
      if (!c) {
        s.caches.delete(ref);
        continue;
      }
      entries += c.size;
      if (c.maxSize) bytes = (bytes ?? 0) + c.calculatedSize;
    }
    return { name, hits: s.hits, misses: s.misses, evictions: s.evictions, entries, bytes };
  });
}

/** An LRUCache under a name of CACHES: its reads and evictions are counted (see the module's comment). */
export class NamedCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>, FC = unknown> extends LRUCache<K, V, FC> {
  private readonly stats: CacheStats;

  constructor(
    readonly cacheName: CacheName,
    options: LRUCache.Options<K, V, FC>,
  ) {
    const counts = statsOf(cacheName);
    const dispose = options.dispose;
    super({
      ...options,
      dispose: (value, key, reason) => {
        if (reason === 'evict') counts.evictions++;
        dispose?.(value, key, reason);
      },
    });
    this.stats = counts;
    counts.caches.add(new WeakRef<Measured>(this));
  }

  override get(k: K, getOptions?: LRUCache.GetOptions<K, V, FC>): V | undefined {
    const v = super.get(k, getOptions);
    if (v === undefined) this.stats.misses++;
    else this.stats.hits++;
    return v;
  }

  // one signature for both of lru-cache's overloads: the options are passed on as they came
  override fetch(k: K, fetchOptions?: LRUCache.FetchOptions<K, V, FC>): Promise<V | undefined> {
    const status: LRUCache.Status<K, V, FC> = fetchOptions?.status ?? {};
    // #fetch decides hit or miss before its first await: `status.fetch` is set when this returns
    const p = super.fetch(k, { ...fetchOptions, status } as never);
    // 'get': a cache without a fetchMethod answered like get()
    if (status.fetch === 'hit' || (status.fetch === 'get' && status.get === 'hit')) this.stats.hits++;
    else this.stats.misses++;
    return p;
  }
}
