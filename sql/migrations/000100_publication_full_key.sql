-- Late data and the publisher's sweeps at a year of history (issue 14).
--
-- The late-data triggers of 000001 filtered feed_publications on `feed IN (…)` without `version`, so
-- the primary key (feed, version, scope, hour) narrowed on its first column only and every insert
-- scanned all hours ever published for that feed. They now name each (feed, version) file of the
-- source table, which makes the update a set of primary-key lookups: one per file of each dirtied
-- (zone, hour), whatever the history. The pairs are the catalogue of lib/feeds/publications.ts.
CREATE OR REPLACE FUNCTION mark_trip_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, end_hour FROM changed_rows) c
   CROSS JOIN (VALUES ('mds_trips', '2.0'), ('mds_trips', '1.2'), ('mds_trips', '0.4'), ('insurance_trips', '2.0')) AS f (feed, version)
   WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.end_hour AND NOT p.dirty;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION mark_event_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, hour FROM changed_rows) c
   CROSS JOIN (VALUES ('mds_events', '2.0'), ('mds_status_changes', '1.2'), ('mds_status_changes', '0.4')) AS f (feed, version)
   WHERE p.feed = f.feed AND p.version = f.version AND p.scope = c.zone_id AND p.hour = c.hour AND NOT p.dirty;
  RETURN NULL;
END $$;

-- PubNeedsRepublish (sql/queries/publisher.sql) reads the outstanding rows in hour order: this index
-- holds only those (dirty, failed, pending), so the sweep reads what is due, not the history.
CREATE INDEX feed_publications_outstanding ON feed_publications (hour)
  WHERE (dirty AND status <> 'failed') OR status = 'failed' OR status = 'pending';

-- PubMissingHours bounds its anti-join to the look-back window and PubStatusRows (make
-- publish-status) selects an hour range of some zones: both read this range, not the history. The
-- primary key leads with feed and version and cannot serve a range of hours.
CREATE INDEX feed_publications_hour_scope ON feed_publications (hour, scope);
