-- Source queries of the MDS / insurance record mappers (lib/feeds/mds/sources.ts). Times come out as
-- integer milliseconds and points as lat/lng so that the mappers do no parsing. Hours are passed as
-- text ('YYYY-MM-DDTHH:00:00') and compared with the generated UTC-hour columns, so that the process
-- time zone never matters.

-- name: MdsTripsOfHour
-- start_ms … recorded_ms: of trips' NOT NULL start_time, end_time, start_location, end_location, recorded_at.
-- not null: start_ms, end_ms, start_lat, start_lng, end_lat, end_lng, recorded_ms
SELECT t.trip_id, t.device_id, v.code AS vehicle_code, v.license_plate, v.license_plate_id,
       vt.form_factor, vt.propulsion_type, t.trip_type,
       (extract(epoch FROM t.start_time) * 1000)::int8 AS start_ms,
       (extract(epoch FROM t.end_time) * 1000)::int8 AS end_ms,
       ST_Y(t.start_location) AS start_lat, ST_X(t.start_location) AS start_lng,
       ST_Y(t.end_location) AS end_lat, ST_X(t.end_location) AS end_lng,
       t.distance_m, t.duration_s, t.is_group_ride, t.ride_type, t.user_ride_count,
       z.city, z.country, (extract(epoch FROM t.recorded_at) * 1000)::int8 AS recorded_ms
  FROM trips t
  JOIN vehicles v ON v.id = t.device_id
  JOIN vehicle_types vt ON vt.id = t.vehicle_type_id
  JOIN zones z ON z.id = t.zone_id
 WHERE t.zone_id = $1 AND t.end_hour = $2::timestamp
   -- the same hour on the partition key, so only the hour's daily partition is read (000101)
   AND t.end_time >= ($2::timestamp AT TIME ZONE 'UTC') AND t.end_time < (($2::timestamp + interval '1 hour') AT TIME ZONE 'UTC')
 ORDER BY t.end_time, t.trip_id;

-- name: MdsEventsOfHour
-- ts_ms, lat, lng, recorded_ms: of events' NOT NULL ts, location, recorded_at.
-- not null: ts_ms, lat, lng, recorded_ms
SELECT e.event_id, e.device_id, e.event_types, e.vehicle_state,
       (extract(epoch FROM e.ts) * 1000)::int8 AS ts_ms,
       ST_Y(e.location) AS lat, ST_X(e.location) AS lng, e.battery_percent, e.trip_ids::text[] AS trip_ids,
       v.code AS vehicle_code, vt.form_factor, vt.propulsion_type,
       (extract(epoch FROM e.recorded_at) * 1000)::int8 AS recorded_ms
  FROM events e
  JOIN vehicles v ON v.id = e.device_id
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
 WHERE e.zone_id = $1 AND e.hour = $2::timestamp
   -- the same hour on the partition key, so only the hour's daily partition is read (000101)
   AND e.ts >= ($2::timestamp AT TIME ZONE 'UTC') AND e.ts < (($2::timestamp + interval '1 hour') AT TIME ZONE 'UTC')
 ORDER BY e.ts, e.event_id;

-- name: MdsEventsCutoff
-- The cut-off of a paged event window (api/feeds/paging.ts), in the clock recorded_at is written
-- with (now(), the writing transaction's start): the start of the oldest transaction still open in
-- this database, or this statement's time when none is. Every event recorded before it was
-- committed (or rolled back) by now, and every event of a transaction still open is recorded at or
-- after it, so the events a traversal serves (recorded_at < cut-off) are fixed at its first page.
-- Transactions open for more than ten minutes (a forgotten psql session, say) are not waited for:
-- the platform's own writers finish in seconds, and one idle session must not freeze every window.
-- Sessions of other roles are visible here only with pg_read_all_stats (docs/feeds-access.md).
-- now_us: least() skips a null min (no other transaction), and statement_timestamp() is never null.
-- not null: now_us
SELECT (extract(epoch FROM least(statement_timestamp(),
                                 (SELECT min(a.xact_start) FROM pg_stat_activity a
                                   WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                                     AND a.xact_start > statement_timestamp() - interval '10 minutes')))
        * 1000000)::int8 AS now_us;

-- name: MdsEventsPage
-- One page of a zone's window [$2, $3) in (ts, event_id) order: after the position ($4 ts in µs,
-- $5 event id), only events recorded before the cut-off ($6, µs), at most $7, skipping $8 first (0
-- but for a page[number] page whose start is not known: api/feeds/paging.ts). The row comparison is an
-- index condition on events (zone_id, ts, event_id): each page is an ordered range scan with a LIMIT.
-- ts_ms, ts_us, lat, lng, recorded_ms: of events' NOT NULL ts, location, recorded_at.
-- not null: ts_ms, ts_us, lat, lng, recorded_ms
SELECT e.event_id, e.device_id, e.event_types, e.vehicle_state,
       (extract(epoch FROM e.ts) * 1000)::int8 AS ts_ms, (extract(epoch FROM e.ts) * 1000000)::int8 AS ts_us,
       ST_Y(e.location) AS lat, ST_X(e.location) AS lng, e.battery_percent, e.trip_ids::text[] AS trip_ids,
       v.code AS vehicle_code, vt.form_factor, vt.propulsion_type,
       (extract(epoch FROM e.recorded_at) * 1000)::int8 AS recorded_ms
  FROM events e
  JOIN vehicles v ON v.id = e.device_id
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
 WHERE e.zone_id = $1 AND e.ts >= $2 AND e.ts < $3
   AND (e.ts, e.event_id) > (timestamptz 'epoch' + $4::int8 * interval '1 microsecond', $5::uuid)
   AND e.recorded_at < timestamptz 'epoch' + $6::int8 * interval '1 microsecond'
 ORDER BY e.ts, e.event_id
 LIMIT $7 OFFSET $8;

-- name: MdsEventsCount
-- The events of a zone's window [$2, $3) recorded before the cut-off ($4, µs): the page count of a
-- page[number] traversal, read once, at its first page (the pin carries it, api/feeds/paging.ts).
-- not null: total
SELECT count(*)::int8 AS total
  FROM events e
 WHERE e.zone_id = $1 AND e.ts >= $2 AND e.ts < $3
   AND e.recorded_at < timestamptz 'epoch' + $4::int8 * interval '1 microsecond';

-- name: MdsVehicles
-- $2: a device id, or null for every vehicle of the zone.
SELECT v.id AS device_id, v.code AS vehicle_code, vt.form_factor, vt.propulsion_type, vt.max_speed_kph,
       vt.make, vt.model
  FROM vehicles v
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
 WHERE v.zone_id = $1 AND ($2::uuid IS NULL OR v.id = $2::uuid)
 ORDER BY v.id;

-- name: MdsVehicleStatus
-- The current state of each vehicle (vehicle_current_state, migration 000105: last event and last
-- telemetry, kept by triggers): one row per vehicle, whatever the history. Vehicles without any
-- event have no MDS state yet and are left out. A vehicle without telemetry gets a synthetic
-- last_telemetry from its current position (stable id per position report, so repeated reads agree).
-- $2: device id or null; $3: vehicle states to keep (null = all); $4: the MDS 2.0 90-minute rule's
-- now (null = no rule): a vehicle whose last state is elsewhere, removed or missing is listed for 90
-- minutes after that event, then dropped.
-- vehicle_lat, vehicle_lng: of vehicles' NOT NULL location. The event columns of vehicle_current_state
-- are copied together from one events row (NOT NULL there), and event_id IS NOT NULL is required.
-- telemetry_id, telemetry_ms, telemetry_lat, telemetry_lng: COALESCEd with NOT NULL vehicle columns.
-- trip_ids stays uuid[] (no ::text[] as in the hour's events): the records built in Postgres print
-- its elements without to_json (lib/feeds/mds/shape.ts `uuids`); node-postgres gives string[] either way.
-- telemetry_incident_ids: the MDS 2.1 incidents that name the last telemetry point (null when none,
-- and for a synthetic last_telemetry, whose telemetry_ts is null).
-- not null: vehicle_lat, vehicle_lng, event_id, event_types, vehicle_state, ts_ms, lat, lng
-- not null: telemetry_id, telemetry_ms, telemetry_lat, telemetry_lng
SELECT v.id AS device_id, v.code AS vehicle_code, vt.form_factor, vt.propulsion_type,
       v.battery_percent AS vehicle_battery_percent,
       ST_Y(v.location) AS vehicle_lat, ST_X(v.location) AS vehicle_lng,
       c.event_id, c.event_types, c.vehicle_state, (extract(epoch FROM c.event_ts) * 1000)::int8 AS ts_ms,
       ST_Y(c.event_location) AS lat, ST_X(c.event_location) AS lng, c.event_battery_percent AS battery_percent, c.event_trip_ids AS trip_ids,
       COALESCE(c.telemetry_id, md5(v.id::text || v.last_seen_at::text)::uuid) AS telemetry_id,
       (extract(epoch FROM COALESCE(c.telemetry_ts, v.last_seen_at)) * 1000)::int8 AS telemetry_ms,
       ST_Y(COALESCE(c.telemetry_location, v.location)) AS telemetry_lat, ST_X(COALESCE(c.telemetry_location, v.location)) AS telemetry_lng,
       CASE WHEN c.telemetry_id IS NULL THEN v.battery_percent ELSE c.telemetry_battery_percent END AS telemetry_battery_percent,
       c.telemetry_trip_id::text AS telemetry_trip_id,
       inc.ids AS telemetry_incident_ids
  FROM vehicles v
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
  -- the zone's vehicles first, then each one's current state by its primary key: as a plain join the
  -- planner hashed the whole vehicle_current_state (every zone's vehicles), so a 1,000-vehicle zone
  -- took 7 ms at 10 zones and 20 ms at 100; LIMIT 1 (one row per device anyway) keeps the subquery
  -- from being pulled up into that join, so it stays one index probe per vehicle of the zone
 CROSS JOIN LATERAL (SELECT * FROM vehicle_current_state c
                      WHERE c.device_id = v.id AND c.event_id IS NOT NULL
                        AND ($3::text[] IS NULL OR c.vehicle_state = ANY ($3::text[]))
                        AND ($4::timestamptz IS NULL OR c.vehicle_state NOT IN ('elsewhere', 'removed', 'missing') OR c.event_ts > $4::timestamptz - interval '90 minutes')
                      LIMIT 1) c
  -- the zone's incidents that name a point, hashed once (a few per vehicle and year): measured on a
  -- 10,000-vehicle zone, a correlated probe per vehicle cost 14 ms of 76; this join costs nothing
  -- measurable without incidents and 6 ms of 83 with 1,000 vehicles' last points named (their members written)
  LEFT JOIN (SELECT i.device_id, i.telemetry_ts, array_agg(i.incident_id ORDER BY i.incident_id) AS ids
               FROM incidents i WHERE i.zone_id = $1 AND i.telemetry_ts IS NOT NULL
              GROUP BY 1, 2) inc ON inc.device_id = v.id AND inc.telemetry_ts = c.telemetry_ts
 WHERE v.zone_id = $1 AND ($2::uuid IS NULL OR v.id = $2::uuid)
 ORDER BY v.id;

-- name: MdsTelemetryOfHour
-- Telemetry of a zone in one UTC hour. In-trip points only once their trip has ended at least $4
-- minutes before $3 (the publication time): the trip row is written at the end of the trip, and
-- its arrival dirties the hours it spans (migration 000120), so the points follow in a republish.
-- end_time >= ts bounds the probe to the daily trip partitions from the point on.
-- telemetry_incident_ids: the MDS 2.1 incidents that name the point (migration 000330), null when none.
-- telemetry_ms, telemetry_lat, telemetry_lng, recorded_ms: of telemetry's NOT NULL ts, location, recorded_at.
-- not null: telemetry_ms, telemetry_lat, telemetry_lng, recorded_ms
SELECT t.telemetry_id, t.device_id, (extract(epoch FROM t.ts) * 1000)::int8 AS telemetry_ms,
       ST_Y(t.location) AS telemetry_lat, ST_X(t.location) AS telemetry_lng,
       t.battery_percent AS telemetry_battery_percent, t.trip_id AS telemetry_trip_id,
       (extract(epoch FROM t.recorded_at) * 1000)::int8 AS recorded_ms,
       inc.ids AS telemetry_incident_ids
  FROM telemetry t
  -- the hour's incidents of the zone, hashed once: a correlated probe per point cost more than the join
  LEFT JOIN (SELECT i.device_id, i.telemetry_ts, array_agg(i.incident_id ORDER BY i.incident_id) AS ids
               FROM incidents i
              WHERE i.zone_id = $1 AND i.telemetry_ts >= ($2::timestamp AT TIME ZONE 'UTC') AND i.telemetry_ts < ($2::timestamp AT TIME ZONE 'UTC') + interval '1 hour'
              GROUP BY 1, 2) inc ON inc.device_id = t.device_id AND inc.telemetry_ts = t.ts
 WHERE t.zone_id = $1 AND t.ts >= ($2::timestamp AT TIME ZONE 'UTC') AND t.ts < ($2::timestamp AT TIME ZONE 'UTC') + interval '1 hour'
   AND (t.trip_id IS NULL OR EXISTS (SELECT 1 FROM trips r WHERE r.trip_id = t.trip_id AND r.end_time >= t.ts AND r.end_time <= $3::timestamptz - make_interval(mins => $4::int)))
 ORDER BY t.ts, t.telemetry_id;
