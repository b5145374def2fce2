-- Claims that never recorded (issue 26). PubClaim on a published hour clears dirty and counts an
-- attempt but leaves the status 'published'; only PublicationHourlyRecord sets attempts back to 0
-- (PubFailed makes the row 'failed'). A publisher killed in between, or whose PubFailed could not
-- reach the database, left a row that no arm of PubNeedsRepublish took and that retention counted as
-- cleanly published: the late data that had dirtied the hour never reached its file. Such a row
-- (status 'published', attempts > 0) is now outstanding like a 'pending' one.

-- PubNeedsRepublish (sql/queries/publisher.sql) takes it: the index of 000100 that the sweep reads
-- holds it too, arm by arm with the sweep's WHERE clause. Built under a new name, then swapped: the
-- build blocks only writes to feed_publications (SHARE lock), and the drop's ACCESS EXCLUSIVE lock,
-- which also blocks reads, is held only from the drop to this migration's commit.
CREATE INDEX feed_publications_outstanding_200 ON feed_publications (hour)
  WHERE (dirty AND status <> 'failed') OR status = 'failed' OR status = 'pending' OR (status = 'published' AND attempts > 0);
DROP INDEX feed_publications_outstanding;
ALTER INDEX feed_publications_outstanding_200 RENAME TO feed_publications_outstanding;

-- Retention (history_drop_partition, 000103) drops a day only once every hour of it is cleanly
-- published: a claim that has not recorded is not (its file may lack the data that was late), so the
-- day is kept until the republish records, instead of archiving a stale file for good (after which
-- the publisher refuses the hour and the sweep would queue it every minute in vain).
-- Otherwise as 000160 left it.
CREATE OR REPLACE FUNCTION history_unpublished_hours(parent text, day date) RETURNS integer LANGUAGE sql STABLE AS $$
  WITH f (feed, version) AS (
    SELECT feed, version FROM hourly_feeds
     WHERE source = parent OR (parent = 'telemetry' AND source = 'trips')
  )
  SELECT (SELECT count(*)::int
            FROM zones z
           CROSS JOIN f
           CROSS JOIN LATERAL generate_series(greatest(date_trunc('hour', z.created_at AT TIME ZONE 'UTC'), day::timestamp),
                                              day::timestamp + interval '23 hours', interval '1 hour') AS h
           WHERE NOT EXISTS (SELECT 1 FROM feed_publications p
                              WHERE p.feed = f.feed AND p.version = f.version AND p.scope = z.id AND p.hour = h
                                AND p.status = 'published' AND NOT p.dirty AND p.attempts = 0))
       + (SELECT count(*)::int FROM zones z
           WHERE z.created_at > day::timestamp AT TIME ZONE 'UTC'
             AND CASE parent
                   WHEN 'events' THEN EXISTS (SELECT 1 FROM events e WHERE e.zone_id = z.id AND e.ts >= day::timestamp AT TIME ZONE 'UTC'
                                                 AND e.ts < date_trunc('hour', z.created_at))
                   WHEN 'trips' THEN EXISTS (SELECT 1 FROM trips t WHERE t.zone_id = z.id AND t.end_time >= day::timestamp AT TIME ZONE 'UTC'
                                                AND t.end_time < date_trunc('hour', z.created_at))
                   WHEN 'telemetry' THEN EXISTS (SELECT 1 FROM telemetry t WHERE t.zone_id = z.id AND t.ts >= day::timestamp AT TIME ZONE 'UTC'
                                                    AND t.ts < date_trunc('hour', z.created_at))
                   ELSE false
                 END)
$$;

-- Claims stranded before this migration in hours retention has since archived: their published file
-- is all that is left (the publisher refuses such an hour), so they are recorded as they are rather
-- than swept for ever.
UPDATE feed_publications p
   SET attempts = 0
  FROM hourly_feeds f
  JOIN history_retention r ON r.source = f.source
 WHERE p.feed = f.feed AND p.version = f.version
   AND p.status = 'published' AND p.attempts > 0 AND (p.hour AT TIME ZONE 'UTC') < r.dropped_before;
