/**
 * The zone list the feed routes check ids against (404 for an unknown zone, and the zone's creation
 * time for "an hour before the zone existed"). Zones change rarely: one query for all of them,
 * refreshed every 30 s, and on a miss at most once a second, so unknown ids cannot make a query each.
 */
import type { Db } from '../../lib/db.js';
import { q } from '../../lib/db.js';

export interface ZoneInfo {
  id: string;
  createdAt: Date;
}

export class ZoneDirectory {
  private zones = new Map<string, ZoneInfo>();
  private loadedAt = -Infinity;
  private inflight: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly opts: { refreshMs?: number; missRefreshMs?: number } = {},
  ) {}

  async get(id: string): Promise<ZoneInfo | undefined> {
    const age = performance.now() - this.loadedAt;
    if (age >= (this.opts.refreshMs ?? 30_000)) await this.refresh();
    const z = this.zones.get(id);
    if (z || performance.now() - this.loadedAt < (this.opts.missRefreshMs ?? 1000)) return z;
    await this.refresh();
    return this.zones.get(id);
  }

  /**
   * The zone when the list is current and has it; undefined when `get` has to decide (refresh due,
   * or an unknown id). Synchronous, for the hot path.
   */
  peek(id: string): ZoneInfo | undefined {
    if (performance.now() - this.loadedAt >= (this.opts.refreshMs ?? 30_000)) return undefined;
    return this.zones.get(id);
  }

  refresh(): Promise<void> {
    this.inflight ??= (async () => {
      try {
        const rows = await this.db.many(q('FeedZones'));
        this.zones = new Map(rows.map((r) => [r.id as string, { id: r.id as string, createdAt: r.created_at as Date }]));
        this.loadedAt = performance.now();
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }
}
