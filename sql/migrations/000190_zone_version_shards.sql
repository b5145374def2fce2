-- Zone versions without a hot row (issue 25). Migration 000140 bumps one row per zone at commit, and
-- a row lock is released only after the commit's WAL flush: every write in a zone (rental starts and
-- ends, TOMP bookings, vehicle reports of 000150's counters) queued behind the previous write's
-- fsync, so a busy zone's writes ran one flush at a time and their tail latency grew with the zone's
-- write rate, not with the machine's load.
--
-- Each counter is now the sum of 16 shard rows. A transaction bumps the shard of its own id
-- (txid % 16, the same shard for all its bumps, so two transactions still take their zone rows in
-- the order 000140/000150 do and cannot deadlock on shards), so concurrent writers in one zone
-- mostly lock different rows and their flushes overlap (group commit). Every bump still adds 1 to
-- the zone's sum, and a new shard row starts at the bump's value, so a sum only grows and a cached
-- list or a GBFS build labelled with an older sum is still recognised as out of date.
--
-- `zone_versions` becomes a view with the same columns, so its readers (the partner vehicle list,
-- the GBFS tick: sql/queries/partner.sql, gbfs.sql) are unchanged; a lookup by zone_id reads the
-- zone's 16 rows by primary key.
CREATE TABLE zone_version_shards (
  zone_id      text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  shard        smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
  version      bigint NOT NULL DEFAULT 0,
  gbfs_static  bigint NOT NULL DEFAULT 0,
  gbfs_status  bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (zone_id, shard)
);

INSERT INTO zone_version_shards (zone_id, shard, version, gbfs_static, gbfs_status)
SELECT zone_id, 0, version, gbfs_static, gbfs_status FROM zone_versions;

DROP TABLE zone_versions;

CREATE VIEW zone_versions AS
SELECT zone_id, sum(version)::bigint AS version, sum(gbfs_static)::bigint AS gbfs_static, sum(gbfs_status)::bigint AS gbfs_status
  FROM zone_version_shards
 GROUP BY zone_id;

-- a zone's first bump creates its shard row with version 1 (000140's default: a zone's version is
-- never 0 once it exists)
CREATE OR REPLACE FUNCTION bump_zone_version(p_zone text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO zone_version_shards AS zv (zone_id, shard, version)
  SELECT p_zone, (txid_current() % 16)::smallint, 1 WHERE EXISTS (SELECT 1 FROM zones WHERE id = p_zone)
  ON CONFLICT (zone_id, shard) DO UPDATE SET version = zv.version + 1
$$;

CREATE OR REPLACE FUNCTION bump_zone_gbfs(p_zone text, p_static boolean) RETURNS void LANGUAGE sql AS $$
  INSERT INTO zone_version_shards AS zv (zone_id, shard, gbfs_static, gbfs_status)
  SELECT p_zone, (txid_current() % 16)::smallint, p_static::int, (NOT p_static)::int WHERE EXISTS (SELECT 1 FROM zones WHERE id = p_zone)
  ON CONFLICT (zone_id, shard) DO UPDATE
     SET gbfs_static = zv.gbfs_static + p_static::int, gbfs_status = zv.gbfs_status + (NOT p_static)::int
$$;
