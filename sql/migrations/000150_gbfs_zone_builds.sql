-- GBFS follows change, zone by zone (issue 26; docs/gbfs.md "Cadence and change detection"). The
-- publisher's 15 s tick picks the zones whose GBFS input moved since their last build, or whose
-- status files are due for their ttl refresh, and hands each to a per-zone job; idle zones cost a
-- refresh of their status files, never a reload.
--
-- The zone version of migration 000140 already moves with everything a partner may rent (vehicles'
-- state, place, battery and type, rentals, TOMP bookings, prices, the zone). GBFS also shows what no
-- vehicle list shows, counted apart so that the API's vehicle-list cache is not invalidated by it:
--   gbfs_static  what the static files are built from: the zone row, its prices, its areas
--                (geofencing, stations), the vehicle types it uses and which types its vehicles have;
--   gbfs_status  what only the status files show: a listed vehicle's GBFS id (rotated after a trip)
--                and last report.
-- The status files are rebuilt when version + gbfs_status + gbfs_static moves (every counter only
-- grows), the static files when gbfs_static moves. Like 000140, the bumps run at commit (deferred
-- constraint triggers), so the zone row's lock is held for the commit alone.
ALTER TABLE zone_versions
  ADD COLUMN gbfs_static bigint NOT NULL DEFAULT 0,
  ADD COLUMN gbfs_status bigint NOT NULL DEFAULT 0;

CREATE FUNCTION bump_zone_gbfs(p_zone text, p_static boolean) RETURNS void LANGUAGE sql AS $$
  INSERT INTO zone_versions AS zv (zone_id, gbfs_static, gbfs_status)
  SELECT p_zone, p_static::int, (NOT p_static)::int WHERE EXISTS (SELECT 1 FROM zones WHERE id = p_zone)
  ON CONFLICT (zone_id) DO UPDATE
     SET gbfs_static = zv.gbfs_static + p_static::int, gbfs_status = zv.gbfs_status + (NOT p_static)::int
$$;

CREATE FUNCTION zone_gbfs_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  CASE TG_TABLE_NAME
    WHEN 'zones' THEN
      PERFORM bump_zone_gbfs(r.id, true);
    WHEN 'vehicle_types' THEN
      -- every zone that prices the type or has a vehicle of it; its vehicle list shows the type too
      -- (form factor, range), which 000140 does not count: bump both
      PERFORM bump_zone_version(u.zone_id), bump_zone_gbfs(u.zone_id, true)
         FROM (SELECT zone_id FROM pricing WHERE vehicle_type_id = r.id
               UNION SELECT DISTINCT zone_id FROM vehicles WHERE vehicle_type_id = r.id
               ORDER BY 1) u;
    WHEN 'vehicles' THEN
      -- TG_ARGV[0]: 'static' (the zone's set of vehicle types may have changed) or 'status'
      PERFORM bump_zone_gbfs(r.zone_id, TG_ARGV[0] = 'static');
      IF TG_OP = 'UPDATE' AND OLD.zone_id IS DISTINCT FROM NEW.zone_id THEN PERFORM bump_zone_gbfs(OLD.zone_id, true); END IF;
    ELSE -- pricing, areas
      PERFORM bump_zone_gbfs(r.zone_id, true);
      IF TG_OP = 'UPDATE' AND OLD.zone_id IS DISTINCT FROM NEW.zone_id THEN PERFORM bump_zone_gbfs(OLD.zone_id, true); END IF;
  END CASE;
  RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER zones_gbfs AFTER INSERT OR UPDATE ON zones
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_gbfs_bump();
CREATE CONSTRAINT TRIGGER pricing_gbfs AFTER INSERT OR UPDATE OR DELETE ON pricing
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_gbfs_bump();
CREATE CONSTRAINT TRIGGER areas_gbfs AFTER INSERT OR UPDATE OR DELETE ON areas
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_gbfs_bump();
CREATE CONSTRAINT TRIGGER vehicle_types_gbfs AFTER UPDATE ON vehicle_types
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_gbfs_bump();
CREATE CONSTRAINT TRIGGER vehicles_gbfs_static AFTER INSERT OR DELETE ON vehicles
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_gbfs_bump('static');
CREATE CONSTRAINT TRIGGER vehicles_gbfs_static_update AFTER UPDATE ON vehicles
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.zone_id IS DISTINCT FROM NEW.zone_id OR OLD.vehicle_type_id IS DISTINCT FROM NEW.vehicle_type_id)
  EXECUTE FUNCTION zone_gbfs_bump('static');
-- a listed vehicle (ready or booked: what GBFS shows) reporting again, or its GBFS id rotated; a
-- riding vehicle's reports bump nothing (it is not listed, and its trip's end bumps the version)
CREATE CONSTRAINT TRIGGER vehicles_gbfs_status AFTER UPDATE ON vehicles
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.gbfs_id IS DISTINCT FROM NEW.gbfs_id
        OR (NEW.status IN ('ready', 'booked') AND OLD.last_seen_at IS DISTINCT FROM NEW.last_seen_at))
  EXECUTE FUNCTION zone_gbfs_bump('status');

-- What was built per zone: the counters its files were built at, the sleep window its status files
-- were built in (sleep windows turn by the clock, not by a write), when its status files were last
-- written (their ttl refresh is due GBFS_RUN_SECONDS / 2 later), and when its files are next rebuilt
-- from scratch whatever the counters say (hourly, staggered per zone: a safety net for what no
-- counter sees, such as a configuration change).
CREATE TABLE gbfs_zone_builds (
  zone_id            text PRIMARY KEY REFERENCES zones (id) ON DELETE CASCADE,
  status_token       bigint NOT NULL,
  static_token       bigint NOT NULL,
  sleep_key          text NOT NULL DEFAULT '',
  status_written_at  timestamptz NOT NULL,
  rebuild_due_at     timestamptz NOT NULL,
  built_at           timestamptz NOT NULL DEFAULT now()
);

-- The zone's pieces of the files built from it: the data of its 3.0 status files (refreshed with a
-- new envelope without rebuilding them) and its parts of every GBFS 2.2 system that includes it
-- (free_bike_status and geofencing_zones as compressed fragments, the rest as a small JSON summary),
-- shared by every client scope and language. body: a sync-flushed raw DEFLATE fragment
-- (lib/core/gzip.ts), already compressed, so stored without TOAST compression.
CREATE TABLE gbfs_zone_parts (
  zone_id  text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  part     text NOT NULL,
  sha256   text NOT NULL,
  crc32    bigint NOT NULL,
  length   bigint NOT NULL,
  body     bytea NOT NULL,
  PRIMARY KEY (zone_id, part)
);
ALTER TABLE gbfs_zone_parts ALTER COLUMN body SET STORAGE EXTERNAL;

-- What was built per GBFS 2.2 client scope (gbfsV2Scope): the digest of the zone parts its files
-- were assembled from, when its status files were last written, and its next rebuild from scratch.
CREATE TABLE gbfs_scope_builds (
  scope              text PRIMARY KEY,
  inputs             text NOT NULL,
  status_written_at  timestamptz NOT NULL,
  rebuild_due_at     timestamptz NOT NULL
);
