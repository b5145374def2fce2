-- History partitions (migration 000101) and their maintenance by publisher/jobs/history.ts.

-- name: HistoryEnsurePartitions
-- The daily partitions of events, telemetry and trips for the UTC days [$1, $2]; the number created.
SELECT history_ensure_partitions($1::date, $2::date) AS created;

-- name: HistoryEnsurePartition
-- One table's partition for one UTC day ($1 'events' | 'telemetry' | 'trips', $2 day); rows of that
-- day waiting in the table's DEFAULT partition move into it.
SELECT history_ensure_partition($1, $2::date) AS created;

-- name: HistoryDefaultDays
-- UTC days that have rows in a DEFAULT partition (written before their partition existed): the
-- maintenance job gives each its own partition. The DEFAULT partitions stay small, so this is cheap.
-- parent: a literal in every branch; day: of a NOT NULL timestamp.
-- not null: parent, day
SELECT 'events' AS parent, to_char(d, 'YYYY-MM-DD') AS day FROM (SELECT DISTINCT (ts AT TIME ZONE 'UTC')::date AS d FROM events_default) e
UNION ALL
SELECT 'telemetry', to_char(d, 'YYYY-MM-DD') FROM (SELECT DISTINCT (ts AT TIME ZONE 'UTC')::date AS d FROM telemetry_default) t
UNION ALL
SELECT 'trips', to_char(d, 'YYYY-MM-DD') FROM (SELECT DISTINCT (end_time AT TIME ZONE 'UTC')::date AS d FROM trips_default) r
ORDER BY 1, 2;

-- name: HistoryPartitions
-- Every daily partition of the history tables with its UTC day and size (publish-status, /metrics,
-- retention). The DEFAULT partitions are listed with a NULL day.
SELECT p.relname AS parent, c.relname AS partition,
       CASE WHEN c.relname ~ '_p[0-9]{8}$' THEN to_char(to_date(right(c.relname, 8), 'YYYYMMDD'), 'YYYY-MM-DD') END AS day,
       pg_total_relation_size(c.oid)::int8 AS bytes
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  JOIN pg_class p ON p.oid = i.inhparent
 WHERE p.relname IN ('events', 'telemetry', 'trips') AND p.relnamespace = 'public'::regnamespace
 ORDER BY 1, 3 NULLS FIRST;

-- name: HistoryRetentionCandidates
-- Daily partitions of $1 older than the retention cut-off $2 (a UTC day: partitions of days before
-- it go), oldest first: the retention job drops them in this order and stops at the first it may not.
-- day: of a partition name the WHERE clause matched.
-- not null: day
SELECT to_char(to_date(right(c.relname, 8), 'YYYYMMDD'), 'YYYY-MM-DD') AS day
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = $1::regclass AND c.relname ~ '_p[0-9]{8}$' AND to_date(right(c.relname, 8), 'YYYYMMDD') < $2::date
 ORDER BY 1;

-- name: HistoryDropPartition
-- $1 table, $2 day; false when an hour of the day is not published and clean (see migration 000102).
SELECT history_drop_partition($1, $2::date) AS dropped;

-- name: HistoryUnpublishedHours
-- history_unpublished_hours (migration 000200) is a sum of two counts: never null.
-- not null: hours
SELECT history_unpublished_hours($1, $2::date) AS hours;

-- name: HistoryRetention
-- Per history table: where its retained rows begin (dropped_before; NULL = nothing dropped yet).
SELECT source, dropped_before, dropped_partitions, dropped_at FROM history_retention ORDER BY source;
