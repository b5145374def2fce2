-- A zone's counters move once per transaction, not once per changed row (issue 41). The row
-- triggers of 000140/000150 upserted the zone's shard row (000190) once per row at commit: a
-- transaction that changed n rows of a zone made n versions of one row, each update walked the
-- versions before it, and the commit grew with n² (16,000 vehicles of one zone: 12 s of COMMIT;
-- `ops simulate` of a 100-zone day: 12 minutes). Every bump only has to move the zone's sum past what
-- a reader saw, so one bump per counter per transaction keeps every guarantee: the caches and GBFS
-- builds compare sums for equality, and a sum still only grows.
--
-- How. Each old trigger becomes a statement trigger of the same name (one per event where it had
-- several: transition tables take one event each, `_update`/`_delete` added to the name), with
-- the same counter and the same filter written over its transition tables (old and new rows paired
-- by primary key; a row whose key changed counts as changed). The three update triggers of vehicles
-- become one, vehicles_zone_version_update: each statement trigger costs a call and a join (about
-- 80 µs of a single-row report), and a report is the most frequent write. It adds the zones it touched to
-- zone_bumps_pending, one row per transaction, zone and counter (ON CONFLICT DO NOTHING: a zone
-- already pending costs one index probe, whatever the statement's size). The first time a
-- (zone, counter) becomes pending, its insert queues zone_bumps_apply, a deferred constraint trigger
-- (constraint triggers are per row, hence the table): the first of them to fire, at commit, takes
-- every pending row of the transaction and bumps each zone once, all its counters in one upsert
-- of its txid % 16 shard, in zone order; the others find nothing left. So, as before:
--   - the bumps run at commit, so the shard rows are locked for the commit alone and a reader never
--     sees a new version before the data (nor the data before it: one commit);
--   - one shard per transaction (txid_current() is the top transaction's in a savepoint too), and
--     now a deterministic lock order across zones: two committing transactions cannot deadlock on
--     shard rows;
--   - `SET CONSTRAINTS ALL IMMEDIATE` bumps at the end of each statement, as the row triggers did;
--   - a zone deleted in the same transaction is not bumped (its shard rows go with it by cascade).
-- Rentals and TOMP bookings count the zone their vehicle stands in when the statement ends (it was
-- read at commit), and a changed vehicle type counts the zones that price it or have a vehicle of
-- it then: a vehicle moved or a price added later in the transaction bumps its zones itself.
--
-- Why a shared unlogged table keyed by txid, not a temporary table or a setting: its rows are MVCC
-- rows of the transaction, so a rollback (of the transaction or of a savepoint) takes them and the
-- queued trigger events away together with the data, and a pooled connection's next transaction
-- finds nothing pending without any cleanup; it exists in every session without being created (a
-- temporary table must be made per session, and forbids PREPARE TRANSACTION); unlogged, it writes no
-- WAL, and a crash, which ends every transaction that has rows in it, empties it. COPY fires the
-- statement triggers and fills their transition tables as INSERT does; TRUNCATE fired no bump
-- before either.
CREATE UNLOGGED TABLE zone_bumps_pending (
  txid     bigint NOT NULL,
  zone_id  text NOT NULL,
  counter  text NOT NULL CHECK (counter IN ('version', 'gbfs_static', 'gbfs_status')),
  PRIMARY KEY (txid, zone_id, counter)
);

-- GROUP BY … ORDER BY: the upserts take the shard rows in zone order
CREATE FUNCTION zone_bumps_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH due AS (
    DELETE FROM zone_bumps_pending WHERE txid = txid_current() RETURNING zone_id, counter)
  INSERT INTO zone_version_shards AS zv (zone_id, shard, version, gbfs_static, gbfs_status)
  SELECT d.zone_id, (txid_current() % 16)::smallint, count(*) FILTER (WHERE d.counter = 'version'),
         count(*) FILTER (WHERE d.counter = 'gbfs_static'), count(*) FILTER (WHERE d.counter = 'gbfs_status')
    FROM due d
   WHERE EXISTS (SELECT 1 FROM zones z WHERE z.id = d.zone_id)
   GROUP BY d.zone_id
   ORDER BY d.zone_id
  ON CONFLICT (zone_id, shard) DO UPDATE
     SET version = zv.version + excluded.version, gbfs_static = zv.gbfs_static + excluded.gbfs_static,
         gbfs_status = zv.gbfs_status + excluded.gbfs_status;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER zone_bumps_apply AFTER INSERT ON zone_bumps_pending
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_bumps_apply();

-- Rows that carry their zone (zone_id; the zone itself: id): the zones of the new rows and of the
-- old ones (an update counts both, as the row triggers did when zone_id changed). TG_ARGV: the counters.
CREATE FUNCTION zone_rows_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'zones' THEN
    INSERT INTO zone_bumps_pending (txid, zone_id, counter)
    SELECT DISTINCT txid_current(), n.id, c.counter FROM new_rows n, unnest(TG_ARGV) AS c (counter)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO zone_bumps_pending (txid, zone_id, counter)
    SELECT DISTINCT txid_current(), n.zone_id, c.counter FROM new_rows n, unnest(TG_ARGV) AS c (counter)
    ON CONFLICT DO NOTHING;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO zone_bumps_pending (txid, zone_id, counter)
    SELECT DISTINCT txid_current(), o.zone_id, c.counter FROM old_rows o, unnest(TG_ARGV) AS c (counter)
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$;

-- An update of vehicles: every counter in one pass over the transition tables (a vehicle update is
-- the hot write: a report, a rental's start and end), each with the WHEN of the row trigger it
-- replaces: vehicles_zone_version_update (version), vehicles_gbfs_static_update, vehicles_gbfs_status.
-- The old zone of a vehicle that moved counts for version and gbfs_static (000140, 000150).
CREATE FUNCTION vehicles_update_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO zone_bumps_pending (txid, zone_id, counter)
  SELECT DISTINCT txid_current(), b.zone_id, b.counter
    FROM new_rows n
    FULL JOIN old_rows o ON o.id = n.id
   CROSS JOIN LATERAL (VALUES
     (n.zone_id, 'version', o.id IS NULL
        OR o.zone_id IS DISTINCT FROM n.zone_id OR o.status IS DISTINCT FROM n.status
        OR o.mds_state IS DISTINCT FROM n.mds_state OR o.locked IS DISTINCT FROM n.locked
        OR o.vehicle_type_id IS DISTINCT FROM n.vehicle_type_id OR o.code IS DISTINCT FROM n.code
        OR (n.mds_state NOT IN ('on_trip', 'reserved')
            AND (o.battery_percent IS DISTINCT FROM n.battery_percent OR NOT ST_Equals(o.location, n.location)))),
     (n.zone_id, 'gbfs_static', o.id IS NULL
        OR o.zone_id IS DISTINCT FROM n.zone_id OR o.vehicle_type_id IS DISTINCT FROM n.vehicle_type_id),
     (n.zone_id, 'gbfs_status', o.id IS NULL
        OR o.gbfs_id IS DISTINCT FROM n.gbfs_id
        OR (n.status IN ('ready', 'booked') AND o.last_seen_at IS DISTINCT FROM n.last_seen_at)),
     (o.zone_id, 'version', n.id IS NULL OR o.zone_id IS DISTINCT FROM n.zone_id),
     (o.zone_id, 'gbfs_static', n.id IS NULL OR o.zone_id IS DISTINCT FROM n.zone_id)
   ) AS b (zone_id, counter, hit)
   WHERE b.hit AND b.zone_id IS NOT NULL
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

-- Rentals and TOMP bookings: the version of the zone their vehicle stands in; an update counts when
-- the state changed (a booking: or its expiry), as the WHEN of the row triggers said.
CREATE FUNCTION vehicle_rows_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO zone_bumps_pending (txid, zone_id, counter)
    SELECT DISTINCT txid_current(), v.zone_id, 'version' FROM new_rows n JOIN vehicles v ON v.id = n.vehicle_id
    ON CONFLICT DO NOTHING;
  ELSIF TG_TABLE_NAME = 'tomp_bookings' THEN
    INSERT INTO zone_bumps_pending (txid, zone_id, counter)
    SELECT DISTINCT txid_current(), v.zone_id, 'version'
      FROM new_rows n LEFT JOIN old_rows o ON o.id = n.id JOIN vehicles v ON v.id = n.vehicle_id
     WHERE o.id IS NULL OR o.state IS DISTINCT FROM n.state OR o.expires_at IS DISTINCT FROM n.expires_at
    ON CONFLICT DO NOTHING;
  ELSE
    INSERT INTO zone_bumps_pending (txid, zone_id, counter)
    SELECT DISTINCT txid_current(), v.zone_id, 'version'
      FROM new_rows n LEFT JOIN old_rows o ON o.id = n.id JOIN vehicles v ON v.id = n.vehicle_id
     WHERE o.id IS NULL OR o.state IS DISTINCT FROM n.state
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$;

-- A vehicle type: every zone that prices it or has a vehicle of it, version and gbfs_static (000150)
CREATE FUNCTION vehicle_types_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO zone_bumps_pending (txid, zone_id, counter)
  SELECT DISTINCT txid_current(), u.zone_id, c.counter
    FROM (SELECT p.zone_id FROM pricing p JOIN new_rows n ON p.vehicle_type_id = n.id
          UNION SELECT v.zone_id FROM vehicles v JOIN new_rows n ON v.vehicle_type_id = n.id) u,
         (VALUES ('version'), ('gbfs_static')) AS c (counter)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

DROP TRIGGER vehicles_zone_version ON vehicles;
DROP TRIGGER vehicles_zone_version_update ON vehicles;
DROP TRIGGER rentals_zone_version ON rentals;
DROP TRIGGER rentals_zone_version_update ON rentals;
DROP TRIGGER tomp_bookings_zone_version ON tomp_bookings;
DROP TRIGGER tomp_bookings_zone_version_update ON tomp_bookings;
DROP TRIGGER pricing_zone_version ON pricing;
DROP TRIGGER zones_zone_version ON zones;
DROP TRIGGER zones_gbfs ON zones;
DROP TRIGGER pricing_gbfs ON pricing;
DROP TRIGGER areas_gbfs ON areas;
DROP TRIGGER vehicle_types_gbfs ON vehicle_types;
DROP TRIGGER vehicles_gbfs_static ON vehicles;
DROP TRIGGER vehicles_gbfs_static_update ON vehicles;
DROP TRIGGER vehicles_gbfs_status ON vehicles;
DROP FUNCTION zone_version_bump();
DROP FUNCTION zone_gbfs_bump();
DROP FUNCTION bump_zone_version(text);
DROP FUNCTION bump_zone_gbfs(text, boolean);

-- 000140: the version
CREATE TRIGGER vehicles_zone_version AFTER INSERT ON vehicles REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');
CREATE TRIGGER vehicles_zone_version_delete AFTER DELETE ON vehicles REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');
-- every counter of a vehicle update (vehicles_update_bump): disabling it stops all three
CREATE TRIGGER vehicles_zone_version_update AFTER UPDATE ON vehicles REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vehicles_update_bump();
CREATE TRIGGER rentals_zone_version AFTER INSERT ON rentals REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vehicle_rows_bump();
CREATE TRIGGER rentals_zone_version_update AFTER UPDATE ON rentals REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vehicle_rows_bump();
CREATE TRIGGER tomp_bookings_zone_version AFTER INSERT ON tomp_bookings REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vehicle_rows_bump();
CREATE TRIGGER tomp_bookings_zone_version_update AFTER UPDATE ON tomp_bookings REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vehicle_rows_bump();
CREATE TRIGGER pricing_zone_version AFTER INSERT ON pricing REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');
CREATE TRIGGER pricing_zone_version_update AFTER UPDATE ON pricing REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');
CREATE TRIGGER pricing_zone_version_delete AFTER DELETE ON pricing REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');
CREATE TRIGGER zones_zone_version AFTER INSERT ON zones REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');
CREATE TRIGGER zones_zone_version_update AFTER UPDATE ON zones REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('version');

-- 000150: the GBFS counters
CREATE TRIGGER zones_gbfs AFTER INSERT ON zones REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER zones_gbfs_update AFTER UPDATE ON zones REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER pricing_gbfs AFTER INSERT ON pricing REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER pricing_gbfs_update AFTER UPDATE ON pricing REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER pricing_gbfs_delete AFTER DELETE ON pricing REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER areas_gbfs AFTER INSERT ON areas REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER areas_gbfs_update AFTER UPDATE ON areas REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER areas_gbfs_delete AFTER DELETE ON areas REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER vehicle_types_gbfs AFTER UPDATE ON vehicle_types REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION vehicle_types_bump();
CREATE TRIGGER vehicles_gbfs_static AFTER INSERT ON vehicles REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
CREATE TRIGGER vehicles_gbfs_static_delete AFTER DELETE ON vehicles REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION zone_rows_bump('gbfs_static');
