/**
 * Importing a zone and its areas from one GeoJSON FeatureCollection (ops CLI `zone import`).
 * The feature whose `properties.kind` is "zone" carries the zone's settings and its boundary; every
 * other feature is an area (`properties.area_type`). The whole file is validated first, and every
 * problem names its feature (index and name); then the zone is upserted and its areas replaced in
 * one transaction, so a bad file changes nothing. An area keeps its id when the feature has a UUID
 * `id`, which keeps GBFS station ids stable across re-imports.
 */
import { isUuidV4 } from '../uuid.js';
import { q, type Db } from '../db.js';
import type { Clock } from '../clock.js';
import { compile } from '../validate.js';
import { ZONE_ID_SCHEMA } from '../zones.js';

const AREA_TYPES = ['operations', 'no-parking', 'parking-spot', 'slow-zone', 'no-riding', 'incentive', 'free-floating'] as const;

const polygonal = { type: 'object', required: ['type', 'coordinates'], properties: { type: { enum: ['Polygon', 'MultiPolygon'] } } } as const;

const zoneProps = {
  type: 'object',
  required: ['kind', 'id', 'name', 'city', 'country', 'timezone', 'currency', 'vat_rate', 'parking_mode'],
  additionalProperties: false,
  properties: {
    kind: { const: 'zone' },
    id: ZONE_ID_SCHEMA,
    name: { type: 'string', minLength: 1 },
    city: { type: 'string', minLength: 1 },
    country: { type: 'string', pattern: '^[A-Z]{2}$' },
    timezone: { type: 'string', minLength: 1 },
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
    vat_rate: { type: 'number', minimum: 0, exclusiveMaximum: 1 },
    language: { type: 'string', minLength: 2 },
    parking_mode: { enum: ['free-floating', 'parking-spot'] },
    licence_verification_required: { type: 'boolean' },
    max_speed_kph: { type: 'integer', minimum: 1 },
    reduced_speed_kph: { type: 'integer', minimum: 1 },
    min_required_rides: { type: 'integer', minimum: 0 },
    speed_unit: { enum: ['km/h', 'mph'] },
    min_battery_percent: { type: 'integer', minimum: 0, maximum: 100 },
    unlock_distance_m: { type: 'integer', minimum: 1 },
    sleep_windows: {
      type: 'array',
      items: {
        type: 'object',
        required: ['start', 'end'],
        additionalProperties: false,
        properties: { start: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$' }, end: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$' } },
      },
    },
    status: { enum: ['operating', 'closed'] },
  },
} as const;

const areaProps = {
  type: 'object',
  required: ['area_type', 'name'],
  additionalProperties: false,
  properties: {
    area_type: { enum: AREA_TYPES },
    name: { type: 'string', minLength: 1 },
    vehicle_types: { type: 'array', items: { type: 'string' } },
    capacity: { type: 'integer', minimum: 0 },
    max_speed_kph: { type: 'integer', minimum: 1 },
  },
} as const;

const validZone = compile(zoneProps);
const validArea = compile(areaProps);
const validGeom = compile(polygonal);

export class ZoneImportError extends Error {
  constructor(readonly problems: string[]) {
    super(`zone file has ${problems.length} problem(s):\n  - ${problems.join('\n  - ')}`);
  }
}

function label(i: number, f: any): string {
  const name = f?.properties?.name ?? f?.properties?.id;
  return `feature #${i}${name ? ` "${name}"` : ''}`;
}

/** ajv's errors as one line; an enum or const names what it allows, so the fix is in the message. */
function ajvText(errors: typeof validZone.errors): string {
  return (errors ?? [])
    .map((e) => {
      const p = (e.params ?? {}) as { additionalProperty?: string; allowedValues?: unknown[]; allowedValue?: unknown };
      const detail = p.additionalProperty !== undefined
        ? ` (${p.additionalProperty})`
        : p.allowedValues ? `: ${p.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
        : 'allowedValue' in p ? `: ${JSON.stringify(p.allowedValue)}` : '';
      return `${e.instancePath || 'properties'} ${e.message}${detail}`;
    })
    .join(', ');
}

export async function importZone(db: Db, clock: Clock, geojson: unknown): Promise<{ zoneId: string; created: boolean; areas: number }> {
  const fc = geojson as { type?: string; features: any[] };
  if (fc?.type !== 'FeatureCollection' || !Array.isArray(fc.features)) throw new ZoneImportError(['the file must be a GeoJSON FeatureCollection']);
  const problems: string[] = [];
  const zones = fc.features.map((f, i) => [f, i] as const).filter(([f]) => f?.properties?.kind === 'zone');
  if (zones.length !== 1) problems.push(`exactly one feature must have properties.kind = "zone" (found ${zones.length})`);
  for (const [i, f] of fc.features.entries()) {
    if (f?.type !== 'Feature') {
      problems.push(`${label(i, f)}: not a GeoJSON Feature`);
      continue;
    }
    if (!validGeom(f.geometry)) problems.push(`${label(i, f)}: geometry must be a Polygon or MultiPolygon`);
    else {
      const row = await db.one(q('AdminGeometryProblem'), [JSON.stringify(f.geometry)]).catch(() => ({ problem: 'unreadable coordinates' }));
      if (row.problem) problems.push(`${label(i, f)}: invalid geometry (${row.problem})`);
    }
    const isZone = f.properties?.kind === 'zone';
    if (isZone ? !validZone(f.properties) : !validArea(f.properties)) {
      problems.push(`${label(i, f)}: ${ajvText(isZone ? validZone.errors : validArea.errors)}`);
    }
    if (!isZone && f.id !== undefined && !isUuidV4(f.id)) problems.push(`${label(i, f)}: id must be a UUID v4 when given`);
    if (!isZone && f.properties?.area_type === 'parking-spot' && f.properties.capacity === undefined) problems.push(`${label(i, f)}: a parking-spot needs a capacity`);
    if (!isZone && f.properties?.area_type !== 'parking-spot' && f.properties?.capacity !== undefined) problems.push(`${label(i, f)}: only parking-spot areas have a capacity`);
  }
  const zoneFeature = zones[0]?.[0];
  if (zoneFeature) {
    const mode = zoneFeature.properties.parking_mode;
    for (const [i, f] of fc.features.entries()) {
      const t = f?.properties?.area_type;
      if (mode === 'free-floating' && t === 'parking-spot') problems.push(`${label(i, f)}: parking-spot area in a free-floating zone`);
      if (mode === 'parking-spot' && t === 'no-parking') problems.push(`${label(i, f)}: no-parking area in a parking-spot zone`);
    }
  }
  if (problems.length) throw new ZoneImportError(problems);

  const z = zoneFeature!.properties;
  const now = clock.now();
  return db.tx(async (tx) => {
    const { inserted } = await tx.one(q('AdminUpsertZone'), [
      z.id, z.name, z.city, z.country, z.timezone, z.currency, z.vat_rate, z.language ?? 'en', z.parking_mode,
      z.licence_verification_required ?? false, z.max_speed_kph ?? 20, z.reduced_speed_kph ?? 15, z.min_required_rides ?? 3,
      z.speed_unit ?? 'km/h', z.min_battery_percent ?? 15, z.unlock_distance_m ?? 50, JSON.stringify(z.sleep_windows ?? []),
      z.status ?? 'operating', JSON.stringify(zoneFeature!.geometry), now,
    ]);
    await tx.query(q('AdminDeleteZoneAreas'), [z.id]);
    let areas = 0;
    for (const f of fc.features) {
      if (f.properties.kind === 'zone') continue;
      const p = f.properties;
      await tx.query(q('AdminInsertArea'), [z.id, p.name, p.area_type, p.vehicle_types ?? [], JSON.stringify(f.geometry), p.capacity ?? null, p.max_speed_kph ?? null, f.id ?? null]);
      areas++;
    }
    return { zoneId: z.id as string, created: Boolean(inserted), areas };
  });
}
