-- The publication sink (lib/publication/, issue 27): hourly files, GBFS snapshots and monthly
-- reports reach the store through one sink, gzip, and every index row's sha256 is the sha256 of the
-- stored bytes (what the store holds under object_key). Until now the three meant three things by
-- it: the gzip bytes (hourly files), a digest of the document's pieces (GBFS), the plain CSV
-- (reports).

-- GBFS decides whether a file's data changed without compressing it again, by the digest of its
-- pieces: that identity gets a column of its own. Existing rows leave it null, which no build
-- matches: each file is written once more (the status files at their next refresh, the others at
-- their zone's or scope's hourly rebuild), and its sha256 then names the stored bytes.
ALTER TABLE gbfs_snapshots ADD COLUMN content_digest text;

-- Reports were stored as plain CSV; the sink stores them gzip (served with Content-Encoding
-- negotiation, like the other files) and records their size like the other indexes. Every report is
-- dirtied so that the publisher's next sweep writes it through the sink; a month whose trips
-- retention dropped is never recomputed (ReportsDue), and its plain CSV stays what is served.
ALTER TABLE feed_reports ADD COLUMN bytes bigint CHECK (bytes >= 0);
UPDATE feed_reports SET dirty = true WHERE NOT dirty;
