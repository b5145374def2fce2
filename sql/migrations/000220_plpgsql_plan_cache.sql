-- The functions every rental write runs (through its triggers and the engine's queries) become
-- PL/pgSQL, with the same bodies and results. Postgres 15 plans a LANGUAGE sql function that it
-- cannot inline (data-modifying, record-returning, or not called in a FROM as a set) anew at every
-- call from a separate statement: pg_stat_statements under the partner bench (issue 25) showed
-- mark_feed_hours_dirty at 0.48-0.57 ms a call (three calls a rental), zone_rules_at's query at
-- 0.38 ms (every fleet event) and bump_zone_version's insert behind a 0.42 ms trigger statement,
-- most of it planning. PL/pgSQL prepares each statement once per connection and keeps the plan.

CREATE OR REPLACE FUNCTION mark_feed_hours_dirty(p_source text, p_zones text[], p_hours timestamp[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  WITH marked AS (
    UPDATE feed_publications p SET dirty = true
      FROM unnest(p_zones, p_hours) AS c (zone_id, hour)
      JOIN hourly_feeds f ON f.source = p_source
      LEFT JOIN history_retention r ON r.source = f.source
     WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.hour AND NOT p.dirty
       AND (c.hour AT TIME ZONE 'UTC') >= coalesce(r.dropped_before, '-infinity')
    RETURNING 1)
  SELECT count(*)::int INTO n FROM marked;
  RETURN n;
END $$;

CREATE OR REPLACE FUNCTION bump_zone_version(p_zone text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO zone_version_shards AS zv (zone_id, shard, version)
  SELECT p_zone, (txid_current() % 16)::smallint, 1 WHERE EXISTS (SELECT 1 FROM zones WHERE id = p_zone)
  ON CONFLICT (zone_id, shard) DO UPDATE SET version = zv.version + 1;
END $$;

CREATE OR REPLACE FUNCTION bump_zone_gbfs(p_zone text, p_static boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO zone_version_shards AS zv (zone_id, shard, gbfs_static, gbfs_status)
  SELECT p_zone, (txid_current() % 16)::smallint, p_static::int, (NOT p_static)::int WHERE EXISTS (SELECT 1 FROM zones WHERE id = p_zone)
  ON CONFLICT (zone_id, shard) DO UPDATE
     SET gbfs_static = zv.gbfs_static + p_static::int, gbfs_status = zv.gbfs_status + (NOT p_static)::int;
END $$;

-- 000081's bodies. With no row (an unknown zone) every OUT value stays NULL, as the SQL function
-- answered.
CREATE OR REPLACE FUNCTION zone_global_rule(p_zone text,
                                            OUT ride_start_allowed boolean, OUT ride_end_allowed boolean,
                                            OUT ride_through_allowed boolean, OUT station_parking boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  SELECT o.ride_start_allowed AND NOT h.has_ops, o.ride_end_allowed AND NOT h.has_ops,
         o.ride_through_allowed, o.station_parking AND NOT h.has_ops
    INTO ride_start_allowed, ride_end_allowed, ride_through_allowed, station_parking
    FROM zones z
   CROSS JOIN LATERAL zone_area_rule(z.parking_mode, 'operations') o
   CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = z.id AND a.area_type = 'operations') AS has_ops) h
   WHERE z.id = p_zone;
END $$;

CREATE OR REPLACE FUNCTION zone_rules_at(p_zone text, p_lng float8, p_lat float8, p_vehicle_type text,
                                         OUT ride_start_allowed boolean, OUT ride_end_allowed boolean,
                                         OUT ride_through_allowed boolean, OUT station_parking boolean, OUT area_type text)
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  WITH hit AS (
    SELECT a.area_type
      FROM areas a
      LEFT JOIN vehicle_types vt ON vt.id = p_vehicle_type
     WHERE a.zone_id = p_zone
       AND ST_Intersects(a.geom, ST_SetSRID(ST_MakePoint(p_lng, p_lat), 4326))
       AND (cardinality(a.vehicle_types) = 0 OR p_vehicle_type = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))
     ORDER BY zone_area_precedence(a.area_type)
     LIMIT 1
  )
  SELECT r.ride_start_allowed, r.ride_end_allowed, r.ride_through_allowed, r.station_parking, hit.area_type
    INTO ride_start_allowed, ride_end_allowed, ride_through_allowed, station_parking, area_type
    FROM zones z
    LEFT JOIN hit ON true
   CROSS JOIN LATERAL zone_area_rule(z.parking_mode, hit.area_type) ar
   CROSS JOIN LATERAL zone_global_rule(z.id) g
   CROSS JOIN LATERAL (SELECT CASE WHEN hit.area_type IS NULL THEN g.ride_start_allowed ELSE ar.ride_start_allowed END AS ride_start_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.ride_end_allowed ELSE ar.ride_end_allowed END AS ride_end_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.ride_through_allowed ELSE ar.ride_through_allowed END AS ride_through_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.station_parking ELSE ar.station_parking END AS station_parking) r
   WHERE z.id = p_zone;
END $$;

CREATE OR REPLACE FUNCTION ride_distance_m(p_trip uuid, p_start geometry, p_end geometry) RETURNS integer
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  RETURN (SELECT COALESCE(ceil(ST_Length(ST_MakeLine(p.geom ORDER BY p.ord, p.ts)::geography)), 0)::int
            FROM (SELECT p_start AS geom, 0 AS ord, NULL::timestamptz AS ts WHERE p_start IS NOT NULL
                  UNION ALL
                  SELECT t.location, 1, t.ts FROM telemetry t WHERE t.trip_id = p_trip
                  UNION ALL
                  SELECT p_end, 2, NULL WHERE p_end IS NOT NULL) p);
END $$;
