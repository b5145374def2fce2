/**
 * The GBFS tick (queue `feeds-gbfs`, sent every GBFS_RUN_SECONDS once per cluster): decides which
 * zones and 2.2 scopes have work, from three small reads and nothing else — the zones whose change
 * counters moved since their build, whose status files are due for their ttl refresh or whose hourly
 * rebuild is due (GbfsDueZones), and the client scopes with their last build. The work itself is one
 * job per zone and per scope (zone.ts, scope.ts), which any number of publisher processes share.
 */
import type { AppContext } from '../../../lib/domain/context.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { STATUS_REFRESH_SECONDS } from '../../../lib/feeds/gbfs/files.js';
import { ownerZone, scopesOf, type GbfsScope } from './scope.js';

export interface GbfsTickPlan {
  /** zones with work (their own, or a due scope of theirs alone): a per-zone job each */
  zones: string[];
  /** every client scope; `due`: never built, or its status files due for their refresh, or its rebuild due (a single-zone scope's zone is then among `zones`) */
  scopes: Array<GbfsScope & { due: boolean }>;
}

export async function planGbfsTick(ctx: AppContext): Promise<GbfsTickPlan> {
  const now = ctx.clock.now();
  const [zones, clients, builds] = await Promise.all([
    ctx.db.many(sql('GbfsDueZones'), [now, STATUS_REFRESH_SECONDS]),
    ctx.db.many(sql('GbfsFeedClientScopes')),
    ctx.db.many(sql('GbfsScopeBuilds')),
  ]);
  const built = new Map(builds.map((b) => [b.scope, b]));
  const refreshBefore = now.getTime() - STATUS_REFRESH_SECONDS * 1000;
  const scopes = scopesOf(clients).map((s) => {
    const b = built.get(s.id);
    return { ...s, due: !b || b.status_written_at.getTime() <= refreshBefore || b.rebuild_due_at <= now };
  });
  // a due scope of one zone is its zone's work (system.ts): the zone gets a job for it
  const due = new Set(zones.map((z) => z.id));
  for (const s of scopes) {
    const owner = ownerZone(s);
    if (s.due && owner !== undefined) due.add(owner);
  }
  return { zones: [...due].sort(), scopes };
}
