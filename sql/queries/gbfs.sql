-- GBFS 2.2 / 3.0 snapshots (publisher/feeds/gbfs). Every query takes the zone ids as a text[] so
-- that one publish run reads each table once for every zone, whatever the number of zones.

-- name: GbfsZones
-- $1 text[]: zone ids, or NULL for every zone
-- global_*: the rule outside every area, from the zone-rules decision (zone_global_rule, 000081)
SELECT id, name, city, country, timezone, currency, language, parking_mode, max_speed_kph, reduced_speed_kph,
       min_battery_percent, sleep_windows, status, support_email, created_at, updated_at,
       g.ride_start_allowed AS global_start, g.ride_end_allowed AS global_end,
       g.ride_through_allowed AS global_through, g.station_parking AS global_station_parking
  FROM zones
 CROSS JOIN LATERAL zone_global_rule(zones.id) g
 WHERE $1::text[] IS NULL OR id = ANY ($1::text[])
 ORDER BY id;

-- name: GbfsVehicleTypes
-- The types a zone publishes: those it prices and those of its vehicles.
SELECT u.zone_id, t.id, t.form_factor, t.propulsion_type, t.name, t.make, t.model, t.color, t.max_range_meters,
       t.max_speed_kph, t.rated_power_w, t.wheel_count, t.rider_capacity
  FROM (SELECT zone_id, vehicle_type_id FROM pricing WHERE zone_id = ANY ($1::text[])
        UNION
        SELECT DISTINCT zone_id, vehicle_type_id FROM vehicles WHERE zone_id = ANY ($1::text[])) u
  JOIN vehicle_types t ON t.id = u.vehicle_type_id
 ORDER BY u.zone_id, t.id;

-- name: GbfsPricing
SELECT zone_id, vehicle_type_id, start_price, price_per_minute
  FROM pricing
 WHERE zone_id = ANY ($1::text[])
 ORDER BY zone_id, vehicle_type_id;

-- name: GbfsAreas
-- lat/lon: a point guaranteed inside the area (the centroid of a C-shaped area can lie outside).
-- precedence and the rule_* permissions come from the zone-rules decision (zone_area_precedence,
-- zone_area_rule, migration 000081) the rental engine enforces.
SELECT a.id, a.zone_id, a.name, a.area_type, a.vehicle_types, a.capacity, a.max_speed_kph, a.created_at,
       ST_AsGeoJSON(a.geom, 7)::json AS geometry,
       ST_Y(ST_PointOnSurface(a.geom)) AS lat, ST_X(ST_PointOnSurface(a.geom)) AS lon,
       zone_area_precedence(a.area_type) AS precedence,
       r.ride_start_allowed AS rule_start, r.ride_end_allowed AS rule_end,
       r.ride_through_allowed AS rule_through, r.station_parking AS rule_station_parking
  FROM areas a
  JOIN zones z ON z.id = a.zone_id
 CROSS JOIN LATERAL zone_area_rule(z.parking_mode, a.area_type) r
 WHERE a.zone_id = ANY ($1::text[])
 ORDER BY a.zone_id, a.name, a.id;

-- name: GbfsStations
-- Parking-spot areas without geometry, for the status files.
SELECT id, zone_id, created_at
  FROM areas
 WHERE zone_id = ANY ($1::text[]) AND area_type = 'parking-spot'
 ORDER BY zone_id, name, id;

-- name: GbfsVehicles
-- Vehicles a rider could see on a map: ready, or booked (reserved). Riding and unavailable vehicles
-- are never listed. station_id: the parking spot the vehicle stands in, if any (PostGIS containment).
SELECT v.zone_id, v.gbfs_id, v.vehicle_type_id, v.status, v.battery_percent, v.last_seen_at,
       ST_Y(v.location) AS lat, ST_X(v.location) AS lon, t.max_range_meters, s.id AS station_id
  FROM vehicles v
  JOIN vehicle_types t ON t.id = v.vehicle_type_id
  LEFT JOIN LATERAL (
        SELECT a.id FROM areas a
         WHERE a.zone_id = v.zone_id AND a.area_type = 'parking-spot' AND ST_Covers(a.geom, v.location)
         ORDER BY a.id LIMIT 1) s ON true
 WHERE v.zone_id = ANY ($1::text[]) AND v.status IN ('ready', 'booked')
 ORDER BY v.zone_id, v.gbfs_id;

-- name: GbfsFeedClientScopes
-- The distinct region scopes of GBFS 2.2: one per (role, zones) among clients that are not revoked.
SELECT DISTINCT role, zones FROM feed_clients WHERE revoked_at IS NULL;

-- name: GbfsSnapshotList
SELECT version, scope, file, sha256, last_updated, object_key FROM gbfs_snapshots;

-- name: GbfsSnapshotTryLock
-- One writer per snapshot file across every publisher process; the other skips (it would write the
-- same data).
SELECT pg_try_advisory_xact_lock(hashtext('gbfs:' || $1::text)) AS locked;

-- name: GbfsSnapshotGet
SELECT sha256, last_updated, object_key FROM gbfs_snapshots WHERE version = $1 AND scope = $2 AND file = $3;

-- name: GbfsSnapshotUpsert
INSERT INTO gbfs_snapshots (version, scope, file, object_key, sha256, bytes, ttl, last_updated, published_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (version, scope, file) DO UPDATE
   SET object_key = EXCLUDED.object_key, sha256 = EXCLUDED.sha256, bytes = EXCLUDED.bytes, ttl = EXCLUDED.ttl,
       last_updated = EXCLUDED.last_updated, published_at = EXCLUDED.published_at;
