/**
 * Fixtures of the feed publisher tests and bench: a zone, vehicles, trips and events written with
 * plain SQL (events bypass the state machine on purpose: the publisher must render whatever history
 * holds). Bulk helpers generate rows in SQL so that the bench can make millions quickly.
 */
import type { Queryable } from '../../lib/core/db.js';
import { squareWkt } from './geometry.js';

let counter = 0;

export async function feedZone(q: Queryable, opts: { id?: string; createdAt?: Date; city?: string; country?: string } = {}): Promise<string> {
  const id = opts.id ?? `fz${process.pid % 1000}x${++counter}`;
  await q.query(
    `INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary, created_at)
     VALUES ($1, $1, $3, $4, 'Europe/Berlin', 'EUR', 0.19, 'free-floating', ST_GeomFromText($2, 4326), $5)`,
    [id, squareWkt(52.52, 13.405, 0.05), opts.city ?? 'Berlin', opts.country ?? 'DE', opts.createdAt ?? new Date('2026-01-01T00:00:00Z')],
  );
  await q.query(
    `INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
     VALUES ('feed-scooter', 'scooter', 'electric', 'Scooter', 'Acme', 'S1', 40000, 20),
            ('feed-bike', 'bicycle', 'electric_assist', 'E-bike', 'Acme', 'B1', 60000, 25)
     ON CONFLICT DO NOTHING`,
  );
  return id;
}

/** A 4-character code unique across test runs in one database. */
function nextCode(): string {
  const n = ++counter + (process.pid % 997) * 1000;
  return n.toString(36).toUpperCase().padStart(4, 'Q').slice(-4);
}

export async function feedVehicle(
  q: Queryable,
  zoneId: string,
  opts: { type?: string; code?: string; lat?: number; lng?: number; battery?: number } = {},
): Promise<{ id: string; code: string }> {
  const code = opts.code ?? nextCode();
  const row = await q.one<{ id: string }>(
    `INSERT INTO vehicles (code, zone_id, vehicle_type_id, mds_state, battery_percent, location, license_plate, license_plate_id)
     VALUES ($1, $2, $3, 'available', $4, ST_SetSRID(ST_MakePoint($5, $6), 4326), $7, $8) RETURNING id`,
    [code, zoneId, opts.type ?? 'feed-scooter', opts.battery ?? 80, opts.lng ?? 13.405, opts.lat ?? 52.52, `B-${code}`, `PL-${code}`],
  );
  return { id: row.id, code };
}

export interface TripInput {
  tripId?: string;
  deviceId: string;
  zoneId: string;
  start: Date;
  end: Date;
  tripType?: 'rider' | 'maas' | 'operator';
  distance?: number;
  rideType?: 'solo' | 'group-host' | 'group-guest';
  userRideCount?: number;
}

export async function feedTrip(q: Queryable, t: TripInput): Promise<string> {
  const row = await q.one<{ trip_id: string }>(
    `INSERT INTO trips (trip_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time, start_location, end_location,
                        distance_m, duration_s, is_group_ride, ride_type, user_ride_count)
     SELECT COALESCE($1::uuid, gen_random_uuid()), v.id, $3, v.vehicle_type_id, $4, $5, $6,
            ST_SetSRID(ST_MakePoint(13.40, 52.51), 4326), ST_SetSRID(ST_MakePoint(13.41, 52.52), 4326),
            $7, GREATEST(0, extract(epoch FROM ($6::timestamptz - $5::timestamptz))::int), $8 <> 'solo', $8, $9
       FROM vehicles v WHERE v.id = $2
     RETURNING trip_id`,
    [t.tripId ?? null, t.deviceId, t.zoneId, t.tripType ?? 'rider', t.start, t.end, t.distance ?? 1234, t.rideType ?? 'solo', t.userRideCount ?? 1],
  );
  return row.trip_id;
}

export interface EventInput {
  deviceId: string;
  zoneId: string;
  ts: Date;
  eventTypes: string[];
  state: string;
  tripIds?: string[] | null;
  battery?: number | null;
}

export async function feedEvent(q: Queryable, e: EventInput): Promise<string> {
  const row = await q.one<{ event_id: string }>(
    `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids)
     VALUES ($1, $2, $3, $4, $5, ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), $6, $7::uuid[]) RETURNING event_id`,
    [e.deviceId, e.zoneId, e.eventTypes, e.state, e.ts, e.battery === undefined ? 77 : e.battery, e.tripIds ?? null],
  );
  return row.event_id;
}

export async function feedTelemetry(q: Queryable, t: { deviceId: string; zoneId: string; ts: Date; tripId?: string | null }): Promise<void> {
  await q.query(
    `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id)
     VALUES ($1, $2, $3, ST_SetSRID(ST_MakePoint(13.406, 52.521), 4326), 66, $4)`,
    [t.deviceId, t.zoneId, t.ts, t.tripId ?? null],
  );
}

/** `n` (< 46656) vehicles in one statement; codes are `prefix` (one letter) + the counter in base 36. */
export async function bulkVehicles(q: Queryable, zoneId: string, n: number, prefix: string): Promise<void> {
  await q.query(
    `INSERT INTO vehicles (code, zone_id, vehicle_type_id, mds_state, battery_percent, location, license_plate, license_plate_id)
     SELECT $3 || substr(a, i / 1296 % 36 + 1, 1) || substr(a, i / 36 % 36 + 1, 1) || substr(a, i % 36 + 1, 1), $1, CASE WHEN i % 5 = 0 THEN 'feed-bike' ELSE 'feed-scooter' END, 'available', 50 + i % 50,
            ST_SetSRID(ST_MakePoint(13.38 + (i % 100) * 0.0005, 52.50 + (i / 100) * 0.0005), 4326), 'B-' || i, 'PL-' || i
       FROM generate_series(1, $2::int) i, (SELECT '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'::text AS a) c`,
    [zoneId, n, prefix],
  );
}

/**
 * For every vehicle of the zone, `tripsPerVehicle` trips ending spread over [from, from + hours):
 * a trip row, a trip_start event (on_trip) and a trip_end event (available), as a rental makes.
 */
export async function bulkHistory(q: Queryable, zoneId: string, from: Date, hours: number, tripsPerVehicle: number): Promise<void> {
  await q.query(
    `WITH t AS (
       SELECT gen_random_uuid() AS trip_id, v.id AS device_id, v.vehicle_type_id,
              $2::timestamptz + (random() * ($3::int * 3600 - 1)) * interval '1 second' AS end_time,
              (60 + random() * 1200)::int AS dur
         FROM vehicles v CROSS JOIN generate_series(1, $4::int) k
        WHERE v.zone_id = $1),
     ins AS (
       INSERT INTO trips (trip_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time, start_location, end_location, distance_m, duration_s)
       SELECT trip_id, device_id, $1, vehicle_type_id, 'rider', end_time - dur * interval '1 second', end_time,
              ST_SetSRID(ST_MakePoint(13.40, 52.51), 4326), ST_SetSRID(ST_MakePoint(13.41, 52.52), 4326), dur * 4, dur
         FROM t RETURNING trip_id, device_id, start_time, end_time)
     INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids)
     SELECT device_id, $1, ARRAY['trip_start'], 'on_trip', start_time, ST_SetSRID(ST_MakePoint(13.40, 52.51), 4326), 80, ARRAY[trip_id] FROM ins
     UNION ALL
     SELECT device_id, $1, ARRAY['trip_end'], 'available', end_time, ST_SetSRID(ST_MakePoint(13.41, 52.52), 4326), 75, ARRAY[trip_id] FROM ins`,
    [zoneId, from, hours, tripsPerVehicle],
  );
}

/**
 * Telemetry of the trips that ended in [from, from + hours): a point a minute along each trip, and
 * one point an hour of every vehicle of the zone, parked (as a fleet's heartbeats).
 */
export async function bulkTelemetry(q: Queryable, zoneId: string, from: Date, hours: number): Promise<void> {
  await q.query(
    `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id)
     SELECT t.device_id, $1, g, ST_SetSRID(ST_MakePoint(13.40 + random() * 0.01, 52.51 + random() * 0.01), 4326), 70, t.trip_id
       FROM trips t CROSS JOIN LATERAL generate_series(t.start_time, t.end_time, interval '60 seconds') g
      WHERE t.zone_id = $1 AND t.end_time >= $2::timestamptz AND t.end_time < $2::timestamptz + $3::int * interval '1 hour'
     UNION ALL
     SELECT v.id, $1, $2::timestamptz + h * interval '1 hour' + random() * interval '59 minutes', v.location, v.battery_percent, NULL
       FROM vehicles v CROSS JOIN generate_series(0, $3::int - 1) h
      WHERE v.zone_id = $1`,
    [zoneId, from, hours],
  );
}
