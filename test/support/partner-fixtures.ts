/**
 * Fixtures of the partner API and rental engine tests: plain SQL inserts (no dependency on ops/seed).
 * Coordinates: zones are squares around a centre; helpers take offsets in metres for readability.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Response } from 'supertest';
import type { Queryable } from '../../lib/core/db.js';
import type { AppContext } from '../../lib/domain/context.js';
import { createApiKey } from '../../lib/domain/credentials/api-keys.js';
import { compile, describeErrors } from '../../lib/core/validate.js';

let n = 0;
const uniq = () => `${Date.now().toString(36)}${(++n).toString(36)}${randomBytes(2).toString('hex')}`;

/** A square of `halfM` metres half-side around (lat, lng) as WKT MultiPolygon. */
function squareM(lat: number, lng: number, halfM: number): string {
  const dLat = halfM / 111_320;
  const dLng = halfM / (111_320 * Math.cos((lat * Math.PI) / 180));
  const [a, b, c, d] = [lng - dLng, lat - dLat, lng + dLng, lat + dLat];
  return `MULTIPOLYGON(((${a} ${b},${c} ${b},${c} ${d},${a} ${d},${a} ${b})))`;
}

/** The point `eastM` metres east and `northM` metres north of (lat, lng). */
export function offset(lat: number, lng: number, eastM: number, northM: number): { lat: number; lng: number } {
  return { lat: lat + northM / 111_320, lng: lng + eastM / (111_320 * Math.cos((lat * Math.PI) / 180)) };
}

export interface PartnerFixture {
  id: string;
  key: string;
  keyId: string;
}

export async function insertPartner(db: Queryable, opts: { rateLimitPerMinute?: number; zones?: string[]; tripType?: string } = {}): Promise<PartnerFixture> {
  const { id } = await db.one<{ id: string }>(
    `INSERT INTO partners (name, kind, trip_type, rate_limit_per_minute) VALUES ($1, 'rental', $2, $3) RETURNING id`,
    [`partner-${uniq()}`, opts.tripType ?? 'rider', opts.rateLimitPerMinute ?? 100000],
  );
  for (const z of opts.zones ?? []) await db.query(`INSERT INTO partner_zones (partner_id, zone_id) VALUES ($1, $2)`, [id, z]);
  const key = await createApiKey(db, id, 'partner', { key: `pk-test-${uniq()}` });
  return { id, key: key.key, keyId: key.id };
}

export interface ZoneOptions {
  lat?: number;
  lng?: number;
  parkingMode?: 'free-floating' | 'parking-spot';
  sleepWindows?: Array<{ start: string; end: string }>;
  timezone?: string;
  licenceRequired?: boolean;
  vatRate?: number;
  minBattery?: number;
  unlockDistanceM?: number;
  status?: 'operating' | 'closed';
  startPrice?: number;
  pricePerMinute?: number;
}

export interface ZoneFixture {
  id: string;
  lat: number;
  lng: number;
}

export async function insertZone(db: Queryable, o: ZoneOptions = {}): Promise<ZoneFixture> {
  const id = `pz-${uniq()}`;
  const lat = o.lat ?? 52.52;
  const lng = o.lng ?? 13.405;
  await db.query(
    `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, licence_verification_required,
                        min_battery_percent, unlock_distance_m, sleep_windows, status, boundary)
     VALUES ($1, $1, 'Berlin', 'DE', $2, 'EUR', $3, $4, $5, $6, $7, $8, $9, ST_GeomFromText($10, 4326))`,
    [
      id,
      o.timezone ?? 'Europe/Berlin',
      o.vatRate ?? 0.19,
      o.parkingMode ?? 'free-floating',
      o.licenceRequired ?? false,
      o.minBattery ?? 15,
      o.unlockDistanceM ?? 50,
      JSON.stringify(o.sleepWindows ?? []),
      o.status ?? 'operating',
      squareM(lat, lng, 3000),
    ],
  );
  await db.query(`INSERT INTO areas (zone_id, name, area_type, geom) VALUES ($1, 'operations', 'operations', ST_GeomFromText($2, 4326))`, [
    id,
    squareM(lat, lng, 2500),
  ]);
  await db.query(
    `INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
     VALUES ('pt-scooter', 'scooter', 'electric', 'Scooter', 'Acme', 'S1', 40000, 20),
            ('pt-bike', 'bicycle', 'electric_assist', 'E-bike', 'Acme', 'B1', 60000, 25) ON CONFLICT DO NOTHING`,
  );
  await db.query(`INSERT INTO pricing (zone_id, vehicle_type_id, start_price, price_per_minute) VALUES ($1, 'pt-scooter', $2, $3), ($1, 'pt-bike', $2, $3)`, [
    id,
    o.startPrice ?? 100,
    o.pricePerMinute ?? 25,
  ]);
  return { id, lat, lng };
}

export async function insertArea(
  db: Queryable,
  zone: ZoneFixture,
  areaType: string,
  o: { eastM?: number; northM?: number; halfM?: number; vehicleTypes?: string[]; capacity?: number; name?: string } = {},
): Promise<string> {
  const c = offset(zone.lat, zone.lng, o.eastM ?? 0, o.northM ?? 0);
  const { id } = await db.one<{ id: string }>(
    `INSERT INTO areas (zone_id, name, area_type, vehicle_types, geom, capacity) VALUES ($1, $2, $3, $4, ST_GeomFromText($5, 4326), $6) RETURNING id`,
    [
      zone.id,
      o.name ?? areaType,
      areaType,
      o.vehicleTypes ?? [],
      squareM(c.lat, c.lng, o.halfM ?? 50),
      areaType === 'parking-spot' ? (o.capacity ?? 10) : null,
    ],
  );
  return id;
}

let codeCounter = 0;
function nextCode(): string {
  // 4 characters, unique within a test database: a per-process prefix letter and a base-36 counter
  const base = (++codeCounter + (process.pid % 100) * 1000).toString(36).toUpperCase();
  return ('V' + base.padStart(3, '0')).slice(-4);
}

export interface VehicleOptions {
  eastM?: number;
  northM?: number;
  battery?: number;
  status?: 'ready' | 'riding' | 'booked' | 'unavailable';
  typeId?: string;
  mdsState?: string;
  code?: string;
}

export async function insertVehicle(db: Queryable, zone: ZoneFixture, o: VehicleOptions = {}): Promise<{ id: string; code: string; lat: number; lng: number }> {
  const p = offset(zone.lat, zone.lng, o.eastM ?? 0, o.northM ?? 0);
  for (;;) {
    const code = o.code ?? nextCode();
    const row = await db.maybeOne<{ id: string }>(
      `INSERT INTO vehicles (code, zone_id, vehicle_type_id, status, mds_state, battery_percent, location, license_plate, license_plate_id, last_moved_at)
       VALUES ($1, $2, $3, $4, $5, $6, ST_SetSRID(ST_MakePoint($7, $8), 4326), $9, $9, now())
       ON CONFLICT (code) DO NOTHING RETURNING id`,
      [code, zone.id, o.typeId ?? 'pt-scooter', o.status ?? 'ready', o.mdsState ?? 'available', o.battery ?? 80, p.lng, p.lat, `plate-${code}`],
    );
    if (row) return { id: row.id, code, ...p };
    if (o.code) throw new Error(`vehicle code ${o.code} taken`);
  }
}

export async function insertUser(db: Queryable, partnerId: string): Promise<string> {
  const tag = uniq();
  const { id } = await db.one<{ id: string }>(`INSERT INTO users (partner_id, email, external_id) VALUES ($1, $2, $3) RETURNING id`, [
    partnerId,
    `u-${tag}@example.com`,
    `ext-${tag}`,
  ]);
  return id;
}

/** Asserts the partner API's JSON:API error shape (status, code, title, detail) and returns the error object. */
export function expectError(res: Response, status: number, code: string, detail?: string) {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.type).to.equal('application/json');
  expect(res.body.errors).to.be.an('array').with.length(1);
  const e = res.body.errors[0];
  expect(e.status).to.equal(String(status));
  expect(e.code).to.equal(code);
  expect(e.title).to.be.a('string').with.lengthOf.above(0);
  if (detail) expect(e.detail).to.equal(detail);
  // RFC 9110: every 405, the business ones included, names the allowed methods
  if (status === 405) expect(res.headers.allow, `Allow of a 405 ${code}`).to.match(/^[A-Z]+(, [A-Z]+)*$/);
  return e;
}

/** Asserts that `value` validates against one of schemas/partner/responses.ts. */
export function expectValid(schema: object, value: unknown): void {
  const validate = compile(schema);
  expect(validate(value), `${describeErrors(validate.errors)}: ${JSON.stringify(value)}`).to.equal(true);
}

/** The context with one named query failing with `err` (everything else real). */
export function failingQuery(ctx: AppContext, name: string, err: Error): AppContext {
  const db = new Proxy(ctx.db, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (query: { name?: string } | string, ...rest: unknown[]) => {
        if (typeof query === 'object' && query.name === name) return Promise.reject(err);
        return v.call(target, query, ...rest);
      };
    },
  });
  return { ...ctx, db };
}
