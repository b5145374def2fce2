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
 *   - never built, or its hourly rebuild due: everything.
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
import { SUMMARY_PART, V2_BIKE_PARTS, V3_STATUS_PARTS, V3_VEHICLE_PARTS, readParts, storeParts, v2FileParts, v2Part, v3Part } from './parts.js';
import { gbfsUnit, tryPublicationLock } from '../../../lib/publication/lock.js';
import { SnapshotWriter, fragmentSegment, itemsData, staggerSeconds, storedRows, textSegment, type GbfsDoc, type Segment } from './snapshots.js';
import { vehicleFiles, type VehicleFiles } from './vehicles.js';

/** What to build whatever the counters say: ops and tests (`publishGbfsSnapshots`). */
export type GbfsForce = 'status' | 'static' | 'all';

export interface GbfsBuildResult {
  /** files whose object was stored */
  written: number;
  /** status files whose data was unchanged and due: the index row's last_updated moved, nothing was stored (the route serves the stored data in the new envelope) */
  refreshed: number;
  unchanged: number;
  /** files (or zone parts) that failed to build, validate or store (logged; the others are still published) */
  failed: number;
}

export interface ZoneBuildResult extends GbfsBuildResult {
  /** one of the zone's 2.2 parts changed: the scopes that include the zone must be assembled again */
  partsChanged: boolean;
  /** another process holds the zone (it is building it right now) */
  busy: boolean;
  /** what the job did: nothing due, the ttl refresh of the stored status data, or a build from loaded data */
  work: 'none' | 'refresh' | 'build';
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

export async function buildGbfsZone(ctx: AppContext, zoneId: string, opts: { force?: GbfsForce } = {}): Promise<ZoneBuildResult> {
  const now = ctx.clock.now();
  const force = opts.force;
  const result: ZoneBuildResult = { written: 0, refreshed: 0, unchanged: 0, failed: 0, partsChanged: false, busy: false, work: 'none' };
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
      if (!staticRun && !statusRun && !refreshDue) return result;

      const writer = new SnapshotWriter(ctx, now, await storedRows(tx, [zoneId]), staticRun);
      const env = buildEnv(ctx, now);

      if (!staticRun && !statusRun) {
        // the ttl refresh: the stored data of each status file, in a new envelope
        const parts = (await readParts(tx, [zoneId], V3_STATUS_PARTS, true)).get(zoneId);
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
        const stored = (await readParts(tx, [zoneId], [...V3_STATUS_PARTS, SUMMARY_PART, ...V2_PART_FILES.flatMap(v2FileParts)], false)).get(zoneId);
        const changed: Array<{ part: string; fragment: Fragment }> = [];
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
      result.written += writer.result.written;
      result.refreshed += writer.result.refreshed;
      result.unchanged += writer.result.unchanged;
      result.failed += writer.result.failed;
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
