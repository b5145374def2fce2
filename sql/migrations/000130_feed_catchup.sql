-- History catch-up of the hourly files (publisher/schedule.ts): per zone and feed, the hour before
-- which every closed hour since the zone began has a publication row. The cron's look-back covers
-- the last hours; older hours without a row (a zone created with history, a publisher down for
-- longer than the look-back) are found by scanning forward from this mark a bounded chunk per
-- tick, so a year of missing history costs the same per tick as a day. No row: the zone's first
-- hour. Rows are never deleted by retention (it drops event partitions, not publication rows), so
-- the mark only moves forward.
CREATE TABLE feed_catchup (
  zone_id          text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  feed             text NOT NULL,
  version          text NOT NULL,
  complete_before  timestamp NOT NULL,
  PRIMARY KEY (zone_id, feed, version)
);
