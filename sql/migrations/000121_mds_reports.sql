-- MDS 2.0 monthly reports (/reports/{YYYY-MM}.csv, issue 16): one CSV per zone and closed month,
-- written by the publisher (publisher/reports.ts) and republished when late trips change it.
CREATE TABLE feed_reports (
  scope         text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  month         date NOT NULL CHECK (date_trunc('month', month) = month),
  object_key    text NOT NULL,
  sha256        text NOT NULL,
  row_count     integer NOT NULL CHECK (row_count >= 0),
  published_at  timestamptz NOT NULL,
  dirty         boolean NOT NULL DEFAULT false,
  PRIMARY KEY (scope, month)
);
CREATE INDEX feed_reports_dirty ON feed_reports (month) WHERE dirty;

-- A trip that arrives late dirties the report of the month it started in, besides its hour files
-- (000100) and the telemetry hours it spans (000120). Whole function, as 000120 left it, plus that.
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
  UPDATE feed_reports r SET dirty = true
    FROM (SELECT DISTINCT zone_id, date_trunc('month', start_time AT TIME ZONE 'UTC')::date AS month FROM changed_rows) c
   WHERE r.scope = c.zone_id AND r.month = c.month AND NOT r.dirty;
  RETURN NULL;
END $$;
