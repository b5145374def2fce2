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
 * has replayed past the primary's WAL position read after the counters (lib/replica.ts readerPast),
 * else from the job's transaction. A build with a failed file records no counters, and the next tick
 * builds again (and logs again) until the data is fixed.
 */
import { LRUCache } from 'lru-cache';
import type { AppContext } from '../../../lib/context.js';
import type { Queryable } from '../../../lib/db.js';
import { sql } from '../../../lib/sql/typed.js';
import { readerPast, readOnReader } from '../../../lib/replica.js';
import { ROLES, hasGbfs, type Role } from '../../../lib/feeds/roles.js';
import type { BuildEnv } from '../../../lib/feeds/gbfs/common.js';
import { GBFS_REBUILD_SECONDS, STATUS_REFRESH_SECONDS, V3_FILES, gbfsTtl, isStatusFile, type V3File } from '../../../lib/feeds/gbfs/files.js';
import type { Fragment } from '../../../lib/feeds/gbfs/fragments.js';
import { loadZoneData, loadZoneVehicles, zoneSummaryJson, type ZoneData } from '../../../lib/feeds/gbfs/model.js';
import { currentSleepWindow } from '../../../lib/feeds/gbfs/time.js';
import { V2_PART_FILES, envelopeV2, v2PartData, v2PartItems } from '../../../lib/feeds/gbfs/v2.js';
import { buildV3, envelopeV3 } from '../../../lib/feeds/gbfs/v3.js';
import { compile, describeErrors } from '../../../lib/validate.js';
import { GBFS_V2_SCHEMAS } from '../../../schemas/gbfs/v2.js';
import { GBFS_V3_SCHEMAS } from '../../../schemas/gbfs/v3.js';
import { SUMMARY_PART, V2_BIKE_PARTS, V3_STATUS_PARTS, V3_VEHICLE_PARTS, readParts, storeParts, v2Part, v3Part, type PartRef, type Parts } from './parts.js';
import { SYSTEM_PARTS, assembleSystem, ownerZone, type GbfsScope } from './system.js';
import { gbfsUnit, tryPublicationLock } from '../../../lib/publication/lock.js';
import {
  SnapshotWriter,
  addResults,
  fragmentSegment,
  itemsData,
  staggerSeconds,
  storedRows,
  textSegment,
  type GbfsBuildResult,
  type GbfsDoc,
  type GbfsForce,
  type Segment,
  type StoredRow,
} from './snapshots.js';
import { vehicleFiles, type VehicleFiles } from './vehicles.js';

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
 * The zones this process loaded, their vehicles and areas aside, by the static change counter read
 * before the load (gbfs_static: what bumps it is all that the rest of a zone shows, the zone row,
 * its prices, types and parking spots). A build of the status files alone, whose counter has not
 * moved since, loads only the vehicles: the data it holds is at least that recent, and nothing that
 * counter counts has changed since. A static build, a forced one and the hourly rebuild load
 * everything.
 */
const knownZones = new LRUCache<string, { token: number; data: ZoneData }>({ max: 10_000 });

/**
 * How long a build (a zone's, a 2.2 scope's) waits for the streaming replica to replay up to the
 * primary's position before it loads from the primary: a replica streams a millisecond or two behind,
 * and the build's lock and transaction are held meanwhile.
 */
export const REPLICA_WAIT_MS = 200;

/**
 * `scopes`: the client scopes whose system is this zone's own (a single-zone scope of this zone,
 * system.ts ownerZone; others are ignored), assembled after the zone's files in the same
 * transaction, under the zone's lock.
 */
export async function buildGbfsZone(
  ctx: AppContext,
  zoneId: string,
  opts: { force?: GbfsForce; scopes?: readonly GbfsScope[] } = {},
): Promise<ZoneBuildResult> {
  const now = ctx.clock.now();
  const force = opts.force;
  const own = (opts.scopes ?? []).filter((s) => ownerZone(s) === zoneId);
  const result: ZoneBuildResult = { written: 0, refreshed: 0, unchanged: 0, failed: 0, partsChanged: false, busy: false, work: 'none', systems: 0 };
  // the zone's lock: one build of its files in the cluster; another process building it right now is left to it
  const built = await tryPublicationLock(ctx, gbfsUnit('zone', zoneId), (held) =>
    held.tx(async (tx) => {
      const st = await tx.maybeOne(sql('GbfsZoneState'), [zoneId]);
      if (!st) return result;
      const sleeping = currentSleepWindow(st.sleep_windows, st.timezone, now);
      const sleepKey = sleeping ? sleeping.start.toISOString() : '';
      // no build row yet (LEFT JOIN): its columns are null, all NOT NULL in gbfs_zone_builds
      const neverBuilt = st.built_status_token === null;
      const rebuild = force === 'all' || neverBuilt || st.rebuild_due_at === null || st.rebuild_due_at <= now;
      const staticRun = rebuild || force === 'static' || Number(st.built_static_token) !== Number(st.static_token);
      let statusRun = rebuild || force === 'status' || Number(st.built_status_token) !== Number(st.status_token) || st.sleep_key !== sleepKey;
      const refreshDue = neverBuilt || st.status_written_at === null || now.getTime() - st.status_written_at.getTime() >= STATUS_REFRESH_SECONDS * 1000;
      const zoneWork = staticRun || statusRun || refreshDue;
      if (!zoneWork && !own.length) return result;

      const writer = new SnapshotWriter(ctx, now, zoneWork ? await storedRows(tx, [zoneId]) : new Map<string, StoredRow>(), staticRun);
      const env = buildEnv(ctx, now);
      // the zone's parts as stored (with their contents where the zone's own systems need them),
      // then with what this build stored: what the zone's systems are assembled from
      const ownParts = own.length ? SYSTEM_PARTS : [];
      let current: Map<string, PartRef> | undefined;
      const changed: Array<{ part: string; fragment: Fragment }> = [];

      if (!zoneWork) current = (await readParts(tx, [zoneId], ownParts, true)).get(zoneId);
      else if (!staticRun && !statusRun) {
        // the ttl refresh: the stored data of each status file, in a new envelope
        const parts = (current = (await readParts(tx, [zoneId], [...V3_STATUS_PARTS, ...ownParts], true)).get(zoneId));
        const docs = STATUS_V3.map((file): GbfsDoc | undefined => {
          let data: Segment[] | undefined;
          if (file === 'vehicle_status') {
            const blocks = V3_VEHICLE_PARTS.map((p) => parts?.get(p)?.fragment);
            if (blocks.every((f) => f !== undefined)) data = itemsData(EMPTY_VEHICLES, blocks);
          } else {
            const f = parts?.get(v3Part(file))?.fragment;
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
        // the replica's data once it has replayed past the primary's position read here, after the
        // counters: it then shows everything they count (or more, which the next tick's counters see)
        const load = { zoneIds: [zoneId], now, areas: staticRun, vehicles: statusRun };
        // the status files alone: the rest of the zone as this process loaded it at this static counter
        const staticToken = Number(st.static_token);
        const known = staticRun || force ? undefined : knownZones.get(zoneId);
        const loadZone = async (db: Queryable) =>
          known?.token === staticToken ? loadZoneVehicles(db, known.data, now) : (await loadZoneData(db, load)).get(zoneId);
        const reader = await readerPast(ctx.db, now, now, ctx.log.child({ zone: zoneId }), { primary: tx, waitMs: REPLICA_WAIT_MS });
        const data = await readOnReader(reader, loadZone, () => loadZone(tx));
        if (!data) return result;
        knownZones.set(zoneId, { token: staticToken, data: { ...data, areas: [], vehicles: [] } });
        result.work = 'build';
        const stored = (current = (await readParts(tx, [zoneId], [...V3_STATUS_PARTS, ...SYSTEM_PARTS], own.length > 0)).get(zoneId));
        const keep = (part: string, seg: Segment) => {
          if (stored?.get(part)?.sha256 !== seg.sha256) changed.push({ part, fragment: seg.fragment() });
        };
        // the vehicle files in blocks, only those whose vehicles changed rendered again (vehicles.ts)
        const vehicles = statusRun ? vehicleFiles(data, env, rebuild || force !== undefined) : undefined;

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
          if (stored?.get(v2Part(file))?.sha256 === seg.sha256) continue;
          if (!fail(items)) keep(v2Part(file), seg);
        }
        const changedParts = await storeParts(tx, zoneId, changed);
        result.partsChanged = changedParts.some((p) => p.startsWith('v2/'));
      }
      if (zoneWork) {
        await writer.flush(tx);
        const ok = builtOk && writer.result.failed === 0;
        // a failed build records no counters (-1: built again next tick); a refresh records only its time
        const tokens = staticRun || statusRun ? (ok ? [statusRun ? st.status_token : null, staticRun ? st.static_token : null] : [-1, -1]) : [null, null];
        const rebuildDueAt = rebuild ? new Date(now.getTime() + (GBFS_REBUILD_SECONDS - staggerSeconds(zoneId)) * 1000) : null;
        await tx.query(sql('GbfsZoneBuildUpsert'), [
          zoneId,
          tokens[0],
          tokens[1],
          statusRun ? sleepKey : null,
          writer.statusWrittenAt() ?? null,
          rebuildDueAt,
          now,
        ]);
      }
      addResults(result, writer.result);

      // the zone's own systems, from its parts as now stored
      if (own.length) {
        const mine = new Map(current);
        for (const c of changed) mine.set(c.part, { sha256: c.fragment.sha256, fragment: c.fragment });
        const parts: Parts = new Map([[zoneId, mine]]);
        for (const scope of own) {
          const a = await assembleSystem(ctx, tx, scope, [zoneId], parts, env, force);
          addResults(result, a.result);
          if (a.assembled) result.systems++;
        }
      }
      return result;
    }),
  );
  return built.locked ? built.value : { ...result, busy: true };
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
