-- Fleet: MDS events and telemetry of single vehicles (lib/domain/fleet, ops/sim/telemetry.ts). Bulk writes live in sim.sql.

-- name: FleetLockVehicle
-- The row lock serialises state changes of one vehicle: the transition check and the write are
-- decided against the state nobody else can change until we commit.
SELECT id, zone_id, mds_state FROM vehicles WHERE id = $1 FOR UPDATE;

-- name: FleetInsertEventSetState
-- The event and the vehicle's new MDS state in one round trip (the caller holds the row lock).
WITH ins AS (
  INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids, recorded_at)
  VALUES ($1, $2, $3::text[], $4, $5, ST_SetSRID(ST_MakePoint($6, $7), 4326), $8, $9::uuid[], COALESCE($10::timestamptz, now()))
  RETURNING event_id
), upd AS (
  UPDATE vehicles SET mds_state = $4 WHERE id = $1 AND mds_state IS DISTINCT FROM $4
)
SELECT event_id FROM ins;

-- name: FleetInsertTelemetry
-- One statement: the telemetry row and the vehicle's last known position, battery and movement.
WITH ins AS (
  INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id, recorded_at)
  VALUES ($1, $2, $3, ST_SetSRID(ST_MakePoint($4, $5), 4326), $6, $7, COALESCE($8::timestamptz, now()))
  RETURNING device_id, ts, location, battery_percent
)
UPDATE vehicles v
   SET location = ins.location,
       battery_percent = ins.battery_percent,
       last_seen_at = ins.ts,
       last_moved_at = CASE WHEN ST_DistanceSphere(v.location, ins.location) > 5 THEN ins.ts ELSE v.last_moved_at END
  FROM ins
 WHERE v.id = ins.device_id
RETURNING v.id;
