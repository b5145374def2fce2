/**
 * The GBFS files we publish, their ttl and cadence, their public URLs and where their snapshots live
 * (gbfs_snapshots row + object key). The file route (api/feeds) resolves a request with
 * `gbfsSnapshotRef`, so publisher and route cannot disagree on names.
 */
import type { Role } from '../roles.js';

export const V3_FILES = [
  'gbfs',
  'gbfs_versions',
  'system_information',
  'vehicle_types',
  'station_information',
  'station_status',
  'vehicle_status',
  'system_regions',
  'system_pricing_plans',
  'system_alerts',
  'geofencing_zones',
] as const;
export type V3File = (typeof V3_FILES)[number];

export const V2_FILES = [
  'gbfs',
  'system_information',
  'vehicle_types',
  'gbfs_versions',
  'system_alerts',
  'system_pricing_plans',
  'system_regions',
  'free_bike_status',
  'geofencing_zones',
] as const;
export type V2File = (typeof V2_FILES)[number];

export type GbfsVersion = '2.2' | '3.0';

/**
 * Files whose data changes with the fleet or the clock: rebuilt when their zone changes, refreshed
 * on every tick, published with ttl 30. system_alerts is one of them because a zone falls asleep on
 * the clock.
 */
const STATUS_FILES: ReadonlySet<string> = new Set(['station_status', 'vehicle_status', 'free_bike_status', 'system_alerts']);
export const STATUS_TTL = 30;
export const STATIC_TTL = 3600;
/** The publisher's GBFS tick: every this many seconds (publisher/index.ts). */
export const GBFS_RUN_SECONDS = 15;
/**
 * A status file is written again, changed or not, once its last_updated is this old: GBFS 3.0 reads
 * last_updated of real-time data as "the publisher's knowledge of the current state at this point
 * in time". Half a tick, so that every tick refreshes what the previous tick wrote however late its
 * jobs ran: a reader never sees a status file older than a tick plus its jobs' latency, well within
 * STATUS_TTL.
 */
export const STATUS_REFRESH_SECONDS = GBFS_RUN_SECONDS / 2;
/**
 * Every zone's and scope's files are rebuilt from scratch this often whatever the change counters
 * say (a safety net for what no counter sees, e.g. a configuration change), each at its own offset
 * within the first quarter of the interval so that the rebuilds spread over the hour.
 */
export const GBFS_REBUILD_SECONDS = 3600;

export function isStatusFile(file: string): boolean {
  return STATUS_FILES.has(file);
}

export function gbfsTtl(file: string): number {
  return isStatusFile(file) ? STATUS_TTL : STATIC_TTL;
}

export function v3Url(publicBaseUrl: string, zoneId: string, file: string): string {
  return `${publicBaseUrl}/v1/partner-apis/gbfs/${encodeURIComponent(zoneId)}/${file}.json`;
}

/** The one manifest.json of the publisher (GBFS 3.0), answered per caller. */
export function manifestUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl}/v1/partner-apis/gbfs/manifest.json`;
}

/** gbfs_snapshots.file of a manifest; its scope is the caller's client scope (gbfsV2Scope). */
export const MANIFEST_FILE = 'manifest';

export function v2Url(publicBaseUrl: string, file: string): string {
  return `${publicBaseUrl}/gbfs/v2/${file}.json`;
}

/** A 2.2 file in one language of a system that has several (GBFS 2.2: discovery keyed by language). */
export function v2LanguageUrl(publicBaseUrl: string, language: string, file: string): string {
  return `${publicBaseUrl}/gbfs/v2/${language}/${file}.json`;
}

/** GBFS language tags (as the official schemas write them): the path segment of a language's 2.2 files. */
export const LANGUAGE_TAG = /^[a-z]{2,3}(-[A-Z]{2})?$/;

/** The gbfs_snapshots scope of one language of a 2.2 scope (its objects: gbfs/2.2/{scope}/lang={language}/…). */
export function v2LanguageScope(scope: string, language: string): string {
  return `${scope}/lang=${language}`;
}

/** Object key of a snapshot; `file` is the gbfs_snapshots.file value (e.g. `gbfs.city`). */
export function gbfsObjectKey(version: GbfsVersion, scope: string, file: string): string {
  return `gbfs/${version}/${scope}/${file}.json.gz`;
}

/**
 * The gbfs_snapshots.file of a requested file. GBFS 3.0 gbfs.json depends on the caller's role
 * (it lists only what the role may read) while the zone is the scope, so it is stored once per role
 * as `gbfs.{role}`. In 2.2 the scope (gbfsV2Scope) already contains the role: plain `gbfs`.
 */
export function gbfsSnapshotFile(version: GbfsVersion, file: string, role: Role): string {
  return version === '3.0' && file === 'gbfs' ? `gbfs.${role}` : file;
}

export interface GbfsSnapshotRef {
  version: GbfsVersion;
  scope: string;
  file: string;
  objectKey: string;
}

/**
 * Which snapshot answers a request: (version, scope, file) is the gbfs_snapshots primary key.
 * `scope` is the zone id for 3.0 and `gbfsV2Scope(role, zones)` for 2.2; `file` is the requested
 * name without `.json`.
 */
export function gbfsSnapshotRef(version: GbfsVersion, scope: string, file: string, role: Role): GbfsSnapshotRef {
  const stored = gbfsSnapshotFile(version, file, role);
  return { version, scope, file: stored, objectKey: gbfsObjectKey(version, scope, stored) };
}
