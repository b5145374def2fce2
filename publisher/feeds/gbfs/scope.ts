/**
 * The per-scope GBFS 2.2 job (queue `feeds-gbfs-scope`, singleton key per scope) of a scope of
 * several zones (an aggregator, a client of every zone): its 2.2 system and 3.0 manifest assembled
 * from the parts its zones' jobs stored (system.ts). A scope of one zone is its zone's own, assembled
 * by the zone's job (zone.ts); a job or call for one here is handed to that zone's build. The job
 * runs when a zone of the scope changed (its zone job sends it), when its status files are due for
 * their ttl refresh (the tick sends it), and for its hourly rebuild; unchanged inputs and fresh files
 * write nothing.
 * The parts, the bulk of what a scope reads, come from the streaming replica once it has replayed
 * past the primary's WAL position read under the scope's lock (lib/core/replica.ts readerPast, as a zone
 * build's data), else from the job's transaction on the primary.
 */
import type { AppContext } from '../../../lib/domain/context.js';
import type { DbRole } from '../../../lib/core/db.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { readerPast, readOnReader } from '../../../lib/core/replica.js';
import { gbfsV2Scope, hasGbfs, type Role } from '../../../lib/feeds/roles.js';
import { SUMMARY_PART, V2_BIKE_PARTS, readParts } from './parts.js';
import { gbfsUnit, withPublicationLock } from '../../publication/lock.js';
import type { GbfsMemory } from './memory.js';
import { BuildTx } from './batch.js';
import { addResults, type GbfsBuildResult, type GbfsForce } from './snapshots.js';
import { SYSTEM_PARTS, assembleSystem, ownerZone, type GbfsScope } from './system.js';
import { REPLICA_WAIT_MS, buildEnv, buildGbfsZone } from './zone.js';

export { ownerZone, type GbfsScope } from './system.js';

/** The distinct scopes of the feed clients (rows of GbfsFeedClientScopes) whose role reads GBFS. */
export function scopesOf(rows: ReadonlyArray<{ role: Role; zones: string[] | null }>): GbfsScope[] {
  const out = new Map<string, GbfsScope>();
  for (const r of rows) {
    if (!hasGbfs(r.role)) continue;
    const id = gbfsV2Scope(r.role, r.zones);
    if (!out.has(id)) out.set(id, { id, role: r.role, zoneIds: r.zones === null ? null : [...new Set(r.zones)].sort() });
  }
  return [...out.values()];
}

export function scopeIncludes(scope: GbfsScope, zoneId: string): boolean {
  return scope.zoneIds === null || scope.zoneIds.includes(zoneId);
}

export async function buildGbfsScope(ctx: AppContext, memory: GbfsMemory, scope: GbfsScope, opts: { force?: GbfsForce } = {}): Promise<GbfsBuildResult> {
  const result: GbfsBuildResult = { written: 0, refreshed: 0, unchanged: 0, failed: 0 };
  // a scope of one zone is the zone's: its build assembles it (with the zone's other own scopes,
  // whose parts the build may change), under the zone's lock
  const owner = ownerZone(scope);
  if (owner !== undefined) {
    const others = scopesOf(await ctx.db.many(sql('GbfsFeedClientScopes'))).filter((s) => s.id !== scope.id && ownerZone(s) === owner);
    addResults(result, await buildGbfsZone(ctx, memory, owner, { ...opts, scopes: [scope, ...others] }));
    return result;
  }
  // the zones and which of them have parts, from the primary: a replica a moment behind would have a
  // zone just built built again
  const zoneIds = (await ctx.db.many(sql('GbfsZoneIds'), [scope.zoneIds])).map((r) => r.id);
  if (!zoneIds.length) return result;
  // a zone never built has no parts yet (a new zone in a new scope): build it first; so is a zone
  // whose vehicles were last built before they were kept in blocks (its status files, now)
  const have = await readParts(ctx.db, zoneIds, [SUMMARY_PART, V2_BIKE_PARTS[0]]);
  for (const z of zoneIds) {
    const p = have.get(z);
    if (p?.has(SUMMARY_PART) && p.has(V2_BIKE_PARTS[0])) continue;
    addResults(result, await buildGbfsZone(ctx, memory, z, p?.has(SUMMARY_PART) ? { force: 'status' } : {}));
  }

  const now = ctx.clock.now();
  const log = ctx.log.child({ scope: scope.id });
  /** where the parts were read (the debug line of the build) */
  let pool: DbRole | undefined;
  // the scope's lock: one build of its files in the cluster. A build in progress elsewhere is waited
  // for, not left to: it may have read the zones' parts before the ones this job was sent for were
  // stored, and a scope is built again only when one of its zones changes or its refresh is due
  // (a zone is different: its own change counters send the next tick's job). After the wait the
  // parts read here are as new as the holder's, and most often it built them already: nothing to do
  const built = await withPublicationLock(ctx, [gbfsUnit('scope', scope.id)], (held) =>
    held.tx(async (tx): Promise<GbfsBuildResult> => {
      // read under the lock, after the primary's WAL position is read there: that position is past
      // every part the scope's previous build assembled (committed before it released the lock) and
      // every part the zone jobs that sent this job stored, so a scope job never assembles older parts
      // than the one before it, on the replica either
      const reader = await readerPast(ctx.db, now, now, log, { primary: tx, waitMs: REPLICA_WAIT_MS });
      const parts = await readOnReader(
        reader,
        (replica) => {
          pool = 'replica';
          return readParts(replica, zoneIds, SYSTEM_PARTS, memory);
        },
        () => {
          pool = 'primary';
          return readParts(tx, zoneIds, SYSTEM_PARTS, memory);
        },
      );
      const batch = new BuildTx(tx, now, memory);
      const { result: r } = await assembleSystem(ctx, batch, scope, zoneIds, parts, buildEnv(ctx, now), opts.force);
      await batch.flush();
      addResults(result, r);
      return result;
    }),
  );
  log.debug({ pool, written: built.written, refreshed: built.refreshed, unchanged: built.unchanged, failed: built.failed }, 'gbfs scope job');
  return built;
}
