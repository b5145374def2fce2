-- Sim: the fleet simulator and the demo seed (ops/sim, ops/seed). Bulk rows go through COPY;
-- these are the reads and the set-based writes around it.

-- name: SimZones
-- boundary_geojson: of the NOT NULL boundary.
-- not null: boundary_geojson
SELECT id, timezone, currency, vat_rate, parking_mode, min_battery_percent, sleep_windows,
       ST_AsGeoJSON(boundary) AS boundary_geojson
  FROM zones
 WHERE $1::text[] IS NULL OR id = ANY($1::text[])
 ORDER BY id;

-- name: SimAreas
-- Every area, plus one synthetic 'operations-union' row per zone: where vehicles may be at all.
-- Both branches read NOT NULL columns (or a literal); geojson: of a NOT NULL geometry, or of the
-- union of a group's (a group has rows).
-- not null: zone_id, area_type, geojson
SELECT zone_id, area_type, capacity, ST_AsGeoJSON(geom) AS geojson
  FROM areas WHERE zone_id = ANY($1::text[])
UNION ALL
SELECT zone_id, 'operations-union', NULL, ST_AsGeoJSON(ST_Multi(ST_Union(geom)))
  FROM areas WHERE zone_id = ANY($1::text[]) AND area_type = 'operations'
 GROUP BY zone_id
ORDER BY 1, 2, 4;

-- name: SimPricing
SELECT zone_id, vehicle_type_id, start_price, price_per_minute FROM pricing WHERE zone_id = ANY($1::text[]);

-- name: SimVehicleTypes
SELECT id, form_factor, max_range_meters FROM vehicle_types ORDER BY id;

-- name: SimVehicleCount
SELECT count(*)::int AS n FROM vehicles;

-- name: SimZoneVehicleCount
-- A zone's fleet: the history simulator puts vehicles into service up to the number asked for.
SELECT count(*)::int AS n FROM vehicles WHERE zone_id = $1;

-- name: SimInsertVehicles
-- New vehicles put into service: the vehicle row (available) and its provider_drop_off event, in one
-- statement so a vehicle never exists without the event that explains its state. Codes that are
-- already taken are skipped (ON CONFLICT) together with their event.
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[], $6::float8[], $7::float8[], $8::text[], $9::text[], $10::uuid[], $11::uuid[])
    AS t(id, code, zone_id, vehicle_type_id, battery, lng, lat, plate, plate_id, event_id, gbfs_id)
), v AS (
  INSERT INTO vehicles (id, code, zone_id, vehicle_type_id, status, mds_state, locked, battery_percent, location,
                        last_seen_at, last_moved_at, gbfs_id, license_plate, license_plate_id, created_at)
  SELECT id, code, zone_id, vehicle_type_id, 'ready', 'available', true, battery, ST_SetSRID(ST_MakePoint(lng, lat), 4326),
         $12, $12, gbfs_id, plate, plate_id, $12
    FROM input ORDER BY code
  ON CONFLICT (code) DO NOTHING
  RETURNING id
)
INSERT INTO events (event_id, device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, recorded_at)
SELECT i.event_id, i.id, i.zone_id, ARRAY['provider_drop_off'], 'available', $12, ST_SetSRID(ST_MakePoint(i.lng, i.lat), 4326), i.battery, $12
  FROM input i JOIN v ON v.id = i.id
RETURNING device_id;

-- name: SimInsertUsers
INSERT INTO users (id, partner_id, email, external_id, created_at, updated_at)
SELECT id, $2, email, ext, $5, $5 FROM unnest($1::uuid[], $3::text[], $4::text[]) AS t(id, email, ext)
ON CONFLICT (id) DO NOTHING;

-- name: SimPartners
-- The partners whose users ride in the simulated history of the demo database: rental and MaaS
-- partners, but not the live simulator's own ($1, ops/sim/tenant.ts), which rides only live there.
-- Elsewhere the simulator's own tenant rides instead (ops/sim/history.ts), never a real partner's users.
SELECT id, name, kind, trip_type FROM partners WHERE kind IN ('rental', 'maas') AND name <> ALL($1::text[]) ORDER BY name;

-- name: SimUsers
-- Users that can ride: not erased, not blocked; with when they are free again and how many rides they had.
-- external_id: users' CHECK sets it on every user not erased.
-- not null: external_id
SELECT u.id, u.partner_id, u.external_id,
       (SELECT max(COALESCE(r.ended_at, 'infinity'::timestamptz)) FROM rentals r WHERE r.user_id = u.id) AS busy_until,
       (SELECT count(*)::int FROM rentals r WHERE r.user_id = u.id) AS rides
  FROM users u
 WHERE u.partner_id = ANY($1::uuid[]) AND u.deleted_at IS NULL AND NOT u.blocked
 ORDER BY u.partner_id, u.id;

-- name: SimLockVehicles
-- The simulated vehicles with their state and their last event/rental; locked for the whole run so
-- that live rentals cannot interleave with the history being written.
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT v.id, v.code, v.zone_id, v.vehicle_type_id, v.mds_state, v.battery_percent,
       ST_X(v.location) AS lng, ST_Y(v.location) AS lat, v.last_seen_at, v.last_moved_at,
       e.ts AS last_event_at, e.event_types AS last_event_types,
       (SELECT max(r.ended_at) FROM rentals r WHERE r.vehicle_id = v.id) AS last_rental_end,
       EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING') AS running,
       EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING') AS pending_booking
  FROM vehicles v
  LEFT JOIN LATERAL (SELECT ts, event_types FROM events WHERE device_id = v.id ORDER BY ts DESC LIMIT 1) e ON true
 WHERE v.zone_id = ANY($1::text[])
 ORDER BY v.code
 LIMIT $2
   FOR UPDATE OF v;

-- name: SimUpdateVehicles
-- Final state of every simulated vehicle, consistent with its last event.
UPDATE vehicles v
   SET mds_state = t.mds_state, status = t.status, locked = t.locked, battery_percent = t.battery,
       location = ST_SetSRID(ST_MakePoint(t.lng, t.lat), 4326), last_seen_at = t.seen, last_moved_at = t.moved,
       gbfs_id = CASE WHEN t.rotate THEN t.gbfs_id ELSE v.gbfs_id END
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bool[], $5::int[], $6::float8[], $7::float8[], $8::timestamptz[], $9::timestamptz[], $10::bool[], $11::uuid[])
    AS t(id, mds_state, status, locked, battery, lng, lat, seen, moved, rotate, gbfs_id)
 WHERE v.id = t.id;

-- name: SimSeedLock
SELECT pg_advisory_xact_lock(hashtext('seed:demo'));

-- name: SimSeedZonesExist
SELECT id FROM zones WHERE id = ANY($1::text[]);

-- name: SimSeedInsertZone
INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, language, parking_mode, licence_verification_required,
                   max_speed_kph, reduced_speed_kph, min_required_rides, sleep_windows, support_email, boundary, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15, ST_GeomFromText($16, 4326), $17, $17);

-- name: SimSeedInsertArea
INSERT INTO areas (id, zone_id, name, area_type, vehicle_types, geom, capacity, max_speed_kph, created_at)
VALUES ($1, $2, $3, $4, $5::text[], ST_GeomFromText($6, 4326), $7, $8, $9);

-- name: SimSeedInsertVehicleType
INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, color, max_range_meters, max_speed_kph, rated_power_w)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (id) DO NOTHING;

-- name: SimSeedInsertPricing
INSERT INTO pricing (zone_id, vehicle_type_id, start_price, price_per_minute, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (zone_id, vehicle_type_id) DO NOTHING;

-- name: SimSeedUpsertPartner
-- Returns the partner, created or already there (same name).
-- Both UNION branches read partners.id (NOT NULL) and a literal.
-- not null: id, created
WITH ins AS (
  INSERT INTO partners (id, name, kind, trip_type, created_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (name) DO NOTHING RETURNING id
)
SELECT id, true AS created FROM ins
UNION ALL
SELECT id, false FROM partners WHERE name = $2 AND NOT EXISTS (SELECT 1 FROM ins);

-- name: SimSeedApiKeyExists
SELECT id FROM api_keys WHERE key_hash = $1;

-- name: SimSeedFeedClientExists
SELECT client_id FROM feed_clients WHERE client_id = $1;

-- name: SimSeedUserCount
-- A partner's users: the demo seed's pools and the simulator's own tenant (tenant.ts, history.ts) are topped up to a size.
SELECT count(*)::int AS n FROM users WHERE partner_id = $1;

-- name: SimLiveCandidates
-- Ready vehicles of a zone that a rider could take (shuffled by a salt so that picks spread out).
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT v.id, v.vehicle_type_id, v.battery_percent, ST_X(v.location) AS lng, ST_Y(v.location) AS lat
  FROM vehicles v JOIN zones z ON z.id = v.zone_id
 WHERE v.zone_id = $1 AND v.status = 'ready' AND v.mds_state = 'available' AND v.battery_percent >= z.min_battery_percent + 10
   AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING')
   AND NOT EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING')
 ORDER BY md5(v.id::text || $2)
 LIMIT $3;

-- name: SimLiveTenant
-- The live simulator's partners by name, and whether someone holds a key of theirs (then they are not its own).
SELECT p.id, p.name, p.kind, p.trip_type, EXISTS (SELECT 1 FROM api_keys k WHERE k.partner_id = p.id) AS has_keys
  FROM partners p
 WHERE p.name = ANY($1::text[])
 ORDER BY p.name;

-- name: SimLiveZoneLoad
-- A zone's fleet and how many of its vehicles are on a ride now (any partner's).
SELECT (SELECT count(*)::int FROM vehicles WHERE zone_id = $1) AS fleet,
       (SELECT count(*)::int FROM rentals WHERE zone_id = $1 AND state = 'RUNNING') AS riding;

-- name: SimLiveZoneClock
-- What a tick reads of a zone to know whether it sleeps (lib/domain/zones.ts isSleeping).
SELECT timezone, sleep_windows, status FROM zones WHERE id = $1;

-- name: SimLiveVehicleBattery
-- A vehicle's battery after a ride: below the zone's minimum it reports battery_low on the next tick.
SELECT battery_percent FROM vehicles WHERE id = $1;

-- name: SimLiveAvailableVehicle
-- A vehicle still available (no rider or operator took it since) with its battery and place.
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT battery_percent, ST_X(location) AS lng, ST_Y(location) AS lat FROM vehicles WHERE id = $1 AND mds_state = 'available';

-- name: SimLiveUsers
-- Users of a partner (the live simulator's own) without a running rental.
SELECT u.id FROM users u
 WHERE u.partner_id = $1 AND u.deleted_at IS NULL AND NOT u.blocked
   AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.user_id = u.id AND r.state = 'RUNNING')
 ORDER BY md5(u.id::text || $2)
 LIMIT $3;

-- name: SimLiveOrphanRentals
-- Simulator rentals left running by a previous process (their rides are no longer driven).
SELECT id FROM rentals WHERE state = 'RUNNING' AND source = 'simulator' ORDER BY started_at LIMIT 500;

-- name: SimLiveOutOfService
-- Vehicles waiting for the operator (charging, maintenance, rebalancing, lost contact) since before $2.
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT v.id, v.zone_id, v.mds_state, v.battery_percent, ST_X(v.location) AS lng, ST_Y(v.location) AS lat, e.event_types AS last_types
  FROM vehicles v
  LEFT JOIN LATERAL (SELECT event_types, ts FROM events WHERE device_id = v.id ORDER BY ts DESC LIMIT 1) e ON true
 WHERE v.zone_id = $1 AND v.mds_state IN ('non_operational', 'removed', 'non_contactable', 'missing')
   AND COALESCE(e.ts, v.last_seen_at) < $2
   AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING')
 ORDER BY v.id
 LIMIT $3;

-- name: SimLiveSetVehicle
-- Partner-API status and battery after an operator action (the MDS state is set by recordEvent).
UPDATE vehicles SET status = $2, battery_percent = $3, last_seen_at = GREATEST(last_seen_at, $4) WHERE id = $1;

-- name: SimWindowSimulated
-- Whether bulk-simulated rides already start inside [$2, $3) in the zones $1: simulating the window
-- again would add a second history on top of the first, so the simulator refuses.
SELECT EXISTS (SELECT 1 FROM rentals WHERE source = 'simulator' AND zone_id = ANY ($1::text[])
                  AND started_at >= $2 AND started_at < $3) AS simulated;

-- name: SimStatementTimeout
-- The history transaction's statement timeout ($1, as set_config takes it: milliseconds as text),
-- for the rest of the transaction only: the ops long-work limit instead of the pool's.
SELECT set_config('statement_timeout', $1, true);

-- name: SimVehiclesReach
-- Why a simulation wrote nothing (bin/ops.ts simulate): the earliest last event among the vehicles it
-- took (the first $2 of each zone in $1 by code; NULL when none of them has one), and the most
-- vehicles one of these zones has (NULL when they have none).
SELECT min(last) AS last, max(n)::int AS most FROM (
  SELECT (SELECT max(e.ts) FROM events e WHERE e.device_id = v.id) AS last,
         row_number() OVER (PARTITION BY v.zone_id ORDER BY v.code) AS rank, count(*) OVER (PARTITION BY v.zone_id) AS n
    FROM vehicles v WHERE v.zone_id = ANY ($1::text[])) z
 WHERE rank <= $2;

-- name: SimSeedDatabaseState
-- Whether the demo seed may write here (ops/seed): the demo mark (migration 000180), and what the
-- database holds that is not the demo's: partners other than the demo's and the live simulator's
-- own ($1, neither holds a credential of anyone else), feed clients other than the demo's ($2),
-- zones other than the demo's ($3). Counts, and the first few names for the message.
SELECT EXISTS (SELECT 1 FROM database_marks WHERE mark = 'demo') AS demo,
       (SELECT count(*)::int FROM partners WHERE name <> ALL ($1::text[])) AS partners,
       ARRAY(SELECT name FROM partners WHERE name <> ALL ($1::text[]) ORDER BY name LIMIT 3) AS partner_names,
       (SELECT count(*)::int FROM feed_clients WHERE client_id <> ALL ($2::text[])) AS clients,
       ARRAY(SELECT client_id FROM feed_clients WHERE client_id <> ALL ($2::text[]) ORDER BY client_id LIMIT 3) AS client_names,
       (SELECT count(*)::int FROM zones WHERE id <> ALL ($3::text[])) AS zones,
       ARRAY(SELECT id FROM zones WHERE id <> ALL ($3::text[]) ORDER BY id LIMIT 3) AS zone_names;

-- name: SimSeedMarkDemo
INSERT INTO database_marks (mark, set_at) VALUES ('demo', $1) ON CONFLICT (mark) DO NOTHING;

-- name: SimDatabaseIsDemo
-- Which partners ride in bulk history (ops/sim/history.ts): the demo's on a demo database, else the
-- simulator's own tenant.
SELECT EXISTS (SELECT 1 FROM database_marks WHERE mark = 'demo') AS demo;

-- name: SimVehicleCodes
-- Every vehicle's code: the demo fleet names its vehicles by them (ops/sim/mqtt-fleet.ts).
SELECT id, code FROM vehicles ORDER BY code;
