-- Metrics: the gauges /metrics reads from Postgres at scrape time (lib/core/metrics.ts), one small query
-- each, so every process reports the cluster-wide value.

-- name: MetricsDirtyHours
-- Published hours waiting for republication.
SELECT count(*)::int AS n FROM feed_publications WHERE dirty;

-- name: MetricsPublishLag
-- Per file of the catalogue (hourly_feeds, synced from HOURLY_FEEDS), seconds between its latest
-- published hour closing and its publication: a backward walk of feed_publications_hour_scope from
-- the newest hour, not a sort of every hour ever published.
-- lag: of NOT NULL hour and of published_at, which the WHERE clause requires.
-- not null: lag
SELECT f.feed, f.version, l.lag
  FROM hourly_feeds f
  JOIN LATERAL (SELECT extract(epoch FROM p.published_at - (p.hour + interval '1 hour') AT TIME ZONE 'UTC')::float8 AS lag
                  FROM feed_publications p
                 WHERE p.feed = f.feed AND p.version = f.version AND p.status = 'published' AND p.published_at IS NOT NULL
                 ORDER BY p.hour DESC LIMIT 1) l ON true;

-- name: MetricsHistoryTables
-- Per history table (migration 000101): its daily partitions, the UTC day of the oldest (epoch
-- seconds), its bytes with indexes and every partition, and where retention dropped it to.
SELECT p.relname AS parent,
       count(*) FILTER (WHERE c.relname ~ '_p[0-9]{8}$')::int AS partitions,
       extract(epoch FROM min(to_date(right(c.relname, 8), 'YYYYMMDD')) FILTER (WHERE c.relname ~ '_p[0-9]{8}$')::timestamp)::float8 AS oldest,
       sum(pg_total_relation_size(c.oid))::float8 AS bytes,
       (SELECT extract(epoch FROM dropped_before)::float8 FROM history_retention r WHERE r.source = p.relname) AS dropped_before
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
 WHERE p.relname IN ('events', 'telemetry', 'trips') AND p.relnamespace = 'public'::regnamespace
 GROUP BY p.relname;

-- name: MetricsRentalsRunning
SELECT count(*)::int AS n FROM rentals WHERE state = 'RUNNING';

-- name: MetricsQueueDepth
-- Jobs queued (created or waiting for a retry) and failed per pg-boss queue. The pgboss schema is
-- pg-boss's own (created by boss.start(), not a migration): scripts/sql-types.ts installs it on the
-- clone it describes this on.
SELECT name, count(*) FILTER (WHERE state IN ('created', 'retry'))::int AS queued,
       count(*) FILTER (WHERE state = 'failed')::int AS failed
  FROM pgboss.job GROUP BY name;
