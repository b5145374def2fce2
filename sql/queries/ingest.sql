-- The vehicle ingest (ingest/): a batch of vehicle reports in a few statements, whatever its size.
-- Each input is a set of parallel arrays, one element per report (unnest keeps them aligned).

-- name: IngestLockVehicles
-- The batch's vehicles locked in id order before anything writes them: two ingest processes (a
-- shared subscription splits one vehicle's reports between them) then take the row locks of a
-- batch in one order, never a deadlock. Returns the vehicles that exist with their battery and
-- faults before the batch (ingest/events.ts compares them with after), and what ingest/events.ts
-- needs to tell whether the batch may imply an event at all: a report of any other id is an unknown
-- vehicle.
SELECT v.id, v.battery_percent, v.faults, v.mds_state, v.status, z.min_battery_percent
  FROM vehicles v JOIN zones z ON z.id = v.zone_id
 WHERE v.id = ANY ($1::uuid[])
 ORDER BY v.id
   FOR NO KEY UPDATE OF v;

-- name: IngestTelemetry
-- The batch's positions: appended to telemetry (the late-data triggers mark the published hours they
-- fall in dirty, the current-state trigger keeps vehicle_current_state), each with the trip it was
-- taken on; a report already stored (a QoS 1 redelivery: the same vehicle and ts) is skipped by the
-- unique index (migration 000280). The newest new point of each vehicle becomes its last known
-- position, battery and movement, unless the vehicle has reported a later one (late and
-- out-of-order reports go to history only). Returns how many points were stored.
-- $1 device ids (known vehicles only), $2 ts, $3 lng, $4 lat, $5 battery, $6 when each arrived.
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::float8[], $4::float8[], $5::int[], $6::timestamptz[])
           AS t(device_id, ts, lng, lat, battery_percent, received_at)
), ins AS (
  INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id, recorded_at)
  SELECT i.device_id, v.zone_id, i.ts, ST_SetSRID(ST_MakePoint(i.lng, i.lat), 4326), i.battery_percent,
         (SELECT r.trip_id FROM rentals r
           WHERE r.vehicle_id = i.device_id AND r.started_at <= i.ts
             AND (r.state = 'RUNNING' OR r.ended_at >= i.ts)
           ORDER BY r.started_at DESC LIMIT 1),
         i.received_at
    FROM input i JOIN vehicles v ON v.id = i.device_id
  ON CONFLICT (device_id, ts) DO NOTHING
  RETURNING device_id, ts, location, battery_percent
), latest AS (
  SELECT DISTINCT ON (device_id) device_id, ts, location, battery_percent FROM ins ORDER BY device_id, ts DESC
), upd AS (
  UPDATE vehicles v
     SET location = l.location,
         battery_percent = l.battery_percent,
         last_seen_at = l.ts,
         last_moved_at = CASE WHEN ST_DistanceSphere(v.location, l.location) > 5 THEN l.ts ELSE v.last_moved_at END
    FROM latest l
   WHERE v.id = l.device_id AND l.ts > v.last_seen_at
  RETURNING v.id
)
SELECT (SELECT count(*)::int FROM ins) AS stored, (SELECT count(*)::int FROM upd) AS current;

-- name: IngestState
-- The batch's state reports, the newest of each vehicle: its lock and faults become the vehicle's
-- current state unless it has reported a later state; its battery unless it has reported a later
-- position. $1 device ids, $2 ts, $3 locked, $4 battery or null, $5 faults (one text array per
-- report, each as '{a,b}').
WITH input AS (
  SELECT DISTINCT ON (device_id) *
    FROM unnest($1::uuid[], $2::timestamptz[], $3::boolean[], $4::int[], $5::text[]) AS t(device_id, ts, locked, battery_percent, faults)
   ORDER BY device_id, ts DESC
)
UPDATE vehicles v
   SET locked = i.locked,
       faults = i.faults::text[],
       state_reported_at = i.ts,
       battery_percent = CASE WHEN i.battery_percent IS NOT NULL AND i.ts >= v.last_seen_at THEN i.battery_percent ELSE v.battery_percent END,
       last_seen_at = GREATEST(v.last_seen_at, i.ts)
  FROM input i
 WHERE v.id = i.device_id AND (v.state_reported_at IS NULL OR i.ts > v.state_reported_at)
RETURNING v.id;

-- name: IngestImpliedEventCandidates
-- The batch's vehicles whose own reports imply an MDS event (ingest/events.ts decides which): an
-- available vehicle, ready for partners and not on a ride, with a fault (maintenance) or below its
-- zone's minimum battery (battery_low); a vehicle the ingest took out of service for one of those,
-- whose last event was one of those (ingest/events.ts decides from the change whether it is back:
-- maintenance, battery_charged). The caller holds their row locks (IngestLockVehicles).
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT v.id, v.zone_id, v.mds_state, v.battery_percent, v.faults, v.last_seen_at, z.min_battery_percent,
       ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
       c.event_types AS last_event_types, c.event_ts AS last_event_ts
  FROM vehicles v
  JOIN zones z ON z.id = v.zone_id
  LEFT JOIN vehicle_current_state c ON c.device_id = v.id
 WHERE v.id = ANY ($1::uuid[])
   AND ((v.mds_state = 'available' AND v.status = 'ready' AND (v.battery_percent < z.min_battery_percent OR v.faults <> '{}')
         AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING'))
     OR (v.mds_state = 'non_operational' AND v.status = 'unavailable'
         AND (c.event_types = ARRAY['battery_low'] OR c.event_types = ARRAY['maintenance'])))
 ORDER BY v.id;

-- name: IngestSetStatus
-- The partner-API status that goes with an implied event (the MDS state is set by recordEvent).
UPDATE vehicles SET status = $2 WHERE id = $1;
