-- Operator administration (ops CLI): partners, API keys, feed clients, zones with their prices and
-- vehicle types, vehicles. Imports write each table in one statement over arrays (unnest).

-- name: AdminFindPartnerByName
SELECT id, name, kind, trip_type FROM partners WHERE name = $1;

-- name: AdminCreatePartner
INSERT INTO partners (name, kind, trip_type, tomp_postponed_commit)
VALUES ($1, $2, $3, $4)
RETURNING id, name, kind, trip_type;

-- name: AdminListApiKeys
SELECT k.id, k.scope, k.key_prefix, k.label, k.created_at, k.expires_at, k.revoked_at, k.last_used_at, p.name AS partner
  FROM api_keys k JOIN partners p ON p.id = k.partner_id
 WHERE ($1::text IS NULL OR k.scope = $1)
 ORDER BY p.name, k.created_at;

-- name: AdminFindApiKey
SELECT id, partner_id, scope, label, revoked_at FROM api_keys WHERE id = $1;

-- name: AdminListFeedClients
SELECT client_id, role, zones, label, created_at, revoked_at, last_used_at FROM feed_clients ORDER BY client_id;

-- name: AdminRotateFeedClient
UPDATE feed_clients SET secret_hash = $2 WHERE client_id = $1 AND revoked_at IS NULL
RETURNING client_id, role, zones;

-- name: AdminInsertFeedClients
-- Many feed clients in one statement; $4 holds each client's zones as JSON (null: every zone), as
-- arrays of arrays cannot be ragged. A client id that exists is skipped and not returned: the caller
-- refuses the whole input then (its transaction rolls back).
INSERT INTO feed_clients (client_id, secret_hash, role, zones, label)
SELECT t.client_id, t.secret_hash, t.role,
       CASE WHEN jsonb_typeof(t.zones::jsonb) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(t.zones::jsonb)) END, t.label
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS t (client_id, secret_hash, role, zones, label)
ON CONFLICT (client_id) DO NOTHING
RETURNING client_id;

-- name: AdminFeedClientsExisting
SELECT client_id FROM feed_clients WHERE client_id = ANY ($1::text[]) ORDER BY client_id;

-- name: AdminLockZones
-- The zones of an import that exist, locked against other imports until it commits, with their first
-- operating hour. NO KEY: rentals and vehicles referencing a zone go on meanwhile.
SELECT id, created_at FROM zones WHERE id = ANY ($1::text[]) ORDER BY id FOR NO KEY UPDATE;

-- name: AdminUpsertZones
-- Every zone of an import in one statement (arrays in the same order). A new zone starts operating
-- at $20 (operating_since) or now ($21); an existing zone keeps its start here (AdminMoveZoneStart
-- moves it earlier).
INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, language, parking_mode,
                   licence_verification_required, max_speed_kph, reduced_speed_kph, min_required_rides,
                   speed_unit, min_battery_percent, unlock_distance_m, sleep_windows, status, boundary, created_at, updated_at)
SELECT t.id, t.name, t.city, t.country, t.timezone, t.currency, t.vat_rate, t.language, t.parking_mode, t.licence, t.max_speed, t.reduced_speed,
       t.min_rides, t.speed_unit, t.min_battery, t.unlock_m, t.sleep::jsonb, t.status, ST_Multi(ST_SetSRID(ST_GeomFromGeoJSON(t.boundary), 4326)),
       coalesce(t.since, $21::timestamptz), $21::timestamptz
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::numeric[], $8::text[], $9::text[], $10::boolean[],
              $11::int[], $12::int[], $13::int[], $14::text[], $15::int[], $16::int[], $17::text[], $18::text[], $19::text[], $20::timestamptz[])
    AS t (id, name, city, country, timezone, currency, vat_rate, language, parking_mode, licence, max_speed, reduced_speed,
          min_rides, speed_unit, min_battery, unlock_m, sleep, status, boundary, since)
ON CONFLICT (id) DO UPDATE SET
  name = EXCLUDED.name, city = EXCLUDED.city, country = EXCLUDED.country, timezone = EXCLUDED.timezone,
  currency = EXCLUDED.currency, vat_rate = EXCLUDED.vat_rate, language = EXCLUDED.language,
  parking_mode = EXCLUDED.parking_mode, licence_verification_required = EXCLUDED.licence_verification_required,
  max_speed_kph = EXCLUDED.max_speed_kph, reduced_speed_kph = EXCLUDED.reduced_speed_kph,
  min_required_rides = EXCLUDED.min_required_rides, speed_unit = EXCLUDED.speed_unit,
  min_battery_percent = EXCLUDED.min_battery_percent, unlock_distance_m = EXCLUDED.unlock_distance_m,
  sleep_windows = EXCLUDED.sleep_windows, status = EXCLUDED.status, boundary = EXCLUDED.boundary,
  updated_at = EXCLUDED.updated_at
RETURNING id, (xmax = 0) AS inserted;

-- name: AdminDeleteZonesAreas
DELETE FROM areas WHERE zone_id = ANY ($1::text[]) AND source = 'operator';

-- name: AdminInsertAreas
-- Every area of an import in one statement; $5 holds each area's vehicle_types as a JSON array
-- (arrays of arrays cannot be ragged), $1 its id when the file gives one.
INSERT INTO areas (id, zone_id, name, area_type, vehicle_types, geom, capacity, max_speed_kph)
SELECT coalesce(t.id, gen_random_uuid()), t.zone_id, t.name, t.area_type, ARRAY(SELECT jsonb_array_elements_text(t.types::jsonb)),
       ST_Multi(ST_SetSRID(ST_GeomFromGeoJSON(t.geom), 4326)), t.capacity, t.max_speed
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[])
    AS t (id, zone_id, name, area_type, types, geom, capacity, max_speed);

-- name: AdminGeometryProblems
-- The invalid ones among GeoJSON geometries (1-based position in $1, and why).
-- i: WITH ORDINALITY numbers every element.
-- not null: i
SELECT s.i::int AS i, ST_IsValidReason(s.g) AS problem
  FROM (SELECT t.i, ST_SetSRID(ST_GeomFromGeoJSON(t.j), 4326) AS g FROM unnest($1::text[]) WITH ORDINALITY AS t (j, i)) s
 WHERE NOT ST_IsValid(s.g)
 ORDER BY s.i;

-- name: AdminListVehicleTypeIds
SELECT id FROM vehicle_types ORDER BY id;

-- name: AdminListVehicleTypes
SELECT id, form_factor, propulsion_type, name, make, model, color, max_range_meters, max_speed_kph, rated_power_w, wheel_count, rider_capacity,
       (SELECT count(*)::int FROM vehicles v WHERE v.vehicle_type_id = vt.id) AS vehicles,
       (SELECT count(*)::int FROM pricing p WHERE p.vehicle_type_id = vt.id) AS priced_zones
  FROM vehicle_types vt ORDER BY id;

-- name: AdminUpsertVehicleTypes
-- The vehicle types a zone file declares; a type whose declaration equals the stored row is left
-- alone (an update would rebuild every zone's GBFS vehicle_types for nothing, migration 000150) and
-- not returned, so the caller tells created, updated and unchanged apart.
INSERT INTO vehicle_types AS vt (id, form_factor, propulsion_type, name, make, model, color, max_range_meters, max_speed_kph, rated_power_w, wheel_count, rider_capacity)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::int[], $11::int[], $12::int[])
ON CONFLICT (id) DO UPDATE SET
  form_factor = EXCLUDED.form_factor, propulsion_type = EXCLUDED.propulsion_type, name = EXCLUDED.name, make = EXCLUDED.make,
  model = EXCLUDED.model, color = EXCLUDED.color, max_range_meters = EXCLUDED.max_range_meters, max_speed_kph = EXCLUDED.max_speed_kph,
  rated_power_w = EXCLUDED.rated_power_w, wheel_count = EXCLUDED.wheel_count, rider_capacity = EXCLUDED.rider_capacity
 WHERE (vt.form_factor, vt.propulsion_type, vt.name, vt.make, vt.model, vt.color, vt.max_range_meters, vt.max_speed_kph, vt.rated_power_w, vt.wheel_count, vt.rider_capacity)
       IS DISTINCT FROM
       (EXCLUDED.form_factor, EXCLUDED.propulsion_type, EXCLUDED.name, EXCLUDED.make, EXCLUDED.model, EXCLUDED.color, EXCLUDED.max_range_meters,
        EXCLUDED.max_speed_kph, EXCLUDED.rated_power_w, EXCLUDED.wheel_count, EXCLUDED.rider_capacity)
RETURNING id, (xmax = 0) AS inserted;

-- name: AdminReplacePrices
-- The price lists of the zones $1 become exactly the rows ($2 zone, $3 vehicle type, $4 start price,
-- $5 per minute; minor units, VAT included): other types' prices of those zones go, and a price
-- that is already so is not rewritten (a write bumps the zone's vehicle-list version, 000140).
WITH input AS (
  SELECT * FROM unnest($2::text[], $3::text[], $4::int[], $5::int[]) AS t (zone_id, vehicle_type_id, start_price, price_per_minute)
), gone AS (
  DELETE FROM pricing p
   WHERE p.zone_id = ANY ($1::text[])
     AND NOT EXISTS (SELECT 1 FROM input i WHERE i.zone_id = p.zone_id AND i.vehicle_type_id = p.vehicle_type_id)
)
INSERT INTO pricing AS p (zone_id, vehicle_type_id, start_price, price_per_minute, updated_at)
SELECT zone_id, vehicle_type_id, start_price, price_per_minute, $6 FROM input
ON CONFLICT (zone_id, vehicle_type_id) DO UPDATE SET
  start_price = EXCLUDED.start_price, price_per_minute = EXCLUDED.price_per_minute, updated_at = EXCLUDED.updated_at
 WHERE (p.start_price, p.price_per_minute) IS DISTINCT FROM (EXCLUDED.start_price, EXCLUDED.price_per_minute);

-- name: AdminSetPrices
-- Sets the prices of some vehicle types of one zone ($1), leaving its other prices; removes the
-- types $6. Arrays as in AdminReplacePrices.
WITH input AS (
  SELECT * FROM unnest($2::text[], $3::int[], $4::int[]) AS t (vehicle_type_id, start_price, price_per_minute)
), gone AS (
  DELETE FROM pricing WHERE zone_id = $1 AND vehicle_type_id = ANY ($6::text[])
)
INSERT INTO pricing AS p (zone_id, vehicle_type_id, start_price, price_per_minute, updated_at)
SELECT $1, vehicle_type_id, start_price, price_per_minute, $5 FROM input
ON CONFLICT (zone_id, vehicle_type_id) DO UPDATE SET
  start_price = EXCLUDED.start_price, price_per_minute = EXCLUDED.price_per_minute, updated_at = EXCLUDED.updated_at
 WHERE (p.start_price, p.price_per_minute) IS DISTINCT FROM (EXCLUDED.start_price, EXCLUDED.price_per_minute);

-- name: AdminZonePrices
SELECT p.vehicle_type_id, p.start_price, p.price_per_minute, p.updated_at, z.currency, z.vat_rate
  FROM zones z JOIN pricing p ON p.zone_id = z.id
 WHERE z.id = $1
 ORDER BY p.vehicle_type_id;

-- name: AdminUnpricedFleet
-- Per zone of $1: vehicles of a type the zone has no price for (they are neither listed nor
-- rentable), and whether the zone has any price at all.
SELECT z.id AS zone_id,
       EXISTS (SELECT 1 FROM pricing p WHERE p.zone_id = z.id) AS has_prices,
       coalesce(u.types, '{}') AS types, coalesce(u.counts, '{}') AS counts
  FROM zones z
  LEFT JOIN LATERAL (
    SELECT array_agg(v.vehicle_type_id ORDER BY v.vehicle_type_id) AS types, array_agg(v.n ORDER BY v.vehicle_type_id) AS counts
      FROM (SELECT vehicle_type_id, count(*)::int AS n FROM vehicles
             WHERE zone_id = z.id
               AND NOT EXISTS (SELECT 1 FROM pricing p WHERE p.zone_id = z.id AND p.vehicle_type_id = vehicles.vehicle_type_id)
             GROUP BY vehicle_type_id) v
  ) u ON true
 WHERE z.id = ANY ($1::text[])
 ORDER BY z.id;

-- name: AdminLockCatchup
-- Held by an import that may move zones' first hour earlier, until it commits: waits for the
-- publisher's catch-up scans in flight and holds new ones (PubCatchupScan writes feed_catchup).
-- Taken first in the transaction: a scan inserting a mark checks its zone's row (foreign key), so
-- locking the zones first and then this table could deadlock with one.
LOCK TABLE feed_catchup IN SHARE ROW EXCLUSIVE MODE;

-- name: AdminMoveZoneStart
-- Existing zones ($1) start operating earlier ($2): their hourly files are due from then, and the
-- history catch-up marks move back so the publisher scans the new hours.
WITH moved AS (
  UPDATE zones z SET created_at = t.since
    FROM unnest($1::text[], $2::timestamptz[]) AS t (id, since)
   WHERE z.id = t.id AND t.since < z.created_at
  RETURNING z.id, t.since
)
UPDATE feed_catchup c SET complete_before = (m.since AT TIME ZONE 'UTC')
  FROM moved m
 WHERE c.zone_id = m.id AND c.complete_before > (m.since AT TIME ZONE 'UTC');

-- name: AdminGeometryProblem
SELECT CASE WHEN ST_IsValid(g) THEN NULL ELSE ST_IsValidReason(g) END AS problem
  FROM (SELECT ST_SetSRID(ST_GeomFromGeoJSON($1), 4326) AS g) s;

-- name: AdminSetVehicleStatus
UPDATE vehicles SET status = $2
 WHERE (id::text = $1 OR code = upper($1)) AND status <> 'riding'
RETURNING id, code, status;

-- name: AdminFindVehicle
SELECT id, code, status FROM vehicles WHERE id::text = $1 OR code = upper($1);

-- name: AdminListZoneIds
SELECT id FROM zones ORDER BY id;
