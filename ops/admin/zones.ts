/**
 * Importing zones with their areas, prices and vehicle types (ops CLI `zone import`), one zone or
 * many in one call. A zone is a GeoJSON FeatureCollection: the feature whose `properties.kind` is
 * "zone" carries the zone's settings and its boundary; every other feature is an area
 * (`properties.area_type`). Every document is validated first (ops/admin/zone-file.ts), and every
 * problem names its document and feature; then all of them are written in one transaction, each
 * table in one statement over arrays (unnest), so a bad file changes nothing and a hundred zones
 * cost what one does. An area keeps its id when the feature has a UUID `id`, which keeps GBFS
 * station ids stable across re-imports.
 *
 * Prices: a zone's `prices` replace its price list. A zone whose vehicles would be left without a
 * price (they would be neither listed nor rentable) is refused; a zone with no price at all, or with
 * vehicles of an unpriced type when the file leaves its prices as they are, is imported with a
 * warning. `operating_since` sets the zone's first operating hour (zones.created_at, migration
 * 000180): the publisher then publishes and catches up its hourly files from that hour. It may move
 * an existing zone's start earlier, never later (published history is not taken back).
 */
import { isUuidV4 } from '../../lib/core/uuid.js';
import { type Db, type Tx } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import type { Clock } from '../../lib/core/clock.js';
import { compile } from '../../lib/core/validate.js';
import { floorHour, formatHour, parseHour } from '../../lib/feeds/hours.js';
import {
  AREA_PROPERTIES_SCHEMA,
  POLYGONAL_SCHEMA,
  ZONE_PROPERTIES_SCHEMA,
  schemaProblems,
  withDefaults,
  type AreaProperties,
  type VehicleTypeRow,
  type ZoneDocument,
  type ZoneProperties,
} from './zone-file.js';
import { unpricedWarnings } from './prices.js';

// compiled on first use (lib/core/validate.ts caches them): every ops command loads this module, few import zones
const validZone = () => compile<ZoneProperties>(ZONE_PROPERTIES_SCHEMA);
const validArea = () => compile<AreaProperties>(AREA_PROPERTIES_SCHEMA);

/** A feature as read, before validation. */
interface RawFeature {
  type?: unknown;
  id?: unknown;
  geometry?: unknown;
  properties?: {
    kind?: unknown;
    id?: unknown;
    name?: unknown;
    area_type?: unknown;
    capacity?: unknown;
    parking_mode?: unknown;
    operating_since?: unknown;
  } | null;
}

export class ZoneImportError extends Error {
  constructor(readonly problems: string[]) {
    super(`zone file has ${problems.length} problem(s):\n  - ${problems.join('\n  - ')}`);
  }
}

export interface ZoneImported {
  zoneId: string;
  created: boolean;
  areas: number;
  /** vehicle type ids priced by the file; null when the file left the zone's prices as they were */
  prices: string[] | null;
  /** the first operating hour the file set (new zone) or moved earlier (existing zone) */
  operatingSince: Date | null;
}

export interface ZonesImported {
  zones: ZoneImported[];
  vehicleTypes: { created: string[]; updated: string[]; unchanged: string[] };
  /** one line each: prices that are missing (the zone's vehicles are not listed or rentable) */
  warnings: string[];
}

interface ParsedZone {
  where: string;
  props: ZoneProperties;
  boundary: unknown;
  areas: Array<{ props: AreaProperties; geometry: unknown; id: string | null }>;
  since: Date | null;
}

function label(i: number, f: RawFeature | undefined): string {
  const name = f?.properties?.name ?? f?.properties?.id;
  return `feature #${i}${typeof name === 'string' && name ? ` "${name}"` : ''}`;
}

/** The features of a document that is a FeatureCollection, else undefined. */
function featuresOf(doc: unknown): RawFeature[] | undefined {
  const fc = doc as { type?: unknown; features?: unknown } | null;
  return fc?.type === 'FeatureCollection' && Array.isArray(fc.features) ? (fc.features as RawFeature[]) : undefined;
}

/** The checks one document needs alone; geometries go to `geoms` for one batched validity query. */
function parseDocument(d: ZoneDocument, prefix: string, now: Date, problems: string[], geoms: Array<{ where: string; json: string }>): ParsedZone | undefined {
  const features = featuresOf(d.doc);
  if (!features) {
    problems.push(`${prefix}the file must be a GeoJSON FeatureCollection`);
    return undefined;
  }
  const before = problems.length;
  const zones = features.filter((f) => f?.properties?.kind === 'zone');
  if (zones.length !== 1) problems.push(`${prefix}exactly one feature must have properties.kind = "zone" (found ${zones.length})`);
  const areas: ParsedZone['areas'] = [];
  let zone: ZoneProperties | undefined;
  for (const [i, f] of features.entries()) {
    const where = `${prefix}${label(i, f)}`;
    if (f?.type !== 'Feature') {
      problems.push(`${where}: not a GeoJSON Feature`);
      continue;
    }
    if (!compile(POLYGONAL_SCHEMA)(f.geometry)) problems.push(`${where}: geometry must be a Polygon or MultiPolygon`);
    else geoms.push({ where, json: JSON.stringify(f.geometry) });
    const p = f.properties;
    if (p?.kind === 'zone') {
      const valid = validZone();
      if (valid(p)) zone = p;
      else problems.push(`${where}: ${schemaProblems(valid.errors)}`);
      continue;
    }
    const valid = validArea();
    if (valid(p)) areas.push({ props: p, geometry: f.geometry, id: typeof f.id === 'string' ? f.id : null });
    else problems.push(`${where}: ${schemaProblems(valid.errors)}`);
    if (f.id !== undefined && !isUuidV4(f.id)) problems.push(`${where}: id must be a UUID v4 when given`);
    if (p?.area_type === 'parking-spot' && p.capacity === undefined) problems.push(`${where}: a parking-spot needs a capacity`);
    if (p?.area_type !== 'parking-spot' && p?.capacity !== undefined) problems.push(`${where}: only parking-spot areas have a capacity`);
  }
  const mode = zones[0]?.properties?.parking_mode;
  for (const [i, f] of features.entries()) {
    const t = f?.properties?.area_type;
    if (mode === 'free-floating' && t === 'parking-spot') problems.push(`${prefix}${label(i, f)}: parking-spot area in a free-floating zone`);
    if (mode === 'parking-spot' && t === 'no-parking') problems.push(`${prefix}${label(i, f)}: no-parking area in a parking-spot zone`);
  }
  let since: Date | null = null;
  if (zone?.operating_since) {
    since = parseHour(zone.operating_since) ?? null;
    if (!since) problems.push(`${prefix}operating_since ${zone.operating_since} is not a real UTC hour`);
    else if (since > floorHour(now)) problems.push(`${prefix}operating_since ${zone.operating_since} is after the current hour ${formatHour(floorHour(now))}`);
  }
  if (problems.length > before || !zone) return undefined;
  return { where: prefix, props: zone, boundary: zones[0]?.geometry, areas, since };
}

/** Invalid geometries by their feature: one query for all of them; per feature only when one is unreadable. */
async function geometryProblems(db: Db, geoms: Array<{ where: string; json: string }>): Promise<string[]> {
  if (!geoms.length) return [];
  try {
    const rows = await db.many(sql('AdminGeometryProblems'), [geoms.map((g) => g.json)]);
    return rows.map((r) => `${geoms[r.i - 1]?.where}: invalid geometry (${r.problem})`);
  } catch {
    const out: string[] = [];
    for (const g of geoms) {
      const row = await db.one(sql('AdminGeometryProblem'), [g.json]).catch(() => ({ problem: 'unreadable coordinates' }));
      if (row.problem) out.push(`${g.where}: invalid geometry (${row.problem})`);
    }
    return out;
  }
}

/** The vehicle types declared across the documents; one id declared twice differently is a problem. */
function declaredTypes(zones: ParsedZone[], problems: string[]): Map<string, VehicleTypeRow> {
  const types = new Map<string, VehicleTypeRow>();
  for (const z of zones) {
    for (const raw of z.props.vehicle_types ?? []) {
      const t = withDefaults(raw);
      const seen = types.get(t.id);
      if (seen && JSON.stringify(seen) !== JSON.stringify(t)) problems.push(`${z.where}vehicle type ${t.id} is declared twice with different values`);
      types.set(t.id, t);
    }
  }
  return types;
}

/** Validates and imports zone documents in one transaction; see the module comment. */
export async function importZones(db: Db, clock: Clock, docs: ZoneDocument[]): Promise<ZonesImported> {
  if (!docs.length) throw new ZoneImportError(['no zone in the input']);
  const now = clock.now();
  const problems: string[] = [];
  const geoms: Array<{ where: string; json: string }> = [];
  const many = docs.length > 1;
  const zones = docs
    .map((d, i) => {
      const id = featuresOf(d.doc)?.find((f) => f?.properties?.kind === 'zone')?.properties?.id;
      return parseDocument(d, many ? `${d.source} (${typeof id === 'string' ? id : `zone #${i}`}): ` : '', now, problems, geoms);
    })
    .filter((z): z is ParsedZone => z !== undefined);
  problems.push(...(await geometryProblems(db, geoms)));
  const ids = new Set<string>();
  for (const z of zones) {
    if (ids.has(z.props.id)) problems.push(`${z.where}zone ${z.props.id} appears more than once in the input`);
    ids.add(z.props.id);
  }
  const types = declaredTypes(zones, problems);
  const known = new Set([...types.keys(), ...(await db.many(sql('AdminListVehicleTypeIds'))).map((t) => t.id)]);
  for (const z of zones) {
    const unknown = Object.keys(z.props.prices ?? {}).filter((t) => !known.has(t));
    if (unknown.length)
      problems.push(
        `${z.where}prices name vehicle type${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} that no vehicle_types entry declares and the database does not hold (known: ${[...known].sort().join(', ') || 'none'})`,
      );
  }
  if (problems.length) throw new ZoneImportError(problems);
  return db.tx((tx) => write(tx, now, zones, types));
}

/**
 * The import's transaction. When a zone declares operating_since, the history catch-up marks
 * (feed_catchup) are locked first: an existing zone whose start moves earlier gets its marks moved
 * back to the new start so the publisher scans the new hours, and a catch-up scan that read the old
 * mark would write it back over the lowered one (its upsert keeps the greater). The lock waits for
 * scans in flight and holds off new ones until commit, which then read the new start.
 */
async function write(tx: Tx, now: Date, zones: ParsedZone[], types: Map<string, VehicleTypeRow>): Promise<ZonesImported> {
  const ids = zones.map((z) => z.props.id);
  // before any zone row (see above)
  if (zones.some((z) => z.since)) await tx.query(sql('AdminLockCatchup'));
  // the zones that exist, locked until commit: the start each may move from, and no concurrent import
  const existing = new Map((await tx.many(sql('AdminLockZones'), [ids])).map((r) => [r.id, r.created_at]));
  const later = zones.filter((z) => z.since && existing.has(z.props.id) && z.since > floorHour(existing.get(z.props.id)!));
  if (later.length) {
    throw new ZoneImportError(
      later.map(
        (z) =>
          `${z.where}operating_since ${formatHour(z.since!)} is after zone ${z.props.id}'s first operating hour ` +
          `${formatHour(floorHour(existing.get(z.props.id)!))}: a zone's published history is not taken back, so its start only moves earlier`,
      ),
    );
  }

  const vt = [...types.values()];
  const changedTypes = vt.length
    ? await tx.many(sql('AdminUpsertVehicleTypes'), [
        vt.map((t) => t.id),
        vt.map((t) => t.form_factor),
        vt.map((t) => t.propulsion_type),
        vt.map((t) => t.name),
        vt.map((t) => t.make),
        vt.map((t) => t.model),
        vt.map((t) => t.color),
        vt.map((t) => t.max_range_meters),
        vt.map((t) => t.max_speed_kph),
        vt.map((t) => t.rated_power_w),
        vt.map((t) => t.wheel_count),
        vt.map((t) => t.rider_capacity),
      ])
    : [];

  const col = <T>(fn: (p: ZoneProperties, z: ParsedZone) => T) => zones.map((z) => fn(z.props, z));
  const upserted = await tx.many(sql('AdminUpsertZones'), [
    ids,
    col((p) => p.name),
    col((p) => p.city),
    col((p) => p.country),
    col((p) => p.timezone),
    col((p) => p.currency),
    col((p) => p.vat_rate),
    col((p) => p.language ?? 'en'),
    col((p) => p.parking_mode),
    col((p) => p.licence_verification_required ?? false),
    col((p) => p.max_speed_kph ?? 20),
    col((p) => p.reduced_speed_kph ?? 15),
    col((p) => p.min_required_rides ?? 3),
    col((p) => p.speed_unit ?? 'km/h'),
    col((p) => p.min_battery_percent ?? 15),
    col((p) => p.unlock_distance_m ?? 50),
    col((p) => JSON.stringify(p.sleep_windows ?? [])),
    col((p) => p.status ?? 'operating'),
    col((_, z) => JSON.stringify(z.boundary)),
    col((_, z) => z.since),
    now,
  ]);
  const inserted = new Set(upserted.filter((r) => r.inserted).map((r) => r.id));

  await tx.query(sql('AdminDeleteZonesAreas'), [ids]);
  const areas = zones.flatMap((z) => z.areas.map((a) => ({ zone: z.props.id, ...a })));
  if (areas.length) {
    await tx.query(sql('AdminInsertAreas'), [
      areas.map((a) => a.id),
      areas.map((a) => a.zone),
      areas.map((a) => a.props.name),
      areas.map((a) => a.props.area_type),
      areas.map((a) => JSON.stringify(a.props.vehicle_types ?? [])),
      areas.map((a) => JSON.stringify(a.geometry)),
      areas.map((a) => a.props.capacity ?? null),
      areas.map((a) => a.props.max_speed_kph ?? null),
    ]);
  }

  const priced = zones.filter((z) => z.props.prices);
  if (priced.length) {
    const rows = priced.flatMap((z) => Object.entries(z.props.prices ?? {}).map(([type, p]) => ({ zone: z.props.id, type, ...p })));
    await tx.query(sql('AdminReplacePrices'), [
      priced.map((z) => z.props.id),
      rows.map((r) => r.zone),
      rows.map((r) => r.type),
      rows.map((r) => r.start_price),
      rows.map((r) => r.price_per_minute),
      now,
    ]);
  }
  const pricedIds = new Set(priced.map((z) => z.props.id));
  const { refused, warnings } = await unpricedWarnings(tx, ids, pricedIds);
  if (refused.length) throw new ZoneImportError(refused);

  // an existing zone whose start moves earlier: its history catch-up starts over from the new start
  const moved = zones.filter((z) => z.since && existing.has(z.props.id) && z.since < existing.get(z.props.id)!);
  const since = zones.filter((z) => z.since && (inserted.has(z.props.id) || moved.includes(z)));
  if (moved.length) await tx.query(sql('AdminMoveZoneStart'), [moved.map((z) => z.props.id), moved.map((z) => z.since!)]);

  const changed = new Map(changedTypes.map((r) => [r.id, r.inserted]));
  return {
    zones: zones.map((z) => ({
      zoneId: z.props.id,
      created: inserted.has(z.props.id),
      areas: z.areas.length,
      prices: z.props.prices ? Object.keys(z.props.prices) : null,
      operatingSince: since.includes(z) ? z.since : null,
    })),
    vehicleTypes: {
      created: vt.filter((t) => changed.get(t.id) === true).map((t) => t.id),
      updated: vt.filter((t) => changed.get(t.id) === false).map((t) => t.id),
      unchanged: vt.filter((t) => !changed.has(t.id)).map((t) => t.id),
    },
    warnings,
  };
}

/** One zone document (a FeatureCollection); the summary of `importZones` for it. */
export async function importZone(db: Db, clock: Clock, geojson: unknown): Promise<{ zoneId: string; created: boolean; areas: number }> {
  const r = await importZones(db, clock, [{ source: 'zone file', doc: geojson }]);
  const [z] = r.zones;
  if (!z) throw new ZoneImportError(['no zone in the input']);
  return { zoneId: z.zoneId, created: z.created, areas: z.areas };
}
