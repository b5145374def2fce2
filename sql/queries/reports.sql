-- MDS 2.0 monthly reports (publisher/reports.ts, api/feeds/reports.ts). Months are UTC. Their index
-- rows are written by the publication sink (PublicationReportRecord, sql/queries/publisher.sql).

-- name: ReportsDue
-- Closed months (up to the month starting $1) of each zone, from the month it was created, that have
-- no report yet or a dirty one, oldest first, at most $2. A month some of whose trips retention has
-- dropped is left out: its report, if any, is the archive.
-- month: to_char of a generate_series step.
-- not null: month
SELECT z.id AS zone_id, to_char(m, 'YYYY-MM') AS month
  FROM zones z
 CROSS JOIN LATERAL generate_series(date_trunc('month', z.created_at AT TIME ZONE 'UTC'), $1::timestamp, interval '1 month') AS m
  LEFT JOIN feed_reports r ON r.scope = z.id AND r.month = m::date
 WHERE (r.scope IS NULL OR r.dirty)
   AND NOT EXISTS (SELECT 1 FROM history_retention h WHERE h.source = 'trips' AND h.dropped_before > (m AT TIME ZONE 'UTC'))
 ORDER BY m, z.id
 LIMIT $2;

-- name: ReportClaim
-- Late trips committed from now on dirty the report again (migration 000121).
UPDATE feed_reports SET dirty = false WHERE scope = $1 AND month = $2::date RETURNING sha256, object_key;

-- name: ReportCounts
-- all_riders counts of rider trips (rider, MaaS) that started in the month: per vehicle form factor
-- (those the zone prices, and any that rode), for the zone (area_id null) and each of its areas
-- (trips that started inside it). Riders are the distinct users of those trips' rentals.
-- form_factor: both branches of f read the NOT NULL vehicle_types.form_factor.
-- not null: form_factor
WITH t AS (
  SELECT t.trip_id, t.start_location, vt.form_factor, r.user_id
    FROM trips t
    JOIN vehicle_types vt ON vt.id = t.vehicle_type_id
    LEFT JOIN rentals r ON r.id = t.rental_id
   WHERE t.zone_id = $1 AND t.trip_type IN ('rider', 'maas')
     AND t.start_time >= ($2::timestamp AT TIME ZONE 'UTC') AND t.start_time < (($2::timestamp + interval '1 month') AT TIME ZONE 'UTC')
     -- on the partition key too: a trip ends after it starts, and within a day
     AND t.end_time >= ($2::timestamp AT TIME ZONE 'UTC') AND t.end_time < (($2::timestamp + interval '1 month 1 day') AT TIME ZONE 'UTC')
), g AS (
  SELECT NULL::uuid AS area_id, 0 AS ord, NULL::geometry AS geom
  UNION ALL
  SELECT a.id, 1, a.geom FROM areas a WHERE a.zone_id = $1
), f AS (
  SELECT DISTINCT vt.form_factor FROM pricing p JOIN vehicle_types vt ON vt.id = p.vehicle_type_id WHERE p.zone_id = $1
  UNION
  SELECT DISTINCT form_factor FROM t
)
SELECT g.area_id, f.form_factor, count(t.trip_id)::int AS trip_count, count(DISTINCT t.user_id)::int AS rider_count
  FROM g
 CROSS JOIN f
  LEFT JOIN t ON t.form_factor = f.form_factor AND (g.area_id IS NULL OR ST_Intersects(g.geom, t.start_location))
 GROUP BY g.ord, g.area_id, f.form_factor
 ORDER BY g.ord, g.area_id, f.form_factor;

-- name: ReportGet
-- What the serving decision needs of a report's row, through the API's index cache.
SELECT object_key, sha256 FROM feed_reports WHERE scope = $1 AND month = $2::date;
