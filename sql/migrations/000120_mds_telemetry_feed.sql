-- MDS 2.0 /telemetry as an hourly published feed, and the publication log behind `publication_time`
-- and the publications index (issue 16).

-- the catalogue of lib/feeds/publications.ts gains mds_telemetry 2.0
ALTER TABLE feed_publications DROP CONSTRAINT feed_publications_feed_check;
ALTER TABLE feed_publications ADD CONSTRAINT feed_publications_feed_check
  CHECK (feed IN ('mds_trips', 'mds_events', 'mds_status_changes', 'insurance_trips', 'mds_telemetry'));

-- the hour file of a zone reads its telemetry by (zone, ts) range; one index per daily partition
CREATE INDEX telemetry_zone_ts ON telemetry (zone_id, ts);

-- Late telemetry (recorded after its hour was published) dirties that hour's telemetry file, by full key.
CREATE FUNCTION mark_telemetry_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, date_trunc('hour', ts AT TIME ZONE 'UTC') AS hour FROM changed_rows) c
   WHERE p.feed = 'mds_telemetry' AND p.version = '2.0' AND p.scope = c.zone_id AND p.hour = c.hour AND NOT p.dirty;
  RETURN NULL;
END $$;
CREATE TRIGGER telemetry_dirty_insert AFTER INSERT ON telemetry REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_telemetry_hours_dirty();

-- A trip's own telemetry is published only once the trip has ended (privacy: the trip row is
-- written at its end). Its arrival dirties, besides the trip files of its end hour, the telemetry
-- files of every hour it spans, so that they are republished with its points.
CREATE OR REPLACE FUNCTION mark_trip_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, end_hour FROM changed_rows) c
   CROSS JOIN (VALUES ('mds_trips', '2.0'), ('mds_trips', '1.2'), ('mds_trips', '0.4'), ('insurance_trips', '2.0')) AS f (feed, version)
   WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.end_hour AND NOT p.dirty;
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, h
            FROM changed_rows r
           CROSS JOIN LATERAL generate_series(date_trunc('hour', r.start_time AT TIME ZONE 'UTC'), r.end_hour, interval '1 hour') AS h) c
   WHERE p.feed = 'mds_telemetry' AND p.version = '2.0' AND p.scope = c.zone_id AND p.hour = c.h AND NOT p.dirty;
  RETURN NULL;
END $$;

-- Retention drops a telemetry day only once its telemetry files (and, as before, the trip files
-- whose distances were computed from it) are published and clean.
CREATE OR REPLACE FUNCTION history_unpublished_hours(parent text, day date) RETURNS integer LANGUAGE sql STABLE AS $$
  WITH f (feed, version) AS (
    SELECT feed, version FROM (VALUES ('mds_events', '2.0', 'events'), ('mds_status_changes', '1.2', 'events'), ('mds_status_changes', '0.4', 'events'),
                                      ('mds_trips', '2.0', 'trips'), ('mds_trips', '1.2', 'trips'), ('mds_trips', '0.4', 'trips'), ('insurance_trips', '2.0', 'trips'),
                                      ('mds_telemetry', '2.0', 'telemetry')) v (feed, version, source)
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

-- Every write of an hourly file (first publication, republish with changed content, forced
-- republish), with its content's digest: the first and last publication times and the republish
-- count of the publications index, and each record's MDS `publication_time` (the first write at or
-- after the record reached us). Seeded with what the rows know: their last write.
CREATE TABLE feed_publication_log (
  feed          text NOT NULL,
  version       text NOT NULL,
  scope         text NOT NULL,
  hour          timestamp NOT NULL,
  published_at  timestamptz NOT NULL,
  sha256        text NOT NULL,
  record_count  integer NOT NULL,
  PRIMARY KEY (feed, version, scope, hour, published_at)
);
CREATE INDEX feed_publication_log_scope_hour ON feed_publication_log (scope, hour);
INSERT INTO feed_publication_log (feed, version, scope, hour, published_at, sha256, record_count)
SELECT feed, version, scope, hour, published_at, sha256, record_count
  FROM feed_publications WHERE published_at IS NOT NULL AND sha256 IS NOT NULL AND record_count IS NOT NULL;
