/**
 * GBFS snapshots: every GBFS 3.0 file of every zone and every GBFS 2.2 file of every region scope
 * of the feed clients, validated against schemas/gbfs and stored gzip at
 * `gbfs/{version}/{scope}/{file}.json.gz` with its gbfs_snapshots row (the index the file route
 * reads). The work follows change (docs/gbfs.md "Cadence and change detection"): the publisher's
 * tick (tick.ts) hands one job per zone with work (zone.ts) and per 2.2 scope (scope.ts) to the
 * queue, and idle zones cost only the ttl refresh of their status files.
 *
 *   publishGbfsSnapshots(ctx, { only })  build everything now, in this process (ops, tests): every
 *                                        zone, then every scope. `only` forces a set whatever the
 *                                        counters say ('status': the status files from fresh data,
 *                                        'static': the static files, checking the store holds them,
 *                                        'all': both); without it each zone and scope does what the
 *                                        tick would have it do. With a memory of its own unless
 *                                        given one (`memory`).
 *   runGbfsTick(ctx, memory)             one tick with its jobs run here, in the order the queue
 *                                        runs them (zones, then the scopes they changed or that are
 *                                        due), keeping what it builds in `memory` for the next one:
 *                                        the bench, and tests of the cadence.
 */
import type { AppContext } from '../../../lib/domain/context.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { buildGbfsScope, ownerZone, scopeIncludes, scopesOf, type GbfsScope } from './scope.js';
import { planGbfsTick } from './tick.js';
import { addResults } from './snapshots.js';
import { ZONE_BATCH, buildGbfsZones, type GbfsBuildResult, type GbfsForce } from './zone.js';
import { GbfsMemory } from './memory.js';

export { planGbfsTick } from './tick.js';
export { buildGbfsZone, type GbfsBuildResult, type GbfsForce } from './zone.js';
export { GbfsMemory } from './memory.js';

export type GbfsPublishMode = GbfsForce;
export type GbfsPublishResult = GbfsBuildResult;

/** A tick's files, and its jobs: zones given a job, of which built from loaded data, and 2.2 systems assembled. */
export interface GbfsTickResult extends GbfsBuildResult {
  zones: number;
  built: number;
  /** scopes of several zones given a job, and single-zone scopes assembled by their zone's job */
  scopes: number;
}

/** Batches of zone jobs run at once by the in-process runners (the queue has its own concurrency). */
const CONCURRENCY = 2;

async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * `all`: every client scope (a single-zone one is assembled by its zone's job); `due`: the scopes of
 * several zones to assemble once the zones are done, given the zones whose 2.2 parts changed.
 */
async function run(
  ctx: AppContext,
  memory: GbfsMemory,
  zones: readonly string[],
  all: readonly GbfsScope[],
  due: (changed: Set<string>) => GbfsScope[],
  force: GbfsForce | undefined,
): Promise<GbfsTickResult> {
  const result: GbfsTickResult = { written: 0, refreshed: 0, unchanged: 0, failed: 0, zones: zones.length, built: 0, scopes: 0 };
  const owned = ownedScopes(all);
  const changed = new Set<string>();
  // in batches, as the queue's workers take them (zone.ts buildGbfsZones)
  const batches: string[][] = [];
  for (let i = 0; i < zones.length; i += ZONE_BATCH) batches.push(zones.slice(i, i + ZONE_BATCH));
  await eachLimited(batches, CONCURRENCY, async (batch) => {
    const built = await buildGbfsZones(
      ctx,
      memory,
      batch.map((zone) => ({ zone, scopes: owned.get(zone) ?? [] })),
      force,
    );
    for (const [zone, r] of built) {
      addResults(result, r);
      if (r.work === 'build') result.built++;
      result.scopes += r.systems;
      if (r.partsChanged) changed.add(zone);
    }
  });
  const shared = due(changed).filter((s) => ownerZone(s) === undefined);
  result.scopes += shared.length;
  await eachLimited(shared, 1, async (scope) => addResults(result, await buildGbfsScope(ctx, memory, scope, force ? { force } : {})));
  return result;
}

/** The single-zone scopes by their zone (system.ts ownerZone). */
function ownedScopes(all: readonly GbfsScope[]): Map<string, GbfsScope[]> {
  const out = new Map<string, GbfsScope[]>();
  for (const s of all) {
    const z = ownerZone(s);
    if (z !== undefined) out.set(z, [...(out.get(z) ?? []), s]);
  }
  return out;
}

export async function publishGbfsSnapshots(ctx: AppContext, opts: { only?: GbfsPublishMode; memory?: GbfsMemory } = {}): Promise<GbfsPublishResult> {
  const [zones, clients] = await Promise.all([ctx.db.many(sql('GbfsZoneIds'), [null]), ctx.db.many(sql('GbfsFeedClientScopes'))]);
  const scopes = scopesOf(clients);
  const { written, refreshed, unchanged, failed } = await run(
    ctx,
    opts.memory ?? new GbfsMemory(),
    zones.map((z) => z.id),
    scopes,
    () => scopes,
    opts.only,
  );
  ctx.log.debug({ written, refreshed, unchanged, failed, only: opts.only ?? 'auto' }, 'gbfs snapshots');
  return { written, refreshed, unchanged, failed };
}

export async function runGbfsTick(ctx: AppContext, memory: GbfsMemory): Promise<GbfsTickResult> {
  const plan = await planGbfsTick(ctx);
  return run(ctx, memory, plan.zones, plan.scopes, (changed) => plan.scopes.filter((s) => s.due || [...changed].some((z) => scopeIncludes(s, z))), undefined);
}
