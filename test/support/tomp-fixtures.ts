/**
 * Fixtures of the TOMP tests, plain SQL (no ops/seed): a zone west of Greenwich (negative
 * longitudes, to exercise the coordinates deviation) whose boundary has two polygons, a vehicle type
 * with pricing, ready vehicles, MaaS partners with TOMP keys.
 */
import type { Queryable } from '../../lib/core/db.js';
import { createApiKey, type KeyScope } from '../../lib/domain/credentials/api-keys.js';

let counter = 0;
const uniq = () => `${process.pid.toString(36)}${(++counter).toString(36)}`;

/** A square of half-size `half` degrees around (lat, lng) as a WKT polygon ring. */
function ring(lat: number, lng: number, half: number): string {
  const [a, b, c, d] = [lng - half, lat - half, lng + half, lat + half];
  return `((${a} ${b},${c} ${b},${c} ${d},${a} ${d},${a} ${b}))`;
}

export interface ZoneOpts {
  id?: string;
  lat?: number;
  lng?: number;
  sleepWindows?: Array<{ start: string; end: string }>;
  status?: 'operating' | 'closed';
  timezone?: string;
}

/** A free-floating zone: a big square around (lat, lng) plus a small island polygon further east. */
export async function insertTompZone(q: Queryable, opts: ZoneOpts = {}): Promise<string> {
  const id = opts.id ?? `tz${uniq()}`;
  const lat = opts.lat ?? 40.4168;
  const lng = opts.lng ?? -3.7038;
  const wkt = `MULTIPOLYGON(${ring(lat, lng, 0.05)},${ring(lat, lng + 0.2, 0.01)})`;
  await q.query(
    `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary, sleep_windows, status)
     VALUES ($1, $2, 'Madrid', 'ES', $3, 'EUR', 0.21, 'free-floating', ST_GeomFromText($4, 4326), $5, $6)`,
    [id, `Zone ${id}`, opts.timezone ?? 'Europe/Madrid', wkt, JSON.stringify(opts.sleepWindows ?? []), opts.status ?? 'operating'],
  );
  await q.query(`INSERT INTO areas (zone_id, name, area_type, geom) VALUES ($1, 'ops', 'operations', ST_GeomFromText($2, 4326))`, [
    id,
    `MULTIPOLYGON(${ring(lat, lng, 0.05)})`,
  ]);
  await q.query(
    `INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
     VALUES ('tomp-scooter', 'scooter', 'electric', 'E-Scooter', 'Acme', 'T1', 35000, 20) ON CONFLICT DO NOTHING`,
  );
  await q.query(`INSERT INTO pricing (zone_id, vehicle_type_id, start_price, price_per_minute) VALUES ($1, 'tomp-scooter', 100, 25)`, [id]);
  return id;
}

/** A no-parking area (a square of half-size `half` degrees) in a zone. */
export async function insertNoParking(q: Queryable, zoneId: string, lat: number, lng: number, half = 0.001): Promise<void> {
  await q.query(`INSERT INTO areas (zone_id, name, area_type, geom) VALUES ($1, 'no parking', 'no-parking', ST_GeomFromText($2, 4326))`, [
    zoneId,
    `MULTIPOLYGON(${ring(lat, lng, half)})`,
  ]);
}

export interface VehicleOpts {
  lat?: number;
  lng?: number;
  battery?: number;
  status?: 'ready' | 'riding' | 'booked' | 'unavailable';
  mdsState?: string;
}

export async function insertTompVehicle(
  q: Queryable,
  zoneId: string,
  opts: VehicleOpts = {},
): Promise<{ id: string; code: string; gbfsId: string; lat: number; lng: number }> {
  const n = ++counter;
  const code = `T${((process.pid * 7 + n) % 46656).toString(36).toUpperCase().padStart(3, '0')}`;
  const lat = opts.lat ?? 40.4168;
  const lng = opts.lng ?? -3.7038;
  const row = await q.one<{ id: string; gbfs_id: string }>(
    `INSERT INTO vehicles (code, zone_id, vehicle_type_id, status, mds_state, battery_percent, location, license_plate, license_plate_id, last_moved_at)
     VALUES ($1, $2, 'tomp-scooter', $3, $4, $5, ST_SetSRID(ST_MakePoint($6, $7), 4326), $8, $8, '2000-01-01T00:00:00Z')
     RETURNING id, gbfs_id`,
    [code, zoneId, opts.status ?? 'ready', opts.mdsState ?? 'available', opts.battery ?? 80, lng, lat, `P-${code}`],
  );
  return { id: row.id, code, gbfsId: row.gbfs_id, lat, lng };
}

export interface PartnerOpts {
  postponedCommit?: boolean;
  rateLimit?: number;
  zones?: string[];
  scope?: KeyScope;
}

export async function insertMaasPartner(q: Queryable, opts: PartnerOpts = {}): Promise<{ id: string; key: string }> {
  const p = await q.one<{ id: string }>(
    `INSERT INTO partners (name, kind, trip_type, tomp_postponed_commit, rate_limit_per_minute) VALUES ($1, 'maas', 'maas', $2, $3) RETURNING id`,
    [`maas-${uniq()}`, opts.postponedCommit ?? false, opts.rateLimit ?? 4000],
  );
  for (const z of opts.zones ?? []) await q.query(`INSERT INTO partner_zones (partner_id, zone_id) VALUES ($1, $2)`, [p.id, z]);
  const { key } = await createApiKey(q, p.id, opts.scope ?? 'tomp');
  return { id: p.id, key };
}

/** A one-stop booking body for a vehicle at (lat, lng). */
export function oneStopBody(assetId: string, at: { lat: number; lng: number }, externalId = `cust-${uniq()}`) {
  return { from: { coordinates: { lng: at.lng, lat: at.lat } }, useAssets: [assetId], customer: { externalId } };
}
