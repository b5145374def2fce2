/**
 * Minimal fleet fixtures for engineer B's tests: a zone with an operations area, a vehicle type,
 * vehicles. Plain SQL so that the tests do not depend on ops/seed.
 */
import { expect } from 'chai';
import type { Queryable } from '../../lib/core/db.js';
import { isValidTransition, type MdsState } from '../../lib/domain/fleet/state-machine.js';
import { squareWkt } from './geometry.js';

let counter = 0;

/** A 0.02° square around (lat, lng) as WKT MultiPolygon. */
export async function insertZone(q: Queryable, id = `z${++counter}`, opts: { lat?: number; lng?: number } = {}): Promise<string> {
  const lat = opts.lat ?? 52.52;
  const lng = opts.lng ?? 13.405;
  await q.query(
    `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary)
     VALUES ($1, $1, 'Berlin', 'DE', 'Europe/Berlin', 'EUR', 0.19, 'free-floating', ST_GeomFromText($2, 4326))`,
    [id, squareWkt(lat, lng, 0.02)],
  );
  await q.query(`INSERT INTO areas (zone_id, name, area_type, geom) VALUES ($1, 'ops', 'operations', ST_GeomFromText($2, 4326))`, [
    id,
    squareWkt(lat, lng, 0.015),
  ]);
  await q.query(
    `INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
     VALUES ('fx-scooter', 'scooter', 'electric', 'Scooter', 'Acme', 'S1', 40000, 20) ON CONFLICT DO NOTHING`,
  );
  return id;
}

export async function insertVehicle(q: Queryable, zoneId: string, opts: { mdsState?: string; lat?: number; lng?: number } = {}): Promise<string> {
  const n = ++counter;
  const code = `F${n.toString(36).toUpperCase().padStart(3, '0')}`.slice(-4);
  const row = await q.one<{ id: string }>(
    `INSERT INTO vehicles (code, zone_id, vehicle_type_id, mds_state, battery_percent, location, license_plate, license_plate_id)
     VALUES ($1, $2, 'fx-scooter', $3, 80, ST_SetSRID(ST_MakePoint($4, $5), 4326), $6, $6) RETURNING id`,
    [code, zoneId, opts.mdsState ?? 'removed', opts.lng ?? 13.405, opts.lat ?? 52.52, code],
  );
  return row.id;
}

/** Every vehicle's events, in time order, walk the MDS 2.0 state machine from `removed`. */
export async function expectLegalEventHistories(q: Queryable): Promise<void> {
  const events = await q.many<{ device_id: string; event_types: string[]; vehicle_state: MdsState }>(
    `SELECT device_id, event_types, vehicle_state FROM events ORDER BY device_id, ts, event_id`,
  );
  let device = '';
  let state: MdsState = 'removed';
  for (const e of events) {
    if (e.device_id !== device) [device, state] = [e.device_id, 'removed'];
    expect(isValidTransition(state, e.event_types, e.vehicle_state), `${state} ${e.event_types.join(',')} ${e.vehicle_state}`).to.equal(true);
    state = e.vehicle_state;
  }
}
