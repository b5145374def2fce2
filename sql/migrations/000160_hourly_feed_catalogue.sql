-- The catalogue of hourly feed files in SQL (issue 27). Until now every function that had to know
-- which files a history table feeds carried its own pasted list of (feed, version) pairs, and the
-- lists drifted: telemetry was added to some and not others, and 000120 re-created the trip trigger
-- without the retention rule of 000102. The one declaration stays HOURLY_FEEDS in
-- lib/feeds/publications.ts; the migration runner (lib/core/migrate.ts) copies it into hourly_feeds with
-- sync_hourly_feeds after every run, and the triggers, the retention check and the metrics join the
-- table by `source` instead of listing files.

CREATE TABLE hourly_feeds (
  id       text NOT NULL UNIQUE,
  feed     text NOT NULL,
  version  text NOT NULL,
  -- each history table has its own late-data trigger below, so a new source needs a migration anyway
  source   text NOT NULL CHECK (source IN ('events', 'telemetry', 'trips')),
  segment  text NOT NULL,
  family   text NOT NULL,
  PRIMARY KEY (feed, version)
);

-- Makes hourly_feeds equal to `declared` (HOURLY_FEEDS as JSON): rows it lacks are deleted, the
-- others inserted or updated; an unchanged row is not rewritten, so the sync of every start costs
-- no write. Deleting a feed that still has publications fails on their foreign key: removing a feed
-- takes a migration that decides what happens to its rows.
CREATE FUNCTION sync_hourly_feeds(declared jsonb) RETURNS void LANGUAGE sql AS $$
  DELETE FROM hourly_feeds h
   WHERE NOT EXISTS (SELECT 1 FROM jsonb_to_recordset(declared) AS d (feed text, version text) WHERE d.feed = h.feed AND d.version = h.version);
  INSERT INTO hourly_feeds AS h (id, feed, version, source, segment, family)
  SELECT d.id, d.feed, d.version, d.source, d.segment, d.family
    FROM jsonb_to_recordset(declared) AS d (id text, feed text, version text, source text, segment text, family text)
  ON CONFLICT (feed, version) DO UPDATE
     SET id = excluded.id, source = excluded.source, segment = excluded.segment, family = excluded.family
   WHERE (h.id, h.source, h.segment, h.family) IS DISTINCT FROM (excluded.id, excluded.source, excluded.segment, excluded.family);
$$;

-- The foreign key below needs the rows now, before the runner's sync at the end of the run: the
-- runner hands the declaration to every migration's session as this setting.
DO $$
BEGIN
  IF coalesce(current_setting('platform.hourly_feeds', true), '') = '' THEN
    RAISE EXCEPTION 'migration 000160 fills hourly_feeds from HOURLY_FEEDS: apply it with lib/core/migrate.ts (make migrate), which sets platform.hourly_feeds';
  END IF;
END $$;
SELECT sync_hourly_feeds(current_setting('platform.hourly_feeds')::jsonb);

-- a publication names a catalogue file; the key replaces the CHECK lists of 000001 and 000120
ALTER TABLE feed_publications
  DROP CONSTRAINT feed_publications_feed_check,
  DROP CONSTRAINT feed_publications_version_check,
  ADD CONSTRAINT feed_publications_feed_version_fkey FOREIGN KEY (feed, version) REFERENCES hourly_feeds (feed, version);

-- Late rows of history table `p_source` for the (zone, hour) pairs given: every file of that source
-- in the catalogue is marked dirty where it has a publication row, by primary-key lookups. An hour
-- before the source's retention mark is archived (000102): the publisher refuses to publish it
-- again (publisher/publish.ts archivedFiles reads the same mark by the feed's source), so its
-- files stay clean. Returns how many files it marked.
CREATE FUNCTION mark_feed_hours_dirty(p_source text, p_zones text[], p_hours timestamp[]) RETURNS integer LANGUAGE sql AS $$
  WITH marked AS (
    UPDATE feed_publications p SET dirty = true
      FROM unnest(p_zones, p_hours) AS c (zone_id, hour)
      JOIN hourly_feeds f ON f.source = p_source
      LEFT JOIN history_retention r ON r.source = f.source
     WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.hour AND NOT p.dirty
       AND (c.hour AT TIME ZONE 'UTC') >= coalesce(r.dropped_before, '-infinity')
    RETURNING 1)
  SELECT count(*)::int FROM marked
$$;

-- A trip dirties the trip files of its end hour, the telemetry files of every hour it spans (its
-- own points are published only once it has ended, 000120) and the report of the month it started
-- in (000121).
CREATE OR REPLACE FUNCTION mark_trip_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mark_feed_hours_dirty('trips', array_agg(zone_id), array_agg(end_hour))
     FROM (SELECT DISTINCT zone_id, end_hour FROM changed_rows) c;
  PERFORM mark_feed_hours_dirty('telemetry', array_agg(zone_id), array_agg(h))
     FROM (SELECT DISTINCT zone_id, h
             FROM changed_rows r
            CROSS JOIN LATERAL generate_series(date_trunc('hour', r.start_time AT TIME ZONE 'UTC'), r.end_hour, interval '1 hour') AS h) c;
  UPDATE feed_reports r SET dirty = true
    FROM (SELECT DISTINCT zone_id, date_trunc('month', start_time AT TIME ZONE 'UTC')::date AS month FROM changed_rows) c
   WHERE r.scope = c.zone_id AND r.month = c.month AND NOT r.dirty;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION mark_event_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mark_feed_hours_dirty('events', array_agg(zone_id), array_agg(hour))
     FROM (SELECT DISTINCT zone_id, hour FROM changed_rows) c;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION mark_telemetry_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mark_feed_hours_dirty('telemetry', array_agg(zone_id), array_agg(hour))
     FROM (SELECT DISTINCT zone_id, date_trunc('hour', ts AT TIME ZONE 'UTC') AS hour FROM changed_rows) c;
  RETURN NULL;
END $$;

-- Hours of one UTC day whose files are not (cleanly) published, for the files that rows of `parent`
-- feed: the catalogue's files of that source. A telemetry day also waits for the trip files of its
-- day, whose distances were computed from it (000102). Otherwise as 000120 left it.
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
                                AND p.status = 'published' AND NOT p.dirty))
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
