-- GBFS 2.2 / 3.0 snapshots (publisher/feeds/gbfs). The builders' reads take the zone ids as a text[]
-- (a per-zone job passes one); the per-zone and per-scope build state is migration 000150's.

-- name: GbfsZones
-- $1 text[]: zone ids, or NULL for every zone
-- global_*: the rule outside every area, from the zone-rules decision (zone_global_rule, 000081):
-- one row per existing zone, each permission computed from NOT NULL columns, so never null.
-- not null: global_start, global_end, global_through, global_station_parking
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
-- zone_id: both branches of the UNION read a NOT NULL zone_id.
-- not null: zone_id
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
-- precedence and the rule_* permissions come from the zone-rules decision (zone_area_order, migration 000340: by type, zone_area_precedence, the city's first within a type;
-- zone_area_rule, migration 000081) the rental engine enforces.
-- Never null: the GeoJSON of a NOT NULL geometry; the precedence of a type areas' CHECK allows
-- (zone_area_precedence lists them all); zone_area_rule's permissions of NOT NULL inputs. lat/lon
-- can be: ST_PointOnSurface of an empty geometry has no coordinates.
-- not null: geometry, precedence, rule_start, rule_end, rule_through, rule_station_parking
SELECT a.id, a.zone_id, a.name, a.area_type, a.vehicle_types, a.capacity, a.max_speed_kph, a.created_at,
       ST_AsGeoJSON(a.geom, 7)::json AS geometry,
       ST_Y(ST_PointOnSurface(a.geom)) AS lat, ST_X(ST_PointOnSurface(a.geom)) AS lon,
       zone_area_order(a.source, a.area_type) AS precedence, a.source,
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

-- name: GbfsVehicleBlocks
-- Vehicles a rider could see on a map: ready, or booked (reserved). Riding and unavailable vehicles
-- are never listed. station_id: the parking spot the vehicle stands in, if any (PostGIS containment),
-- found by one spatial join of the zones' parking spots with their listed vehicles (the GiST index of
-- vehicles.location per spot), not by a lookup per vehicle; the first spot by id when spots overlap.
-- One row per zone and vehicle block (publisher/feeds/gbfs/vehicles.ts: the first hex digit of the
-- GBFS id): its vehicles as one JSON array of arrays, ordered by GBFS id, each
-- [gbfs_id, vehicle_type_id, status, battery_percent, last_seen_ms, lat, lon, max_range_meters,
-- station_id] (last_seen_ms: epoch milliseconds; lat, lon, last_seen_ms of NOT NULL columns), and the
-- sha256 (base64) of that text. Postgres writes the arrays in C and Node parses them with JSON.parse,
-- where ten columns of a thousand rows through the driver's row parser took most of a build's load.
-- A zone is ~1,000 vehicles and is loaded at every build in which one of them changed, mostly one or
-- two of its blocks: $2, $3, $4 (zone, block, sha256, side by side) are the blocks the caller holds
-- parsed, and a block whose text still has that digest comes without its text (vehicles NULL), so
-- only the blocks that changed cross the wire and are parsed. A block without listed vehicles has
-- no row.
-- not null: zone_id, block, sha256
SELECT b.zone_id, b.block, b.sha256,
       CASE WHEN k.sha256 IS NOT DISTINCT FROM b.sha256 THEN NULL ELSE b.vehicles END AS vehicles
  FROM (SELECT l.zone_id, l.block, l.vehicles, encode(sha256(convert_to(l.vehicles, 'UTF8')), 'base64') AS sha256
          FROM (SELECT v.zone_id, left(v.gbfs_id::text, 1) AS block,
                       json_agg(json_build_array(v.gbfs_id, v.vehicle_type_id, v.status, v.battery_percent,
                                                 (extract(epoch FROM v.last_seen_at) * 1000)::float8,
                                                 ST_Y(v.location), ST_X(v.location), t.max_range_meters, s.station_id)
                                ORDER BY v.gbfs_id)::text AS vehicles
                  FROM vehicles v
                  JOIN vehicle_types t ON t.id = v.vehicle_type_id
                  LEFT JOIN (
                        SELECT DISTINCT ON (sv.id) sv.id, a.id AS station_id
                          FROM areas a
                          JOIN vehicles sv ON sv.zone_id = a.zone_id AND ST_Covers(a.geom, sv.location)
                         WHERE a.zone_id = ANY ($1::text[]) AND a.area_type = 'parking-spot' AND sv.status IN ('ready', 'booked')
                         ORDER BY sv.id, a.id) s ON s.id = v.id
                 WHERE v.zone_id = ANY ($1::text[]) AND v.status IN ('ready', 'booked')
                 GROUP BY v.zone_id, left(v.gbfs_id::text, 1)) l) b
  LEFT JOIN unnest($2::text[], $3::text[], $4::text[]) AS k(zone_id, block, sha256)
         ON k.zone_id = b.zone_id AND k.block = b.block
 ORDER BY b.zone_id, b.block;

-- name: GbfsFeedClientScopes
-- The distinct region scopes of GBFS 2.2: one per (role, zones) among clients that are not revoked.
SELECT DISTINCT role, zones FROM feed_clients WHERE revoked_at IS NULL;

-- name: GbfsDueZones
-- The publisher's tick ($1 now, $2 STATUS_REFRESH_SECONDS): the zones to hand a per-zone job, i.e.
-- never built, their GBFS input moved since their build (migration 000150's counters), their status
-- files due for the ttl refresh, or their hourly rebuild due. One scan of three small tables.
SELECT z.id
  FROM zones z
  LEFT JOIN zone_versions zv ON zv.zone_id = z.id
  LEFT JOIN gbfs_zone_builds b ON b.zone_id = z.id
 WHERE b.zone_id IS NULL
    OR b.status_token <> COALESCE(zv.version + zv.gbfs_static + zv.gbfs_status, 0)
    OR b.static_token <> COALESCE(zv.gbfs_static, 0)
    OR b.status_written_at <= $1::timestamptz - $2::float8 * interval '1 second'
    OR b.rebuild_due_at <= $1::timestamptz
 ORDER BY z.id;

-- name: GbfsZoneStates
-- A batch of per-zone jobs' first read, under the zones' locks: the counters now (read before the
-- data, so that a build is never labelled newer than what it shows), the zones' sleep windows, and
-- their last builds (NULL columns: never built). One row per zone of $1 that exists.
SELECT z.id AS zone_id, z.timezone, z.sleep_windows,
       COALESCE(zv.version + zv.gbfs_static + zv.gbfs_status, 0) AS status_token,
       COALESCE(zv.gbfs_static, 0) AS static_token,
       b.status_token AS built_status_token, b.static_token AS built_static_token, b.sleep_key,
       b.status_written_at, b.rebuild_due_at
  FROM zones z
  LEFT JOIN zone_versions zv ON zv.zone_id = z.id
  LEFT JOIN gbfs_zone_builds b ON b.zone_id = z.id
 WHERE z.id = ANY ($1::text[]);

-- name: GbfsZoneBuildsUpsert
-- The build rows of a batch of zones, as their builds decided them from the rows they read under the
-- zones' locks (GbfsZoneStates): $1 zones, $2 status tokens, $3 static tokens, $4 sleep keys,
-- $5 status_written_at, $6 rebuild_due_at, in step; $7 now.
INSERT INTO gbfs_zone_builds AS b (zone_id, status_token, static_token, sleep_key, status_written_at, rebuild_due_at, built_at)
SELECT u.zone_id, u.status_token, u.static_token, u.sleep_key, u.status_written_at, u.rebuild_due_at, $7::timestamptz
  FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[], $6::timestamptz[])
       AS u (zone_id, status_token, static_token, sleep_key, status_written_at, rebuild_due_at)
ON CONFLICT (zone_id) DO UPDATE
   SET status_token = EXCLUDED.status_token, static_token = EXCLUDED.static_token, sleep_key = EXCLUDED.sleep_key,
       status_written_at = EXCLUDED.status_written_at, rebuild_due_at = EXCLUDED.rebuild_due_at, built_at = EXCLUDED.built_at;

-- name: GbfsZoneIds
-- The zones of a 2.2 scope that exist ($1 NULL: every zone), by id.
SELECT id FROM zones WHERE $1::text[] IS NULL OR id = ANY ($1::text[]) ORDER BY id;

-- name: GbfsZonePartsGet
-- Parts $2 of zones $1 in one snapshot. The body only where the caller does not hold the same
-- version already ($3, $4, $5: zone, part, sha256 of what it holds) and wants bodies ($6).
SELECT p.zone_id, p.part, p.sha256, p.crc32, p.length,
       CASE WHEN $6::boolean AND c.sha256 IS DISTINCT FROM p.sha256 THEN p.body END AS body
  FROM gbfs_zone_parts p
  LEFT JOIN unnest($3::text[], $4::text[], $5::text[]) AS c (zone_id, part, sha256) ON c.zone_id = p.zone_id AND c.part = p.part
 WHERE p.zone_id = ANY ($1::text[]) AND p.part = ANY ($2::text[]);

-- name: GbfsZonePartsUpsert
-- The parts that a batch of zone builds made ($1 zones, $2 names, $3 sha256, $4 crc32, $5 length,
-- $6 bodies, in step), in one statement: a ride changes four or five of a zone's parts, each a round
-- trip when they were stored one by one. A row back for each part whose content changed.
INSERT INTO gbfs_zone_parts AS p (zone_id, part, sha256, crc32, length, body)
SELECT u.zone_id, u.part, u.sha256, u.crc32, u.length, u.body
  FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bytea[]) AS u (zone_id, part, sha256, crc32, length, body)
ON CONFLICT (zone_id, part) DO UPDATE
   SET sha256 = EXCLUDED.sha256, crc32 = EXCLUDED.crc32, length = EXCLUDED.length, body = EXCLUDED.body
 WHERE p.sha256 <> EXCLUDED.sha256
RETURNING p.zone_id, p.part;

-- name: GbfsScopeBuilds
SELECT scope, inputs, status_written_at, rebuild_due_at FROM gbfs_scope_builds;

-- name: GbfsScopeBuildsGet
-- The build rows of the 2.2 scopes $1, as their builds read them under the locks of their files.
SELECT scope, inputs, status_written_at, rebuild_due_at FROM gbfs_scope_builds WHERE scope = ANY ($1::text[]);

-- name: GbfsScopeBuildsUpsert
-- The build rows of 2.2 scopes, as their builds decided them from the rows they read under the locks
-- (GbfsScopeBuildsGet): $1 scopes, $2 inputs, $3 status_written_at, $4 rebuild_due_at, in step.
INSERT INTO gbfs_scope_builds AS b (scope, inputs, status_written_at, rebuild_due_at)
SELECT u.scope, u.inputs, u.status_written_at, u.rebuild_due_at
  FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) AS u (scope, inputs, status_written_at, rebuild_due_at)
ON CONFLICT (scope) DO UPDATE
   SET inputs = EXCLUDED.inputs, status_written_at = EXCLUDED.status_written_at, rebuild_due_at = EXCLUDED.rebuild_due_at;
