/**
 * The zone list the feed routes check ids against (404 for an unknown zone, and the zone's creation
 * time for "an hour before the zone existed"). Zones change rarely: one query for all of them,
 * refreshed every 30 s, and on a miss at most once a second, so unknown ids cannot make a query each
 * (one lru-cache entry: its TTL is the refresh, its fetch de-duplicates concurrent loads).
 */
import { NamedCache } from '../../lib/core/cache.js';
import type { Db } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';

export interface ZoneInfo {
  id: string;
  createdAt: Date;
}

interface Listing {
  zones: Map<string, ZoneInfo>;
  loadedAt: number;
}

/** The whole zone table as one lru-cache entry: TTL `refreshMs`, one query for concurrent loads. */
export class ZoneDirectory {
  private readonly listing: NamedCache<'zones', Listing>;
  private readonly missRefreshMs: number;

  constructor(db: Db, opts: { refreshMs?: number; missRefreshMs?: number } = {}) {
    this.missRefreshMs = opts.missRefreshMs ?? 1000;
    this.listing = new NamedCache<'zones', Listing>('feed_zones', {
      max: 1,
      ttl: opts.refreshMs ?? 30_000,
      ttlResolution: 0,
      fetchMethod: async () => {
        const rows = await db.many(sql('FeedZones'));
        return { zones: new Map(rows.map((r) => [r.id, { id: r.id, createdAt: r.created_at }])), loadedAt: performance.now() };
      },
    });
  }

  async get(id: string): Promise<ZoneInfo | undefined> {
    const current = (await this.listing.fetch('zones'))!;
    const z = current.zones.get(id);
    if (z || performance.now() - current.loadedAt < this.missRefreshMs) return z;
    return (await this.listing.fetch('zones', { forceRefresh: true }))!.zones.get(id);
  }

  /**
   * The zone when the list is current and has it; undefined when `get` has to decide (refresh due,
   * or an unknown id). Synchronous, for the hot path.
   */
  peek(id: string): ZoneInfo | undefined {
    return this.listing.get('zones')?.zones.get(id);
  }

  async refresh(): Promise<void> {
    await this.listing.fetch('zones', { forceRefresh: true });
  }
}
