/**
 * GBFS through pg-boss: the tick (once per cluster every GBFS_RUN_SECONDS, singleton key `gbfs`)
 * sends one job per zone with work and per 2.2 scope of several zones due, and the workers of every
 * publisher process share them. A zone's job has the singleton key `gbfs-zone:{zone}` (never two
 * queued) and the zone's advisory lock (never two running: a second one finds the zone busy and
 * leaves it); it assembles the zone's own 2.2 systems (its single-zone scopes, system.ts) itself, and
 * a zone job whose 2.2 parts changed sends the jobs of the other scopes that include the zone. A scope job
 * starts SCOPE_DELAY after it is sent, so that the zone jobs of one tick land first and the scope is
 * assembled once for all of them (a send while one is queued is dropped: `short` policy).
 */
import type { Job, JobInsert, PgBoss } from 'pg-boss';
import type { AppContext } from '../../../lib/domain/context.js';
import { metrics } from '../../../lib/core/metrics.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { work, type Polling } from '../../work.js';
import { buildGbfsScope, ownerZone, scopeIncludes, scopesOf, type GbfsScope } from './scope.js';
import { planGbfsTick } from './tick.js';
import type { GbfsMemory } from './memory.js';
import { ZONE_BATCH, buildGbfsZones, type TimedZoneBuildResult, type ZoneJobSpec } from './zone.js';

export const GBFS_QUEUES = { tick: 'feeds-gbfs', zone: 'feeds-gbfs-zone', scope: 'feeds-gbfs-scope' } as const;

const SCOPE_DELAY = '3 seconds';
/** workers per queue and process (each builds its batch one zone or scope at a time) */
const WORKERS = 2;
const SCOPE_BATCH = 16;
/** how long the list of client scopes is reused by the zone workers of this process */
const SCOPES_TTL_MS = 5_000;

interface ZoneJob {
  zone: string;
  /** the zone's own 2.2 systems (its single-zone scopes) as the tick read them; absent in a job sent before they were kept here */
  scopes?: GbfsScope[];
}
type ScopeJob = GbfsScope;

const scopeJob = (s: GbfsScope): JobInsert<ScopeJob> => ({
  data: { id: s.id, role: s.role, zoneIds: s.zoneIds },
  singletonKey: `gbfs-scope:${s.id}`,
  startAfter: SCOPE_DELAY,
});

/** One tick: the due zones' and scopes' jobs, in two inserts. Returns the jobs sent (some may be dropped as already queued). */
async function enqueueGbfsTick(ctx: AppContext, boss: PgBoss): Promise<number> {
  const plan = await planGbfsTick(ctx);
  const zones = plan.zones.map((zone): JobInsert<ZoneJob> => ({
    data: { zone, scopes: plan.scopes.filter((s) => ownerZone(s) === zone).map(({ id, role, zoneIds }) => ({ id, role, zoneIds })) },
    singletonKey: `gbfs-zone:${zone}`,
  }));
  // a due scope of one zone is assembled by its zone's job (its zone is among plan.zones)
  const scopes = plan.scopes.filter((s) => s.due && ownerZone(s) === undefined).map(scopeJob);
  if (zones.length) await boss.insert(GBFS_QUEUES.zone, zones);
  if (scopes.length) await boss.insert(GBFS_QUEUES.scope, scopes);
  return zones.length + scopes.length;
}

export async function startGbfsWorkers(ctx: AppContext, boss: PgBoss, polling: Polling, memory: GbfsMemory): Promise<void> {
  const log = ctx.log.child({ job: 'gbfs' });
  let scopes: { at: number; list: GbfsScope[] } | undefined;
  const clientScopes = async () => {
    const now = Date.now();
    if (!scopes || now - scopes.at > SCOPES_TTL_MS) scopes = { at: now, list: scopesOf(await ctx.db.many(sql('GbfsFeedClientScopes'))) };
    return scopes.list;
  };

  await work(boss, GBFS_QUEUES.tick, polling, async () => {
    await enqueueGbfsTick(ctx, boss);
  });

  const zoneWorker = async (jobs: Array<Job<ZoneJob>>) => {
    const all = await clientScopes();
    // the zone's own 2.2 systems (its single-zone scopes, as the tick read them) are assembled by its build
    const specs: ZoneJobSpec[] = jobs.map((job) => ({ zone: job.data.zone, scopes: job.data.scopes ?? all.filter((s) => ownerZone(s) === job.data.zone) }));
    const results = new Map<string, TimedZoneBuildResult | undefined>();
    try {
      for (const [zone, r] of await buildGbfsZones(ctx, memory, specs)) results.set(zone, r);
    } catch (err) {
      // nothing of the batch was recorded: its zones one by one, so that one zone's failure holds back no other
      log.warn({ err, zones: specs.length }, 'gbfs zone batch failed: building its zones one by one');
      for (const spec of specs) {
        const at = performance.now();
        try {
          results.set(spec.zone, (await buildGbfsZones(ctx, memory, [spec])).get(spec.zone));
        } catch (err) {
          // the next tick builds the zone again
          results.set(spec.zone, undefined);
          metrics.gbfsJobDuration.observe({ kind: 'zone', work: 'failed' }, (performance.now() - at) / 1000);
          log.error({ err, zone: spec.zone }, 'gbfs zone job failed');
        }
      }
    }
    const changed: string[] = [];
    for (const [zone, r] of results) {
      if (!r) continue;
      metrics.gbfsJobDuration.observe({ kind: 'zone', work: r.busy ? 'busy' : r.work }, r.seconds);
      if (r.partsChanged) changed.push(zone);
      if (r.failed) log.warn({ zone, ...r }, 'gbfs zone built with failures');
    }
    if (changed.length) {
      const affected = all.filter((s) => ownerZone(s) === undefined && changed.some((z) => scopeIncludes(s, z)));
      if (affected.length) await boss.insert(GBFS_QUEUES.scope, affected.map(scopeJob));
    }
  };
  for (let i = 0; i < WORKERS; i++) await work<ZoneJob>(boss, GBFS_QUEUES.zone, { ...polling, batchSize: ZONE_BATCH }, zoneWorker);

  const scopeWorker = async (jobs: Array<Job<ScopeJob>>) => {
    for (const job of jobs) {
      const end = metrics.gbfsJobDuration.startTimer({ kind: 'scope' });
      try {
        const r = await buildGbfsScope(ctx, memory, job.data);
        end({ work: 'assemble' });
        if (r.failed) log.warn({ scope: job.data.id, ...r }, 'gbfs scope built with failures');
      } catch (err) {
        end({ work: 'failed' });
        log.error({ err, scope: job.data.id }, 'gbfs scope job failed');
      }
    }
  };
  for (let i = 0; i < WORKERS; i++) await work<ScopeJob>(boss, GBFS_QUEUES.scope, { ...polling, batchSize: SCOPE_BATCH }, scopeWorker);
}
