/**
 * The per-zone GBFS job (queue `feeds-gbfs-zone`, one job per zone and tick, singleton key per zone;
 * docs/gbfs.md "Cadence and change detection"). Under the zone's lock it reads the zone's change
 * counters (migration 000150) and its last build, then does the least that keeps its files true:
 *   - nothing changed and nothing due: nothing;
 *   - nothing changed, status files due for their ttl refresh: the stored data of each status file
 *     with a new envelope (no load, no build, no validation);
 *   - the status counter moved (vehicles, rentals, bookings, GBFS ids, reports) or the zone fell
 *     asleep or woke up: its vehicles loaded (with the rest of the zone as this process last loaded
 *     it, when the static counter has not moved since), its status files built once (3.0) and its
 *     2.2 vehicle items, written where the data changed; the vehicle files in blocks, of which only
 *     those whose vehicles changed are rendered, validated, compressed and stored (vehicles.ts);
 *   - the static counter moved (the zone, prices, areas, vehicle types): the static files too;
 *   - never built, or its hourly rebuild due: everything;
 *   - then the zone's own 2.2 systems (the scopes of one zone, system.ts: most city clients' scopes),
 *     assembled in the same transaction from the zone's parts as this build left them, each when
 *     its inputs changed or its files are due, so a ride in a city costs one job, not two.
 * The 3.0 files are built once for every role (only gbfs.json differs per role). The zone's parts
 * of the 2.2 systems are stored for the scope jobs (parts.ts); `partsChanged` tells the caller to
 * assemble the scopes that include the zone. The counters are read before the data, so a build is
 * never recorded as newer than what it shows: the data comes from the streaming replica only once it
 * has replayed past the primary's WAL position read after the counters (lib/core/replica.ts readerPast),
 * else from the job's transaction. A build with a failed file records no counters, and the next tick
 * builds again (and logs again) until the data is fixed. The zone jobs of a worker's fetch are built
 * together (`buildGbfsZones`): one transaction, their reads and records shared (batch.ts).
 */
import type { AppContext } from '../../../lib/domain/context.js';
import type { Db, Queryable } from '../../../lib/core/db.js';
import { sql, type RowOf } from '../../../lib/core/sql/typed.js';
import { readerPast, readOnReader } from '../../../lib/core/replica.js';
import { ROLES, hasGbfs, type Role } from '../../../lib/feeds/roles.js';
import type { BuildEnv } from '../../../lib/feeds/gbfs/common.js';
import { GBFS_REBUILD_SECONDS, STATUS_REFRESH_SECONDS, V3_FILES, gbfsTtl, isStatusFile, type V3File } from '../../../lib/feeds/gbfs/files.js';
import type { Fragment } from '../../../lib/core/gzip.js';
import {
  loadVehicleBlocks,
  loadZoneData,
  loadZoneVehicles,
  zoneSummaryJson,
  zoneWithVehicles,
  type VehicleBlock,
  type ZoneData,
} from '../../../lib/feeds/gbfs/model.js';
import { currentSleepWindow } from '../../../lib/feeds/gbfs/time.js';
import { V2_PART_FILES, envelopeV2, v2PartData, v2PartItems } from '../../../lib/feeds/gbfs/v2.js';
import { buildV3, envelopeV3 } from '../../../lib/feeds/gbfs/v3.js';
import { compile, describeErrors } from '../../../lib/core/validate.js';
import { GBFS_V2_SCHEMAS } from '../../../schemas/gbfs/v2.js';
import { GBFS_V3_SCHEMAS } from '../../../schemas/gbfs/v3.js';
import { SUMMARY_PART, V2_BIKE_PARTS, V3_STATUS_PARTS, V3_VEHICLE_PARTS, readParts, v2Part, v3Part, type PartRef, type Parts } from './parts.js';
import { BuildTx, EPOCH } from './batch.js';
import { SYSTEM_PARTS, assembleSystem, ownerZone, type GbfsScope } from './system.js';
import { gbfsUnit, tryPublicationLocks } from '../../publication/lock.js';
import {
  SnapshotWriter,
  addResults,
  fragmentSegment,
  itemsData,
  staggerSeconds,
  textSegment,
  type GbfsBuildResult,
  type GbfsDoc,
  type GbfsForce,
  type Segment,
} from './snapshots.js';
import { vehicleFiles, type VehicleFiles } from './vehicles.js';
import type { GbfsMemory } from './memory.js';

export type { GbfsBuildResult, GbfsForce } from './snapshots.js';

export interface ZoneBuildResult extends GbfsBuildResult {
  /** one of the zone's 2.2 parts changed: the scopes that include the zone must be assembled again */
  partsChanged: boolean;
  /** another process holds the zone (it is building it right now) */
  busy: boolean;
  /** what the job did: nothing due, the ttl refresh of the stored status data, or a build from loaded data */
  work: 'none' | 'refresh' | 'build';
  /** the zone's own 2.2 systems (its single-zone scopes, system.ts) that had work and were assembled */
  systems: number;
}

export function buildEnv(ctx: AppContext, now: Date): BuildEnv {
  return { now, publicBaseUrl: ctx.config.publicBaseUrl, providerId: ctx.config.providerId, providerName: ctx.config.providerName };
}

const GBFS_ROLES: Role[] = ROLES.filter(hasGbfs);
const STATUS_V3 = V3_FILES.filter(isStatusFile);

/**
 * How long a build (a zone's, a 2.2 scope's) waits for the streaming replica to replay up to the
 * primary's position before it loads from the primary: a replica streams a millisecond or two behind,
 * and the build's lock and transaction are held meanwhile.
 */
export const REPLICA_WAIT_MS = 200;

/**
 * Zone jobs built together (a worker's fetch, queue.ts; the in-process runs of index.ts), in one
 * transaction. A worker that found jobs fetches again at once (publisher/work.ts): 300 idle zones are
 * 19 batches shared by two workers per process, each process taking what it fetched, the others the
 * rest; the batch bounds how long a transaction holds its zones' locks.
 */
export const ZONE_BATCH = 16;

/** A zone job: the zone, and the client scopes whose system is its own (single-zone scopes of it, system.ts ownerZone; others are ignored). */
export interface ZoneJobSpec {
  zone: string;
  scopes?: readonly GbfsScope[];
}

/** A zone build's result, and the time it took (its own work and a share of its batch's statements). */
export interface TimedZoneBuildResult extends ZoneBuildResult {
  seconds: number;
}

const noResult = (): TimedZoneBuildResult => ({
  written: 0,
  refreshed: 0,
  unchanged: 0,
  failed: 0,
  partsChanged: false,
  busy: false,
  work: 'none',
  systems: 0,
  seconds: 0,
});

/**
 * One zone's job (its own 2.2 systems, `scopes`, assembled after its files in the same transaction,
 * under the zone's lock): a batch of one.
 */
export async function buildGbfsZone(
  ctx: AppContext,
  memory: GbfsMemory,
  zoneId: string,
  opts: { force?: GbfsForce; scopes?: readonly GbfsScope[] } = {},
): Promise<ZoneBuildResult> {
  const { seconds: _, ...result } = (await buildGbfsZones(ctx, memory, [{ zone: zoneId, scopes: opts.scopes ?? [] }], opts.force)).get(zoneId)!;
  return result;
}

/** What a zone's build must do, decided from its state read under its lock. */
interface ZonePlan {
  zone: string;
  st: ZoneState;
  own: GbfsScope[];
  sleepKey: string;
  rebuild: boolean;
  staticRun: boolean;
  statusRun: boolean;
  zoneWork: boolean;
}

type ZoneState = RowOf<'GbfsZoneStates'>;

function planZone(job: ZoneJobSpec, st: ZoneState, now: Date, force: GbfsForce | undefined): ZonePlan {
  const own = (job.scopes ?? []).filter((s) => ownerZone(s) === job.zone);
  const sleeping = currentSleepWindow(st.sleep_windows, st.timezone, now);
  const sleepKey = sleeping ? sleeping.start.toISOString() : '';
  // no build row yet (LEFT JOIN): its columns are null, all NOT NULL in gbfs_zone_builds
  const neverBuilt = st.built_status_token === null;
  const rebuild = force === 'all' || neverBuilt || st.rebuild_due_at === null || st.rebuild_due_at <= now;
  const staticRun = rebuild || force === 'static' || Number(st.built_static_token) !== Number(st.static_token);
  const statusRun = rebuild || force === 'status' || Number(st.built_status_token) !== Number(st.status_token) || st.sleep_key !== sleepKey;
  const refreshDue = neverBuilt || st.status_written_at === null || now.getTime() - st.status_written_at.getTime() >= STATUS_REFRESH_SECONDS * 1000;
  return { zone: job.zone, st, own, sleepKey, rebuild, staticRun, statusRun, zoneWork: staticRun || statusRun || refreshDue };
}

/**
 * The jobs of a batch of zones (a worker's fetch, publisher/feeds/gbfs/queue.ts), in one
 * transaction on one connection, holding the locks of those zones no other process holds (the
 * others are left to their holders: `busy`). Their states, the index rows they compare with, their
 * parts and their systems' build rows are read once for the batch, and what they record is written
 * once (batch.ts): a batch of idle zones' ttl refreshes is a dozen statements, not a dozen per zone.
 * A statement that fails fails the batch (nothing of it is recorded); the caller then builds its
 * zones one by one, so one zone's failure never holds back the others.
 */
export async function buildGbfsZones(
  ctx: AppContext,
  memory: GbfsMemory,
  jobs: readonly ZoneJobSpec[],
  force?: GbfsForce,
): Promise<Map<string, TimedZoneBuildResult>> {
  const now = ctx.clock.now();
  const started = performance.now();
  const results = new Map<string, TimedZoneBuildResult>();
  const byUnit = new Map<string, ZoneJobSpec>();
  for (const j of jobs) {
    results.set(j.zone, noResult());
    const unit = gbfsUnit('zone', j.zone);
    // the same zone twice (two jobs sent apart), or a scope named twice: one build, each scope once
    // (a row twice in one of the batch's records would fail it)
    const prev = byUnit.get(unit);
    const scopes = new Map([...(prev?.scopes ?? []), ...(j.scopes ?? [])].map((sc) => [sc.id, sc]));
    byUnit.set(unit, { zone: j.zone, scopes: [...scopes.values()] });
  }
  /** time spent in the zones' own builds; the rest of the batch's is shared */
  let buildsMs = 0;
  const held = await tryPublicationLocks(ctx, [...byUnit.keys()], (lock, units) =>
    lock.tx(async (tx) => {
      const mine = units.map((u) => byUnit.get(u)!);
      const states = new Map<string, ZoneState>((await tx.many(sql('GbfsZoneStates'), [mine.map((j) => j.zone)])).map((st) => [st.zone_id, st]));
      const plans = mine.flatMap((j) => {
        const st = states.get(j.zone);
        const p = st && planZone(j, st, now, force);
        return p && (p.zoneWork || p.own.length) ? [p] : [];
      });
      if (!plans.length) return;
      const batch = new BuildTx(tx, now, memory);
      // what the builds compare with and assemble from, for all of them at once
      const systems = plans.flatMap((p) => p.own.map((s) => s.id));
      await batch.readRows([...plans.filter((p) => p.zoneWork).map((p) => p.zone), ...systems], systems);
      await batch.readScopeBuilds(systems);
      const parts = await readParts(
        tx,
        plans.map((p) => p.zone),
        [...V3_STATUS_PARTS, ...SYSTEM_PARTS],
        memory,
      );
      // the replica (when there is one) once it has replayed past the primary's position read here,
      // after the counters: it then shows everything they count (or more, which the next tick's
      // counters see); asked once for the batch, by its first build that loads
      let reader: Promise<Db> | undefined;
      const readerOnce = () => (reader ??= readerPast(ctx.db, now, now, zoneLog(ctx, plans), { primary: tx, waitMs: REPLICA_WAIT_MS }));
      // the vehicles of the batch's status-only builds, in one statement (a statement a zone was
      // most of a riding batch's): the zones whose rest this process holds at their static counter
      const vehicleZones = plans
        .filter((p) => p.statusRun && !p.staticRun && !force && memory.knownZone(p.zone)?.token === Number(p.st.static_token))
        .map((p) => p.zone);
      const loadBlocks = (db: Queryable) => loadVehicleBlocks(db, vehicleZones, memory.heldBlocks);
      const loaded = vehicleZones.length ? await readOnReader(await readerOnce(), loadBlocks, () => loadBlocks(tx)) : undefined;
      for (const p of plans) {
        const at = performance.now();
        const result = results.get(p.zone)!;
        await buildZone(ctx, batch, p, parts.get(p.zone), readerOnce, result, force, loaded?.get(p.zone));
        const ms = performance.now() - at;
        result.seconds = ms / 1000;
        buildsMs += ms;
      }
      for (const z of await batch.flush()) results.get(z)!.partsChanged = true;
    }),
  );
  const taken = new Set(held.units);
  for (const [unit, j] of byUnit) if (!taken.has(unit)) results.get(j.zone)!.busy = true;
  // the batch's shared statements (locks, reads, records), charged to its zones in equal shares
  const shared = (performance.now() - started - buildsMs) / 1000 / Math.max(1, results.size);
  for (const r of results.values()) r.seconds += shared;
  return results;
}

/** The log of a batch's statements: its zone, or its zones. */
function zoneLog(ctx: AppContext, plans: readonly ZonePlan[]) {
  return plans.length === 1 ? ctx.log.child({ zone: plans[0].zone }) : ctx.log.child({ zones: plans.map((p) => p.zone) });
}

/**
 * One zone of a batch, under its lock, in the batch's transaction: its files, its parts, its build
 * row, then its own 2.2 systems, all recorded at the batch's flush. `loaded`: the zone's vehicle
 * blocks when the batch loaded them for its status-only builds (else the build loads what it needs).
 */
async function buildZone(
  ctx: AppContext,
  batch: BuildTx,
  plan: ZonePlan,
  current: Map<string, PartRef> | undefined,
  readerOnce: () => Promise<Db>,
  result: ZoneBuildResult,
  force: GbfsForce | undefined,
  loaded: readonly VehicleBlock[] | undefined,
): Promise<void> {
  const { zone: zoneId, st, own, sleepKey, rebuild, staticRun, zoneWork } = plan;
  let statusRun = plan.statusRun;
  const now = batch.now;
  const writer = new SnapshotWriter(ctx, now, batch.rows, staticRun);
  const env = buildEnv(ctx, now);
  const changed: Array<{ part: string; fragment: Fragment }> = [];

  if (zoneWork && !staticRun && !statusRun) {
    // the ttl refresh: the stored data of each status file, in a new envelope
    const docs = STATUS_V3.map((file): GbfsDoc | undefined => {
      let data: Segment[] | undefined;
      if (file === 'vehicle_status') {
        const blocks = V3_VEHICLE_PARTS.map((p) => current?.get(p)?.fragment);
        if (blocks.every((f) => f !== undefined)) data = itemsData(EMPTY_VEHICLES, blocks);
      } else {
        const f = current?.get(v3Part(file))?.fragment;
        if (f) data = [fragmentSegment(f)];
      }
      return data && { version: '3.0', scopes: [zoneId], file, ttl: gbfsTtl(file), status: true, data };
    });
    // a part that is not what the file holds (never stored, or the file written otherwise): build
    if (docs.every((d) => d && writer.holds(d))) {
      result.work = 'refresh';
      for (const d of docs) await writer.publish(d!);
    } else statusRun = true;
  }

  let builtOk = true;
  if (staticRun || statusRun) {
    const load = { zoneIds: [zoneId], now, areas: staticRun, vehicles: statusRun };
    // the status files alone: the rest of the zone as the memory holds it at this static counter
    const { memory } = batch;
    const staticToken = Number(st.static_token);
    const known = staticRun || force ? undefined : memory.knownZone(zoneId);
    // the vehicle blocks the memory holds are not sent again where unchanged, except to the hourly
    // rebuild and a forced build, which load and render everything afresh
    const knownBlocks = rebuild || force ? undefined : memory.heldBlocks;
    const loadZone = async (db: Queryable) =>
      known?.token === staticToken ? loadZoneVehicles(db, known.data, now, knownBlocks) : (await loadZoneData(db, { ...load, knownBlocks })).get(zoneId);
    const data =
      loaded && known?.token === staticToken
        ? zoneWithVehicles(known.data, loaded, now)
        : await readOnReader(await readerOnce(), loadZone, () => loadZone(batch.tx));
    if (!data) return;
    memory.rememberZone(zoneId, { token: staticToken, data: { ...data, areas: [], vehicles: [], blocks: undefined } });
    result.work = 'build';
    const keep = (part: string, seg: Segment) => {
      if (current?.get(part)?.sha256 !== seg.sha256) changed.push({ part, fragment: seg.fragment() });
    };
    // the vehicle files in blocks, only those whose vehicles changed rendered again (vehicles.ts)
    const vehicles = statusRun ? vehicleFiles(memory, data, env, rebuild || force !== undefined) : undefined;

    for (const file of V3_FILES) {
      if (isStatusFile(file) ? !statusRun : !staticRun) continue;
      if (file === 'vehicle_status') {
        if ((await writer.publish(vehicleStatusDoc(zoneId, vehicles!))) === 'failed') builtOk = false;
        else vehicles!.v3.forEach((f, i) => keep(V3_VEHICLE_PARTS[i], fragmentSegment(f)));
        continue;
      }
      for (const [stored3, role] of variantsOf(file)) {
        const doc = v3Doc(zoneId, file, stored3, data, env, role);
        if ((await writer.publish(doc)) === 'failed') builtOk = false;
        else if (isStatusFile(file)) keep(v3Part(file), doc.data[0]);
      }
    }

    // the zone's parts of every 2.2 system that includes it, validated here once
    keep(SUMMARY_PART, textSegment(zoneSummaryJson(data)));
    for (const file of V2_PART_FILES) {
      if (isStatusFile(file) ? !statusRun : !staticRun) continue;
      const fail = (invalid: unknown[]) => {
        const validate = compile(GBFS_V2_SCHEMAS[file]);
        if (validate(envelopeV2(now, gbfsTtl(file), v2PartData(file, invalid)))) return false;
        builtOk = false;
        result.failed++;
        ctx.log.error({ zone: zoneId, file, err: describeErrors(validate.errors, 5) }, 'gbfs 2.2 part of a zone not published');
        return true;
      };
      if (file === 'free_bike_status') {
        // its blocks validated item by item; one invalid item keeps every block of the zone's previous part
        if (!fail(vehicles!.invalidV2)) vehicles!.v2.forEach((f, i) => keep(V2_BIKE_PARTS[i], fragmentSegment(f)));
        continue;
      }
      const items = v2PartItems(file, data, env);
      const seg = textSegment(JSON.stringify(items).slice(1, -1));
      if (current?.get(v2Part(file))?.sha256 === seg.sha256) continue;
      if (!fail(items)) keep(v2Part(file), seg);
    }
    batch.storeParts(zoneId, changed);
  }
  if (zoneWork) {
    batch.record(writer);
    const ok = builtOk && writer.result.failed === 0;
    const built = staticRun || statusRun;
    // a failed build records no counters (-1: built again next tick); a refresh records only its time
    batch.zoneBuild({
      zone: zoneId,
      statusToken: !built ? (st.built_status_token ?? -1) : !ok ? -1 : statusRun ? st.status_token : (st.built_status_token ?? -1),
      staticToken: !built ? (st.built_static_token ?? -1) : !ok ? -1 : staticRun ? st.static_token : (st.built_static_token ?? -1),
      sleepKey: statusRun ? sleepKey : (st.sleep_key ?? ''),
      statusWrittenAt: writer.statusWrittenAt() ?? st.status_written_at ?? EPOCH,
      rebuildDueAt: rebuild ? new Date(now.getTime() + (GBFS_REBUILD_SECONDS - staggerSeconds(zoneId)) * 1000) : (st.rebuild_due_at ?? EPOCH),
    });
  }
  addResults(result, writer.result);

  // the zone's own systems, from its parts as this build left them
  if (own.length) {
    const mine = new Map(current);
    for (const c of changed) mine.set(c.part, { sha256: c.fragment.sha256, fragment: c.fragment });
    const parts: Parts = new Map([[zoneId, mine]]);
    for (const scope of own) {
      const a = await assembleSystem(ctx, batch, scope, [zoneId], parts, env, force);
      addResults(result, a.result);
      if (a.assembled) result.systems++;
    }
  }
}

/** gbfs.json exists once per GBFS role (`gbfs.{role}`); every other file once, built for any role. */
function variantsOf(file: V3File): Array<[string, Role]> {
  return file === 'gbfs' ? GBFS_ROLES.map((r) => [`gbfs.${r}`, r]) : [[file, GBFS_ROLES[0]]];
}

const EMPTY_VEHICLES = { vehicles: [] };

/**
 * vehicle_status from its blocks, validated item by item where they were rendered: what is
 * validated whole is the skeleton, or with the items that failed (so that the file is not written
 * and the log says why).
 */
function vehicleStatusDoc(zoneId: string, vehicles: VehicleFiles): GbfsDoc {
  const ttl = gbfsTtl('vehicle_status');
  return {
    version: '3.0',
    scopes: [zoneId],
    file: 'vehicle_status',
    ttl,
    status: true,
    data: itemsData(EMPTY_VEHICLES, vehicles.v3),
    document: (lu) => envelopeV3(lu, ttl, { vehicles: vehicles.invalidV3 }),
    schema: GBFS_V3_SCHEMAS.vehicle_status,
  };
}

function v3Doc(zoneId: string, file: V3File, stored: string, z: ZoneData, env: BuildEnv, role: Role): GbfsDoc {
  const data = buildV3(file, z, env, role);
  const ttl = gbfsTtl(file);
  return {
    version: '3.0',
    scopes: [zoneId],
    file: stored,
    ttl,
    status: isStatusFile(file),
    data: [textSegment(JSON.stringify(data))],
    document: (lu) => envelopeV3(lu, ttl, data),
    schema: GBFS_V3_SCHEMAS[file],
  };
}
