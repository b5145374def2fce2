-- The hourly feed publisher (publisher/), the publication status (lib/publication/status.ts) and
-- the publication sink and index of every published object (lib/publication/: hourly files, GBFS
-- snapshots, monthly reports). Hours are UTC `timestamp`s passed as text and read back with
-- AT TIME ZONE 'UTC', so the process time zone never matters.

-- name: PublicationLock
-- One writer per lock unit (an object key, or a GBFS zone or scope: publisher/publication/lock.ts),
-- whichever process. Session locks on the writer's own connection; released by PublicationUnlock or
-- by disconnecting. $1: the units, sorted by the caller: every writer takes them in the same order,
-- so two writers of overlapping sets cannot deadlock. unnest yields them in array order.
SELECT count(pg_advisory_lock(hashtextextended(k, 7305040)))::int AS locked FROM unnest($1::text[]) AS k;

-- name: PublicationTryLocks
-- The same locks, each left alone when another process holds it (a GBFS build in progress there):
-- the units of $1 taken. Trying never waits, so the order does not matter.
-- not null: unit
SELECT k AS unit FROM unnest($1::text[]) AS k WHERE pg_try_advisory_lock(hashtextextended(k, 7305040));

-- name: PublicationUnlock
SELECT count(pg_advisory_unlock(hashtextextended(k, 7305040)))::int AS unlocked FROM unnest($1::text[]) AS k;

-- name: PublicationHourlyRecord
-- The index rows of hourly files now in the store (publisher/publication/indexes.ts), arrays in the same
-- order: $1 feeds, $2 versions, $3 zones, $4 hours, $5 keys, $6 sha256s (of the stored bytes),
-- $7 record counts, $8 byte counts, $9 last_updated, $10 watermarks, $11 written, $12 now.
-- dirty is left as it is: it was cleared by PubClaim, so true here means data arrived meanwhile.
UPDATE feed_publications p
   SET status = 'published', object_key = u.object_key, sha256 = u.sha256, record_count = u.record_count, bytes = u.bytes,
       last_updated = u.last_updated, source_watermark = u.watermark,
       published_at = CASE WHEN u.written OR p.published_at IS NULL THEN $12::timestamptz ELSE p.published_at END,
       attempts = 0, last_error = NULL, failed_at = NULL
  FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamp[], $5::text[], $6::text[], $7::int[], $8::int8[], $9::timestamptz[], $10::timestamptz[], $11::boolean[])
       AS u (feed, version, scope, hour, object_key, sha256, record_count, bytes, last_updated, watermark, written)
 WHERE p.feed = u.feed AND p.version = u.version AND p.scope = u.scope AND p.hour = u.hour;

-- name: PublicationGbfsRows
-- The GBFS index rows of the scopes $1 (zone ids, 2.2 scope ids), and of the language scopes of the
-- 2.2 scopes $2 (`{scope}/lang={language}`), as a build reads them under its lock.
SELECT version, scope, file, sha256, content_digest, bytes, last_updated, object_key
  FROM gbfs_snapshots
 WHERE scope = ANY ($1::text[]) OR (scope LIKE '%/lang=%' AND split_part(scope, '/lang=', 1) = ANY ($2::text[]));

-- name: PublicationGbfsRecord
-- The index rows of GBFS files now in the store, arrays in the same order: $1 versions, $2 scopes,
-- $3 files, $4 keys, $5 sha256s (of the stored bytes), $6 content digests, $7 byte counts, $8 ttls,
-- $9 last_updated, $10 now.
INSERT INTO gbfs_snapshots (version, scope, file, object_key, sha256, content_digest, bytes, ttl, last_updated, published_at)
SELECT u.version, u.scope, u.file, u.object_key, u.sha256, u.content_digest, u.bytes, u.ttl, u.last_updated, $10::timestamptz
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::int[], $9::timestamptz[])
       AS u (version, scope, file, object_key, sha256, content_digest, bytes, ttl, last_updated)
ON CONFLICT (version, scope, file) DO UPDATE
   SET object_key = EXCLUDED.object_key, sha256 = EXCLUDED.sha256, content_digest = EXCLUDED.content_digest, bytes = EXCLUDED.bytes,
       ttl = EXCLUDED.ttl, last_updated = EXCLUDED.last_updated, published_at = EXCLUDED.published_at;

-- name: PublicationReportRecord
-- The index rows of monthly reports now in the store: $1 zones, $2 months, $3 keys, $4 sha256s (of
-- the stored bytes), $5 byte counts, $6 row counts, $7 now. dirty is left as it is: ReportClaim
-- cleared it, so true here means a late trip arrived meanwhile.
INSERT INTO feed_reports (scope, month, object_key, sha256, bytes, row_count, published_at, dirty)
SELECT u.scope, u.month, u.object_key, u.sha256, u.bytes, u.row_count, $7::timestamptz, false
  FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::int8[], $6::int[]) AS u (scope, month, object_key, sha256, bytes, row_count)
ON CONFLICT (scope, month) DO UPDATE
   SET object_key = excluded.object_key, sha256 = excluded.sha256, bytes = excluded.bytes, row_count = excluded.row_count,
       published_at = excluded.published_at;

-- name: PublicationHourRow
-- What the serving decision needs of an hourly file's row (api/kit/serve.ts), through the
-- API's index cache (api/feeds/publications.ts).
SELECT status, object_key, sha256, dirty
  FROM feed_publications
 WHERE feed = $1 AND version = $2 AND scope = $3 AND hour = $4::timestamp;

-- name: PubClaim
-- Claims the files before the data is read: clears dirty (late rows committed from now on set it
-- again through the triggers) and creates the row on a first publication so the triggers see it.
-- $1/$2: feeds and versions of the files (one row each), $3 zone, $4 hour.
INSERT INTO feed_publications (feed, version, scope, hour, status, dirty, attempts)
SELECT f.feed, f.version, $3, $4::timestamp, 'pending', false, 1
  FROM unnest($1::text[], $2::text[]) AS f (feed, version)
ON CONFLICT (feed, version, scope, hour) DO UPDATE
   SET dirty = false, attempts = feed_publications.attempts + 1
RETURNING feed, version, status, sha256, object_key, record_count, bytes;

-- name: PubTripStats
SELECT count(*)::int AS records, (extract(epoch FROM max(recorded_at)) * 1000)::int8 AS watermark_ms
  FROM trips WHERE zone_id = $1 AND end_hour = $2::timestamp
   AND end_time >= ($2::timestamp AT TIME ZONE 'UTC') AND end_time < (($2::timestamp + interval '1 hour') AT TIME ZONE 'UTC');

-- name: PubEventStats
SELECT count(*)::int AS records, (extract(epoch FROM max(recorded_at)) * 1000)::int8 AS watermark_ms
  FROM events WHERE zone_id = $1 AND hour = $2::timestamp
   AND ts >= ($2::timestamp AT TIME ZONE 'UTC') AND ts < (($2::timestamp + interval '1 hour') AT TIME ZONE 'UTC');

-- name: PubFailed
UPDATE feed_publications
   SET status = 'failed', last_error = left($5, 2000), failed_at = $6
 WHERE feed = $1 AND version = $2 AND scope = $3 AND hour = $4::timestamp;

-- name: PubZones
SELECT id, created_at FROM zones ORDER BY id;

-- name: PubMissingHours
-- Closed hours in [$3, $4] (clamped to the zone's first hour) without any publication row, for
-- every (feed, version) pair given in $1/$2: what the cron enqueues. The repeated window bound in
-- the anti-join lets the planner read only the window's rows (feed_publications_hour_scope) when it
-- hashes them, instead of every hour ever published.
-- feed, version: the pairs of $1/$2, which callers give whole (HOURLY_FEEDS' two columns); hour: a
-- generate_series step.
-- not null: feed, version, hour
SELECT z.id AS zone_id, f.feed, f.version, (h AT TIME ZONE 'UTC') AS hour
  FROM zones z
 CROSS JOIN unnest($1::text[], $2::text[]) AS f (feed, version)
 CROSS JOIN LATERAL generate_series(greatest(date_trunc('hour', z.created_at AT TIME ZONE 'UTC'), $3::timestamp), $4::timestamp, interval '1 hour') AS h
 WHERE NOT EXISTS (SELECT 1 FROM feed_publications p
                    WHERE p.feed = f.feed AND p.version = f.version AND p.scope = z.id AND p.hour = h
                      AND p.hour BETWEEN $3::timestamp AND $4::timestamp)
 ORDER BY h, z.id, f.feed, f.version
 LIMIT $5;

-- name: PubCatchupScan
-- History catch-up, one bounded chunk per (zone, feed): from the feed's mark (feed_catchup, else the
-- zone's first hour) up to $3 hours ahead, never into the cron's look-back (before $4). Moves each
-- mark to its chunk's first hour without a publication row, or past the chunk when none is missing
-- (monotonic, so concurrent ticks agree), and returns the missing hours, oldest first, at most $5.
-- The rows come through the CTEs: zone_id a zones.id, feed and version the pairs of $1/$2 (given
-- whole, as in PubMissingHours), hour a generate_series step.
-- not null: zone_id, feed, version, hour
WITH chunk AS (
  SELECT z.id AS zone_id, f.feed, f.version,
         coalesce(c.complete_before, date_trunc('hour', z.created_at AT TIME ZONE 'UTC')) AS from_hour,
         least(coalesce(c.complete_before, date_trunc('hour', z.created_at AT TIME ZONE 'UTC')) + make_interval(hours => $3::int), $4::timestamp) AS to_hour
    FROM zones z
   CROSS JOIN unnest($1::text[], $2::text[]) AS f (feed, version)
    LEFT JOIN feed_catchup c ON c.zone_id = z.id AND c.feed = f.feed AND c.version = f.version
), missing AS (
  SELECT k.zone_id, k.feed, k.version, h AS hour
    FROM chunk k
   CROSS JOIN LATERAL generate_series(k.from_hour, k.to_hour - interval '1 hour', interval '1 hour') AS h
   WHERE k.from_hour < k.to_hour
     AND NOT EXISTS (SELECT 1 FROM feed_publications p
                      WHERE p.feed = k.feed AND p.version = k.version AND p.scope = k.zone_id AND p.hour = h)
), firsts AS (
  -- each chunk's first missing hour in one pass (a subquery per chunk over the unindexed CTE grew
  -- with chunks × missing hours: 51 s for 100 zones with 10 days to catch up, past the statement timeout)
  SELECT zone_id, feed, version, min(hour) AS first_missing FROM missing GROUP BY zone_id, feed, version
), marks AS (
  INSERT INTO feed_catchup AS c (zone_id, feed, version, complete_before)
  SELECT k.zone_id, k.feed, k.version, coalesce(m.first_missing, k.to_hour)
    FROM chunk k
    LEFT JOIN firsts m ON m.zone_id = k.zone_id AND m.feed = k.feed AND m.version = k.version
   WHERE k.from_hour < k.to_hour
  ON CONFLICT (zone_id, feed, version) DO UPDATE SET complete_before = greatest(c.complete_before, excluded.complete_before)
)
SELECT zone_id, feed, version, (hour AT TIME ZONE 'UTC') AS hour FROM missing ORDER BY missing.hour, zone_id, feed, version LIMIT $5;

-- name: PubCatchupStatus
-- Per zone: the oldest catch-up mark over the feeds (null: never scanned), for make publish-status.
-- first_hour: of the NOT NULL zones.created_at.
-- not null: first_hour
SELECT z.id AS zone_id, (date_trunc('hour', z.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS first_hour,
       (SELECT min(c.complete_before) AT TIME ZONE 'UTC' FROM feed_catchup c WHERE c.zone_id = z.id AND (c.feed, c.version) IN (SELECT * FROM unnest($1::text[], $2::text[]))) AS complete_before,
       (SELECT count(*) FROM feed_catchup c WHERE c.zone_id = z.id AND (c.feed, c.version) IN (SELECT * FROM unnest($1::text[], $2::text[])))::int AS feeds_marked
  FROM zones z
 WHERE z.id = ANY ($3::text[])
 ORDER BY z.id;

-- name: PubNeedsRepublish
-- Dirty hours; failed hours after a backoff growing with the attempts (2^n minutes, at most an
-- hour); claims that never recorded (the advisory lock is gone with their publisher): pending hours
-- (a first publication) and published hours with attempts (a republication: PubClaim cleared dirty
-- and counted an attempt, only PublicationHourlyRecord sets it back to 0, PubFailed makes the row
-- 'failed'), left by a publisher killed before its record or unable to reach the database for
-- PubFailed (issue 26).
-- A publication still running is taken too: its job waits for the lock, then finds the content
-- unchanged and writes nothing.
-- The WHERE clause matches the predicate of feed_publications_outstanding (migration 000200) arm
-- by arm, so the scan reads only outstanding rows whatever the history.
-- hour: of the NOT NULL feed_publications.hour.
-- not null: hour
SELECT feed, version, scope, (hour AT TIME ZONE 'UTC') AS hour
  FROM feed_publications
 WHERE (dirty AND status <> 'failed')
    OR (status = 'failed' AND failed_at < $1::timestamptz - make_interval(mins => least(60, power(2, least(attempts, 6))::int)))
    OR (status = 'pending')
    OR (status = 'published' AND attempts > 0)
 ORDER BY hour
 LIMIT $2;

-- name: PubStatusRows
-- With each file's writes from the publication log (first, last, how many): the publications index
-- and make publish-status read the same figures.
-- hour: of the NOT NULL feed_publications.hour.
-- not null: hour
SELECT p.feed, p.version, p.scope, (p.hour AT TIME ZONE 'UTC') AS hour, p.status, p.dirty, p.record_count, p.bytes,
       p.last_error, p.published_at, p.attempts, p.sha256, p.object_key,
       (extract(epoch FROM l.first_at) * 1000)::int8 AS first_published_ms, (extract(epoch FROM l.last_at) * 1000)::int8 AS last_published_ms,
       COALESCE(l.writes, 0)::int AS writes
  FROM feed_publications p
  LEFT JOIN LATERAL (SELECT min(g.published_at) AS first_at, max(g.published_at) AS last_at, count(*) AS writes
                       FROM feed_publication_log g
                      WHERE g.feed = p.feed AND g.version = p.version AND g.scope = p.scope AND g.hour = p.hour) l ON true
 WHERE p.scope = ANY ($1::text[]) AND p.hour BETWEEN $2::timestamp AND $3::timestamp;

-- name: PubZonesCreated
SELECT id, created_at FROM zones WHERE id = ANY ($1::text[]) ORDER BY id;

-- name: PubTelemetryStats
-- Count and watermark of what MdsTelemetryOfHour returns for the same parameters. An incident that
-- names a point of the hour (migration 000330) changes the point's incident_ids: its publication
-- time counts as a change of the hour's data too.
SELECT count(*)::int AS records,
       (extract(epoch FROM greatest(max(t.recorded_at),
          (SELECT max(i.publication_time) FROM incidents i
            WHERE i.zone_id = $1 AND i.telemetry_ts >= ($2::timestamp AT TIME ZONE 'UTC') AND i.telemetry_ts < ($2::timestamp AT TIME ZONE 'UTC') + interval '1 hour'))) * 1000)::int8 AS watermark_ms
  FROM telemetry t
 WHERE t.zone_id = $1 AND t.ts >= ($2::timestamp AT TIME ZONE 'UTC') AND t.ts < ($2::timestamp AT TIME ZONE 'UTC') + interval '1 hour'
   AND (t.trip_id IS NULL OR EXISTS (SELECT 1 FROM trips r WHERE r.trip_id = t.trip_id AND r.end_time >= t.ts AND r.end_time <= $3::timestamptz - make_interval(mins => $4::int)));

-- name: PubTelemetryReleased
-- With a telemetry delay after trips ($3 minutes > 0): the telemetry files (hourly_feeds source
-- 'telemetry', migration 000160) of the hours of trips whose delay ran out in ($1, $2] are dirtied,
-- so their in-trip points get published. Reads trips by end_time (partition pruning,
-- trips_zone_hour per zone).
SELECT mark_feed_hours_dirty('telemetry', array_agg(c.zone_id), array_agg(c.h)) AS marked
  FROM (SELECT DISTINCT r.zone_id, h
          FROM trips r
         CROSS JOIN LATERAL generate_series(date_trunc('hour', r.start_time AT TIME ZONE 'UTC'), r.end_hour, interval '1 hour') AS h
         WHERE r.end_time > $1::timestamptz - make_interval(mins => $3::int) AND r.end_time <= $2::timestamptz - make_interval(mins => $3::int)) c;

-- name: PubLogWritten
-- One row per written file (arrays as in PubPublished): the publication log (migration 000120).
INSERT INTO feed_publication_log (feed, version, scope, hour, published_at, sha256, record_count)
SELECT u.feed, u.version, $3, $4::timestamp, $7::timestamptz, u.sha256, u.record_count
  FROM unnest($1::text[], $2::text[], $5::text[], $6::int[]) AS u (feed, version, sha256, record_count)
ON CONFLICT DO NOTHING;

-- name: PubLogTimes
-- The write times of the files of one (zone, hour), oldest first: records' publication_time.
SELECT feed, version, (extract(epoch FROM published_at) * 1000)::int8 AS published_ms
  FROM feed_publication_log
 WHERE feed = ANY ($1::text[]) AND version = ANY ($2::text[]) AND scope = $3 AND hour = $4::timestamp
 ORDER BY published_at;

-- name: PgBossQueuesLock
-- pg-boss's create_queue deadlocks (40P01) when two processes create the same queues at once (two
-- publishers starting together, or the API's sender beside a starting publisher): queue creation
-- runs under this one cluster-wide session lock (lib/publication/queue.ts ensureQueues).
SELECT pg_advisory_lock(hashtextextended('pgboss:queues', 7305040));

-- name: PgBossQueuesUnlock
SELECT pg_advisory_unlock(hashtextextended('pgboss:queues', 7305040));

-- name: PgBossCarriedOverTake
-- The jobs migration 000240 kept from a pg-boss 10 schema, handed over to be sent again (once:
-- under the queue lock, deleted as they are read).
DELETE FROM pgboss_carryover WHERE queue = $1 RETURNING data;
