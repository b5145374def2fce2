-- GBFS 3.0 gbfs.json lists only the feeds of the caller's role, so each zone has one discovery file
-- per role, stored as file `gbfs.{role}` (object key gbfs/3.0/{zone}/gbfs.{role}.json.gz). The
-- original check allowed only [a-z_]; allow one dotted variant suffix.
ALTER TABLE gbfs_snapshots DROP CONSTRAINT gbfs_snapshots_file_check;
ALTER TABLE gbfs_snapshots ADD CONSTRAINT gbfs_snapshots_file_check CHECK (file ~ '^[a-z_]+(\.[a-z_]+)?$');
