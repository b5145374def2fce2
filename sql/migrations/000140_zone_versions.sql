-- A version per zone of what a partner may rent there, so that a cached vehicle list (the API's
-- most frequent read, api/partner/vehicle-list.ts) never contradicts a write its caller could have
-- seen, in any API process: every write that can change a zone's list (a vehicle's state, place,
-- battery or type; a rental or a TOMP booking starting or ending; the zone's prices or rules) bumps
-- the zone's version in the same transaction, and a cached list is served only while the version it
-- was rendered at is still the current one (read with the request, in one primary-key lookup).
--
-- The bump runs at commit (deferred constraint triggers), so the row lock it takes is held for the
-- commit alone, not for the whole transaction: rental starts in one zone do not queue behind each
-- other's vehicle commands. The list query reads the version in the same snapshot as the vehicles,
-- so a list is never labelled with a version newer than its content.
CREATE TABLE zone_versions (
  zone_id  text PRIMARY KEY REFERENCES zones (id) ON DELETE CASCADE,
  version  bigint NOT NULL DEFAULT 1
);
INSERT INTO zone_versions (zone_id) SELECT id FROM zones;

-- a zone deleted in the same transaction has no list left to invalidate (and no row to reference)
CREATE FUNCTION bump_zone_version(p_zone text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO zone_versions AS zv (zone_id) SELECT p_zone WHERE EXISTS (SELECT 1 FROM zones WHERE id = p_zone)
  ON CONFLICT (zone_id) DO UPDATE SET version = zv.version + 1
$$;

CREATE FUNCTION zone_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  CASE TG_TABLE_NAME
    WHEN 'zones' THEN
      PERFORM bump_zone_version(r.id);
    WHEN 'vehicles', 'pricing' THEN
      PERFORM bump_zone_version(r.zone_id);
      IF TG_OP = 'UPDATE' AND OLD.zone_id IS DISTINCT FROM NEW.zone_id THEN PERFORM bump_zone_version(OLD.zone_id); END IF;
    ELSE -- rentals, tomp_bookings: the zone the vehicle stands in
      PERFORM bump_zone_version(v.zone_id) FROM vehicles v WHERE v.id = r.vehicle_id;
  END CASE;
  RETURN NULL;
END
$$;

-- a vehicle: whatever the list shows or filters on; a riding vehicle's telemetry (it is not listed) bumps nothing
CREATE CONSTRAINT TRIGGER vehicles_zone_version AFTER INSERT OR DELETE ON vehicles
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER vehicles_zone_version_update AFTER UPDATE ON vehicles
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.zone_id IS DISTINCT FROM NEW.zone_id OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.mds_state IS DISTINCT FROM NEW.mds_state OR OLD.locked IS DISTINCT FROM NEW.locked
        OR OLD.vehicle_type_id IS DISTINCT FROM NEW.vehicle_type_id OR OLD.code IS DISTINCT FROM NEW.code
        OR (NEW.mds_state NOT IN ('on_trip', 'reserved')
            AND (OLD.battery_percent IS DISTINCT FROM NEW.battery_percent OR NOT ST_Equals(OLD.location, NEW.location))))
  EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER rentals_zone_version AFTER INSERT ON rentals
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER rentals_zone_version_update AFTER UPDATE ON rentals
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER tomp_bookings_zone_version AFTER INSERT ON tomp_bookings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER tomp_bookings_zone_version_update AFTER UPDATE ON tomp_bookings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
  EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER pricing_zone_version AFTER INSERT OR UPDATE OR DELETE ON pricing
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_version_bump();
CREATE CONSTRAINT TRIGGER zones_zone_version AFTER INSERT OR UPDATE ON zones
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zone_version_bump();
