-- Retention of history (issue 14): whole daily partitions of events, telemetry and trips are dropped
-- by the publisher's maintenance job (publisher/jobs/history.ts), oldest first, and only once every
-- hour they hold is published and not dirty: the object store is the archive from then on.
--
-- history_retention records, per table, the start of the oldest hour still held: every hour before
-- `dropped_before` is served from its published files only. The publisher refuses to publish such an
-- hour again (it would overwrite the archive with what is left, usually nothing), and late rows for
-- it no longer mark its files dirty (they would hide the archived file behind a republish that
-- cannot happen).
CREATE TABLE history_retention (
  source              text PRIMARY KEY CHECK (source IN ('events', 'telemetry', 'trips')),
  dropped_before      timestamptz NOT NULL,
  dropped_partitions  integer NOT NULL DEFAULT 0 CHECK (dropped_partitions >= 0),
  dropped_at          timestamptz NOT NULL DEFAULT now()
);

CREATE OR REPLACE FUNCTION mark_trip_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, end_hour FROM changed_rows) c
   CROSS JOIN (VALUES ('mds_trips', '2.0'), ('mds_trips', '1.2'), ('mds_trips', '0.4'), ('insurance_trips', '2.0')) AS f (feed, version)
   WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.end_hour AND NOT p.dirty
     AND (c.end_hour AT TIME ZONE 'UTC') >= coalesce((SELECT dropped_before FROM history_retention WHERE source = 'trips'), '-infinity');
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION mark_event_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, hour FROM changed_rows) c
   CROSS JOIN (VALUES ('mds_events', '2.0'), ('mds_status_changes', '1.2'), ('mds_status_changes', '0.4')) AS f (feed, version)
   WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.hour AND NOT p.dirty
     AND (c.hour AT TIME ZONE 'UTC') >= coalesce((SELECT dropped_before FROM history_retention WHERE source = 'events'), '-infinity');
  RETURN NULL;
END $$;

-- Hours of one UTC day whose files are not (cleanly) published, for the files that rows of `parent`
-- feed: events → MDS events and status changes; trips → MDS and insurance trips; telemetry → the
-- trip files (telemetry is in no file: it is kept until the trips of its day, whose distances it
-- gave, are archived). Every zone counts from the hour it was created; rows of a zone written before
-- that hour (which the publisher never publishes) count as unpublished.
CREATE FUNCTION history_unpublished_hours(parent text, day date) RETURNS integer LANGUAGE sql STABLE AS $$
  WITH f (feed, version) AS (
    SELECT * FROM (VALUES ('mds_events', '2.0', 'events'), ('mds_status_changes', '1.2', 'events'), ('mds_status_changes', '0.4', 'events'),
                          ('mds_trips', '2.0', 'trips'), ('mds_trips', '1.2', 'trips'), ('mds_trips', '0.4', 'trips'), ('insurance_trips', '2.0', 'trips')) v (feed, version, source)
     WHERE source = CASE parent WHEN 'events' THEN 'events' ELSE 'trips' END
  )
  SELECT (SELECT count(*)::int
            FROM zones z
           CROSS JOIN f
           CROSS JOIN LATERAL generate_series(greatest(date_trunc('hour', z.created_at AT TIME ZONE 'UTC'), day::timestamp),
                                              day::timestamp + interval '23 hours', interval '1 hour') AS h
           WHERE NOT EXISTS (SELECT 1 FROM feed_publications p
                              WHERE p.feed = f.feed AND p.version = f.version AND p.scope = z.id AND p.hour = h
                                AND p.status = 'published' AND NOT p.dirty))
       + (SELECT count(*)::int FROM zones z
           WHERE z.created_at > day::timestamp AT TIME ZONE 'UTC'
             AND CASE parent
                   WHEN 'events' THEN EXISTS (SELECT 1 FROM events e WHERE e.zone_id = z.id AND e.ts >= day::timestamp AT TIME ZONE 'UTC'
                                                 AND e.ts < date_trunc('hour', z.created_at))
                   WHEN 'trips' THEN EXISTS (SELECT 1 FROM trips t WHERE t.zone_id = z.id AND t.end_time >= day::timestamp AT TIME ZONE 'UTC'
                                                AND t.end_time < date_trunc('hour', z.created_at))
                   ELSE false
                 END)
$$;

-- Drops the daily partition of `parent` for `day` if every hour it holds is published and clean, and
-- moves the table's retention mark past it. False (nothing dropped) when an hour is not published
-- yet, or when the partition is missing. The partition is locked first, so no row can be written
-- into it between the check and the drop. Only this function drops history partitions.
CREATE FUNCTION history_drop_partition(parent text, day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := format('%s_p%s', parent, to_char(day, 'YYYYMMDD'));
BEGIN
  IF parent NOT IN ('events', 'telemetry', 'trips') THEN
    RAISE EXCEPTION 'history_drop_partition: unknown history table %', parent USING ERRCODE = '22023';
  END IF;
  IF to_regclass(part) IS NULL THEN RETURN false; END IF;
  EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', part);
  IF history_unpublished_hours(parent, day) > 0 THEN RETURN false; END IF;
  EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', parent, part);
  EXECUTE format('DROP TABLE %I', part);
  INSERT INTO history_retention AS r (source, dropped_before, dropped_partitions, dropped_at)
  VALUES (parent, (day + 1)::timestamp AT TIME ZONE 'UTC', 1, now())
  ON CONFLICT (source) DO UPDATE
     SET dropped_before = greatest(r.dropped_before, excluded.dropped_before),
         dropped_partitions = r.dropped_partitions + 1, dropped_at = excluded.dropped_at;
  RETURN true;
END $$;
