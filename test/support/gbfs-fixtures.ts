/**
 * GBFS test support: the official schemas (specs/gbfs, compiled as their README says: Ajv draft-07,
 * ajv-formats, strict off) and small SQL fixtures (zones, parking spots, vehicles, feed clients), so
 * the tests depend neither on ops/seed nor on other families' fixtures.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { Queryable } from '../../lib/core/db.js';
import type { AppContext } from '../../lib/domain/context.js';
import { SPECS_DIR, TOOLS_DIR } from '../../lib/core/paths.js';
import { reEnveloped, staleEnvelope } from '../../lib/feeds/gbfs/envelope.js';
import type { GbfsVersion } from '../../lib/feeds/gbfs/files.js';

const addFormats = ((addFormatsImport as any).default ?? addFormatsImport) as typeof import('ajv-formats').default;

const GBFS_SPECS = join(SPECS_DIR, 'gbfs');

export function gbfsSpecsAvailable(): boolean {
  return existsSync(join(GBFS_SPECS, 'v3.0', 'gbfs.json')) && existsSync(join(GBFS_SPECS, 'v2.2', 'gbfs.json'));
}

const validators = new Map<string, ValidateFunction>();

/**
 * manifest.json's official schema is not in specs/gbfs; the official validator carries the schemas of
 * the same gbfs-json-schema commit (its PROVENANCE.md), manifest.json included.
 */
const VALIDATOR_SCHEMAS = join(TOOLS_DIR, 'gbfs-validator', 'versions', 'gbfs-json-schema');

/** The official validator of a file (`version` 2.2 or 3.0, `file` without .json). */
export function officialGbfs(version: '2.2' | '3.0', file: string): ValidateFunction {
  const key = `${version}/${file}`;
  let v = validators.get(key);
  if (!v) {
    // one Ajv per schema: the official files are independent documents
    const ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(ajv);
    const inSpecs = join(GBFS_SPECS, `v${version}`, `${file}.json`);
    v = ajv.compile(JSON.parse(readFileSync(existsSync(inSpecs) ? inSpecs : join(VALIDATOR_SCHEMAS, `v${version}`, `${file}.json`), 'utf8')));
    validators.set(key, v);
  }
  return v;
}

let n = 0;

/** A WKT square of half-size `half` degrees around (lat, lng). */
export function square(lat: number, lng: number, half: number): string {
  const [a, b, c, d] = [lng - half, lat - half, lng + half, lat + half];
  return `MULTIPOLYGON(((${a} ${b},${c} ${b},${c} ${d},${a} ${d},${a} ${b})))`;
}

export interface ZoneFixture {
  id: string;
  lat: number;
  lng: number;
}

export async function gbfsZone(
  db: Queryable,
  opts: {
    id?: string;
    parkingMode?: 'free-floating' | 'parking-spot';
    sleepWindows?: Array<{ start: string; end: string }>;
    lat?: number;
    lng?: number;
    timezone?: string;
  } = {},
): Promise<ZoneFixture> {
  const id = opts.id ?? `gz${++n}`;
  const lat = opts.lat ?? 48.137;
  const lng = opts.lng ?? 11.575;
  await db.query(
    `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, sleep_windows, boundary)
     VALUES ($1, $2, 'Munich', 'DE', $3, 'EUR', 0.19, $4, $5, ST_GeomFromText($6, 4326))`,
    [id, `Zone ${id}`, opts.timezone ?? 'Europe/Berlin', opts.parkingMode ?? 'free-floating', JSON.stringify(opts.sleepWindows ?? []), square(lat, lng, 0.05)],
  );
  await gbfsArea(db, id, 'operations', square(lat, lng, 0.04), { name: 'Operating area' });
  await db.query(
    `INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
     VALUES ('gbfs-scooter', 'scooter', 'electric', 'E-Scooter', 'Acme', 'S2', 40000, 25),
            ('gbfs-bike', 'bicycle', 'electric_assist', 'E-Bike', 'Acme', 'B1', 60000, 25)
     ON CONFLICT DO NOTHING`,
  );
  await db.query(`INSERT INTO pricing (zone_id, vehicle_type_id, start_price, price_per_minute) VALUES ($1, 'gbfs-scooter', 100, 25)`, [id]);
  return { id, lat, lng };
}

export async function gbfsArea(
  db: Queryable,
  zoneId: string,
  type: string,
  wkt: string,
  opts: { name?: string; capacity?: number; vehicleTypes?: string[]; maxSpeedKph?: number } = {},
): Promise<string> {
  const row = await db.one<{ id: string }>(
    `INSERT INTO areas (zone_id, name, area_type, vehicle_types, geom, capacity, max_speed_kph)
     VALUES ($1, $2, $3, $4, ST_GeomFromText($5, 4326), $6, $7) RETURNING id`,
    [zoneId, opts.name ?? `${type} ${++n}`, type, opts.vehicleTypes ?? [], wkt, opts.capacity ?? null, opts.maxSpeedKph ?? null],
  );
  return row.id;
}

export interface VehicleFixture {
  id: string;
  code: string;
  gbfsId: string;
}

export async function gbfsVehicle(
  db: Queryable,
  zoneId: string,
  lat: number,
  lng: number,
  opts: { status?: 'ready' | 'riding' | 'booked' | 'unavailable'; battery?: number; type?: string } = {},
): Promise<VehicleFixture> {
  const code = `G${(++n).toString(36).toUpperCase().padStart(3, '0')}`.slice(-4);
  return db.one<VehicleFixture>(
    `INSERT INTO vehicles (code, zone_id, vehicle_type_id, status, mds_state, battery_percent, location, license_plate, license_plate_id)
     VALUES ($1::text, $2, $3, $4, 'available', $5, ST_SetSRID(ST_MakePoint($6, $7), 4326), $1::text, $1::text)
     RETURNING id, code, gbfs_id AS "gbfsId"`,
    [code, zoneId, opts.type ?? 'gbfs-scooter', opts.status ?? 'ready', opts.battery ?? 80, lng, lat],
  );
}

export async function gbfsFeedClient(db: Queryable, role: string, zones: string[] | null): Promise<string> {
  const id = `gbfs-client-${++n}`;
  await db.query(`INSERT INTO feed_clients (client_id, secret_hash, role, zones) VALUES ($1, 'scrypt$x', $2, $3)`, [id, role, zones]);
  return id;
}

/**
 * A snapshot as the file route serves it, decoded, or undefined: the stored object in the envelope
 * of its index row's last_updated (a ttl refresh moves only the row; lib/feeds/gbfs/envelope.ts).
 */
export async function readSnapshot(ctx: AppContext, key: string): Promise<any> {
  const text = await servedSnapshotText(ctx, key);
  return text === undefined ? undefined : JSON.parse(text);
}

/** readSnapshot's text, byte for byte what the route serves (decoded). */
export async function servedSnapshotText(ctx: AppContext, key: string): Promise<string | undefined> {
  const obj = await ctx.store.get(key);
  if (!obj) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of obj.body) chunks.push(c as Buffer);
  let bytes: Buffer = Buffer.concat(chunks);
  const row = await ctx.db.maybeOne<{ version: GbfsVersion; last_updated: Date }>(
    `SELECT version, last_updated FROM gbfs_snapshots WHERE object_key = $1 ORDER BY last_updated DESC LIMIT 1`,
    [key],
  );
  const stale = row && staleEnvelope(obj.meta.metadata, row.last_updated);
  if (row && stale) {
    const served = reEnveloped(bytes, row.version, stale.ttl, stale.storedAt, row.last_updated);
    if (!served) throw new Error(`${key}: the stored object is not laid out as published`);
    bytes = served;
  }
  return gunzipSync(bytes).toString('utf8');
}
