-- The publisher claims an hour before it reads the data (status 'pending' on the first publication),
-- so that the late-data triggers of 000001 have a row to mark dirty while the file is being written:
-- a trip or event committed after the publisher's snapshot then always leads to a republish.
-- Readers treat only status = 'published' (and not dirty) as a current file.
ALTER TABLE feed_publications DROP CONSTRAINT feed_publications_status_check;
ALTER TABLE feed_publications ADD CONSTRAINT feed_publications_status_check CHECK (status IN ('published', 'failed', 'pending'));
ALTER TABLE feed_publications DROP CONSTRAINT feed_publications_check;
ALTER TABLE feed_publications ADD CONSTRAINT feed_publications_check
  CHECK (status IN ('failed', 'pending') OR (object_key IS NOT NULL AND sha256 IS NOT NULL AND record_count IS NOT NULL));
-- the sweep looks for failed hours to retry
CREATE INDEX feed_publications_failed ON feed_publications (hour) WHERE status = 'failed';
