-- The rental engine (lib/domain/rentals) and its housekeeping jobs (publisher/jobs/rentals.ts).
-- Business times are parameters ($now from the injected clock), never SQL now().

-- name: RentalGet
-- $2 null: any partner (engine, jobs); otherwise only that partner's rental.
-- rental_records (migration 000020) joins rentals to vehicles, so these are NOT NULL columns of
-- theirs (a view's columns carry no NOT NULL); vehicle_start_*: ST_X/ST_Y of a NOT NULL point.
-- not null: id, partner_id, user_id, vehicle_id, vehicle_code, zone_id, trip_id, source, state, beginners_mode
-- not null: licence_validated, ride_type, currency, vat_rate, started_at, vehicle_start_lng, vehicle_start_lat
SELECT * FROM rental_records WHERE id = $1 AND ($2::uuid IS NULL OR partner_id = $2);

-- name: RentalListByUser
-- rental_records' NOT NULL columns, as in RentalGet.
-- not null: id, partner_id, user_id, vehicle_id, vehicle_code, zone_id, trip_id, source, state, beginners_mode
-- not null: licence_validated, ride_type, currency, vat_rate, started_at, vehicle_start_lng, vehicle_start_lat
SELECT * FROM rental_records WHERE user_id = $1 AND partner_id = $2 ORDER BY started_at DESC, id LIMIT $3;

-- name: RentalActiveByUser
-- rental_records' NOT NULL columns, as in RentalGet.
-- not null: id, partner_id, user_id, vehicle_id, vehicle_code, zone_id, trip_id, source, state, beginners_mode
-- not null: licence_validated, ride_type, currency, vat_rate, started_at, vehicle_start_lng, vehicle_start_lat
SELECT * FROM rental_records WHERE user_id = $1 AND partner_id = $2 AND state = 'RUNNING';

-- name: RentalExpireClaims
-- Phase 1 of a start, first statement: the claims (STARTING rentals, migration 000260) of this vehicle
-- ($1) or this user ($2) that have expired, left by a process that died between the phases, no longer
-- hold them. Deleted here, under the claim's row lock: a process still alive finds its claim gone at
-- phase 2 and calls its start off. Returns the vehicles whose claims went, which the engine relocks.
DELETE FROM rentals
 WHERE state = 'STARTING' AND claim_expires_at <= $3 AND (vehicle_id = $1 OR user_id = $2)
RETURNING id, vehicle_id;

-- name: RentalUserForStart
-- FOR SHARE: a concurrent GDPR erasure (which locks the user FOR UPDATE) waits for this claim to
-- commit; phase 2 locks the user again and calls the start off when it was erased meanwhile.
-- `running` (a starting or running rental) saves a round trip; a claim that commits after this
-- snapshot is still caught by rentals_one_running_per_user at the insert.
SELECT u.id, EXISTS (SELECT 1 FROM rentals r WHERE r.user_id = u.id AND r.state IN ('STARTING', 'RUNNING')) AS running
  FROM users u WHERE u.id = $1 AND u.partner_id = $2 AND u.deleted_at IS NULL
   FOR SHARE OF u;

-- name: RentalLockVehicleForStart
-- The vehicle row lock serialises every claim on one vehicle; the checks below it are decided
-- against a state nobody else can change until we commit. $2/$3: user position or nulls; $6 the user.
-- A claim (STARTING) counts as a running rental: the vehicle is taken until it is confirmed or released.
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT v.id, v.code, v.zone_id, v.vehicle_type_id, v.status, v.mds_state, v.battery_percent,
       ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
       CASE WHEN $2::float8 IS NULL OR $3::float8 IS NULL THEN NULL
            ELSE ST_Distance(v.location::geography, ST_SetSRID(ST_MakePoint($2::float8, $3::float8), 4326)::geography) END AS user_distance_m,
       z.timezone, z.sleep_windows, z.status AS zone_status, z.min_battery_percent, z.unlock_distance_m,
       z.licence_verification_required, z.reduced_speed_kph, z.max_speed_kph, z.currency, z.vat_rate,
       p.start_price, p.price_per_minute,
       -- the city's slow zone in force where the vehicle stands (the lowest limit, as the speed round
       -- of publisher/policy/speed.ts decides it): the start gives the vehicle that limit
       cs.id AS city_area_id, cs.policy_id AS city_policy_id, cs.rule_id AS city_rule_id, cs.max_speed_kph AS city_max_speed_kph,
       -- the one zone-rules decision (migration 000081) at the vehicle's position
       (zone_rules_at(v.zone_id, ST_X(v.location), ST_Y(v.location), v.vehicle_type_id)).ride_start_allowed AS start_allowed,
       -- a pending TOMP booking holds the vehicle for its own user only ($6)
       EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING' AND b.expires_at > $4 AND b.user_id <> $6) AS held_by_other,
       EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING' AND b.expires_at > $4 AND b.user_id = $6) AS held_by_user,
       EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state IN ('STARTING', 'RUNNING')) AS has_running_rental,
       (NOT EXISTS (SELECT 1 FROM partner_zones pz WHERE pz.partner_id = $5)
        OR EXISTS (SELECT 1 FROM partner_zones pz WHERE pz.partner_id = $5 AND pz.zone_id = v.zone_id)) AS zone_allowed
  FROM vehicles v
  JOIN zones z ON z.id = v.zone_id
  LEFT JOIN pricing p ON p.zone_id = v.zone_id AND p.vehicle_type_id = v.vehicle_type_id
  LEFT JOIN LATERAL (
    SELECT a.id, a.policy_id, a.rule_id, a.max_speed_kph
      FROM areas a JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
     WHERE a.zone_id = v.zone_id AND a.source = 'city' AND a.area_type = 'slow-zone' AND ST_Intersects(a.geom, v.location)
       AND (cardinality(a.vehicle_types) = 0 OR v.vehicle_type_id = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))
     ORDER BY a.max_speed_kph, a.id
     LIMIT 1) cs ON true
 WHERE v.id = $1
   FOR UPDATE OF v;

-- name: RentalClaim
-- Phase 1's write: the rental as a claim (STARTING until $16). A second starting or running rental of
-- the user or the vehicle fails on the partial unique indexes (rentals_one_running_per_user /
-- _per_vehicle). The vehicle itself is not touched: it stays ready (or booked) in every feed until
-- phase 2 confirms the rental.
INSERT INTO rentals (partner_id, user_id, vehicle_id, zone_id, source, state, claim_expires_at, beginners_mode, licence_validated, group_id,
                     ride_type, currency, vat_rate, start_price, price_per_minute, started_at, user_start_location,
                     vehicle_start_location, start_battery_percent, created_at, updated_at)
SELECT $1, $2, v.id, v.zone_id, $4, 'STARTING', $16, $5, $6, $7, $8, $9, $10, $11, $12, $13,
       CASE WHEN $14::float8 IS NULL OR $15::float8 IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint($14::float8, $15::float8), 4326) END,
       v.location, v.battery_percent, $13, $13
  FROM vehicles v WHERE v.id = $3
RETURNING id, trip_id;

-- name: RentalLockClaim
-- Phase 2, first statement: the claim ($1) and its vehicle under row locks, its user FOR SHARE (an
-- erasure waits, as at phase 1), and the vehicle checked again: between the phases it may have been
-- taken out of service or held by another user's TOMP booking. No row: the claim is gone (expired and
-- deleted by another start or the sweep).
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
SELECT r.id, r.vehicle_id, v.zone_id, v.mds_state, v.battery_percent, ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
       u.deleted_at IS NULL AS user_active,
       (v.status = 'ready'
        OR (v.status = 'booked' AND EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING' AND b.expires_at > $2 AND b.user_id = r.user_id)))
       AND NOT EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING' AND b.expires_at > $2 AND b.user_id <> r.user_id)
         AS vehicle_ok
  FROM rentals r
  JOIN vehicles v ON v.id = r.vehicle_id
  JOIN users u ON u.id = r.user_id
 WHERE r.id = $1 AND r.state = 'STARTING'
   FOR UPDATE OF r, v
   FOR SHARE OF u;

-- name: RentalConfirm
-- Phase 2's write: the claim becomes the running rental, started now ($2, after the vehicle
-- answered), and its vehicle riding and unlocked, in one statement. Conditional on STARTING: a claim
-- deleted meanwhile confirms nothing.
WITH started AS (
  UPDATE rentals r
     SET state = 'RUNNING', claim_expires_at = NULL, started_at = $2, updated_at = $2,
         vehicle_start_location = v.location, start_battery_percent = v.battery_percent
    FROM vehicles v
   WHERE r.id = $1 AND r.state = 'STARTING' AND v.id = r.vehicle_id
  RETURNING r.id, r.vehicle_id
), vehicle AS (
  UPDATE vehicles SET status = 'riding', locked = false WHERE id = (SELECT vehicle_id FROM started)
)
SELECT id FROM started;

-- name: RentalVehicleTakenByOther
-- Before a compensating lock: whether another starting or running rental than $1 holds the vehicle
-- $2 now (our claim expired and someone else's start took the vehicle), whose rider the lock would
-- shut out.
-- EXISTS is never null.
-- not null: taken
SELECT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = $2 AND r.id <> $1 AND r.state IN ('STARTING', 'RUNNING')) AS taken;

-- name: RentalReleaseClaim
-- A start called off after phase 1: its claim goes, and the vehicle and user are free again. Nothing
-- else was written for it (no event, no trip, no booking), so nothing else is undone.
DELETE FROM rentals WHERE id = $1 AND state = 'STARTING' RETURNING id;

-- name: RentalRenewExpiredClaims
-- The sweep of claims left by processes that died between the phases: takes the expired ones
-- ($1: now) for another claim period ($2) so that no start takes their vehicle while the sweep
-- relocks it; a conditional update, so of two sweepers one takes each claim.
UPDATE rentals SET claim_expires_at = $2, updated_at = $1
 WHERE id IN (SELECT id FROM rentals WHERE state = 'STARTING' AND claim_expires_at <= $1 ORDER BY claim_expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)
   AND state = 'STARTING' AND claim_expires_at <= $1
RETURNING id, vehicle_id;

-- name: RentalLockForEnd
-- Locks the rental and its vehicle, for the end's check (before the lock command) and for its write
-- (after it). A second concurrent end waits here and then reads the ended row. A claim (STARTING) is
-- no rental yet: not found.
-- start_*, lng, lat: of NOT NULL points; ride_distance_m is COALESCE(…, 0) over one aggregate row.
-- not null: start_lng, start_lat, lng, lat, distance_m
SELECT r.id, r.partner_id, r.user_id, r.vehicle_id, r.zone_id, r.trip_id, r.state, r.started_at,
       r.start_price, r.price_per_minute, r.vat_rate, r.ride_type,
       ST_X(r.vehicle_start_location) AS start_lng, ST_Y(r.vehicle_start_location) AS start_lat,
       v.vehicle_type_id, vt.form_factor, v.battery_percent, v.mds_state, v.last_moved_at,
       ST_X(v.location) AS lng, ST_Y(v.location) AS lat, p.trip_type,
       -- the ride's line from start through its telemetry to here (migration 000131), in the same round trip
       ride_distance_m(r.trip_id, r.vehicle_start_location, v.location) AS distance_m
  FROM rentals r
  JOIN vehicles v ON v.id = r.vehicle_id
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
  JOIN partners p ON p.id = r.partner_id
 WHERE r.id = $1 AND ($2::uuid IS NULL OR r.partner_id = $2) AND r.state <> 'STARTING'
   FOR UPDATE OF r, v;

-- name: RentalRideDistance
-- A running ride's distance so far: from its start through its telemetry to where the vehicle is now
-- (ride_distance_m, migration 000131), as the end will count it.
-- ride_distance_m is COALESCE(…, 0) over one aggregate row: never null.
-- not null: distance_m
SELECT ride_distance_m(r.trip_id, r.vehicle_start_location, v.location) AS distance_m
  FROM rentals r JOIN vehicles v ON v.id = r.vehicle_id
 WHERE r.id = $1;

-- name: RentalEnd
-- One statement for the rental, its vehicle and its trip. Conditional on RUNNING: whatever happened
-- before, only one end of a rental can ever commit. The trip takes the new values from RETURNING
-- (CTEs share one snapshot, so the updated row is not visible to a plain SELECT here); the user's
-- ride count is their ended rentals before this one, plus this one.
WITH ended AS (
  UPDATE rentals r
     SET state = $2, ended_at = $3,
         user_end_location = CASE WHEN $4::float8 IS NULL OR $5::float8 IS NULL THEN NULL ELSE ST_SetSRID(ST_MakePoint($4::float8, $5::float8), 4326) END,
         vehicle_end_location = v.location, end_battery_percent = v.battery_percent,
         duration_min = $6, distance_m = $7, subtotal = $8, total_amount = $9, vat_amount = $10,
         receipt_key = $11, updated_at = $3
    FROM vehicles v
   WHERE r.id = $1 AND r.state = 'RUNNING' AND v.id = r.vehicle_id
  RETURNING r.*
), vehicle AS (
  -- ready and locked again, with a fresh GBFS id (GBFS privacy: ids rotate after every trip)
  UPDATE vehicles SET status = 'ready', locked = true, gbfs_id = gen_random_uuid()
   WHERE id = (SELECT vehicle_id FROM ended)
), trip AS (
  INSERT INTO trips (trip_id, rental_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time,
                     start_location, end_location, distance_m, duration_s, is_group_ride, ride_type, user_ride_count)
  SELECT e.trip_id, e.id, e.vehicle_id, e.zone_id, $12, $13, e.started_at, e.ended_at, e.vehicle_start_location, e.vehicle_end_location,
         e.distance_m, $14, e.ride_type <> 'solo', e.ride_type,
         (SELECT count(*) FROM rentals u WHERE u.user_id = e.user_id AND u.state NOT IN ('STARTING', 'RUNNING')) + 1
    FROM ended e
), speed AS (
  -- a ride in beginners' mode gives its vehicle the zone's normal limit back ($3): a command the
  -- speed round sends (publisher/policy/speed.ts), so the next rider is not slowed. A city's limit of
  -- the ride (area_id set) is the round's own to release.
  INSERT INTO vehicle_speed_commands AS c (vehicle_id, zone_id, wanted_kph, wanted_at)
  SELECT e.vehicle_id, e.zone_id, z.max_speed_kph, $3 FROM ended e JOIN zones z ON z.id = e.zone_id WHERE e.beginners_mode
  ON CONFLICT (vehicle_id) DO UPDATE
    SET wanted_kph = EXCLUDED.wanted_kph, wanted_at = EXCLUDED.wanted_at, attempts = 0, last_attempt_at = NULL, failures = 0, last_error = NULL
    WHERE c.area_id IS NULL AND c.wanted_kph <> EXCLUDED.wanted_kph
)
SELECT id FROM ended;

-- name: ZoneRulesAt
-- The zone rules at a point for a vehicle type (zone_rules_at, migration 000081: the decision the
-- GBFS geofencing rules are published from) plus the areas a parking photo decision looks at.
-- The permissions are never null: zone_rules_at (migration 000081) of an existing zone gives the
-- deciding area's rule or the zone's global rule, both computed from NOT NULL columns.
-- not null: ride_start_allowed, ride_end_allowed, ride_through_allowed
SELECT z.parking_mode, zr.ride_start_allowed, zr.ride_end_allowed, zr.ride_through_allowed, zr.area_type,
       EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = z.id AND a.area_type = 'parking-spot' AND ST_Intersects(a.geom, pt.g)
                 AND (cardinality(a.vehicle_types) = 0 OR $4 = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))) AS in_parking_spot,
       EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = z.id AND a.area_type = 'incentive' AND ST_Intersects(a.geom, pt.g)
                 AND (cardinality(a.vehicle_types) = 0 OR $4 = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))) AS in_incentive
  FROM zones z
 CROSS JOIN (SELECT ST_SetSRID(ST_MakePoint($2::float8, $3::float8), 4326) AS g) pt
  LEFT JOIN vehicle_types vt ON vt.id = $4
 CROSS JOIN LATERAL zone_rules_at(z.id, $2::float8, $3::float8, $4) zr
 WHERE z.id = $1;

-- name: RentalIdleCandidates
-- Running rentals whose vehicle has not moved since $1 (and that started before it).
SELECT r.id
  FROM rentals r JOIN vehicles v ON v.id = r.vehicle_id
 WHERE r.state = 'RUNNING' AND r.started_at <= $1 AND v.last_moved_at <= $1
 ORDER BY r.started_at
 LIMIT $2;

-- name: RentalPhotoTarget
SELECT r.id, r.state, r.ended_at, r.zone_id, r.photo_decision,
       ST_X(r.vehicle_end_location) AS lng, ST_Y(r.vehicle_end_location) AS lat, vt.form_factor, v.vehicle_type_id
  FROM rentals r
  JOIN vehicles v ON v.id = r.vehicle_id
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
 WHERE r.id = $1;

-- name: RentalRecordPhoto
-- One decision per rental; a bad-photo decision may be replaced by a new upload inside the window.
UPDATE rentals
   SET photo_key = $2, photo_decision = $3, photo_decided_at = $4, updated_at = $4
 WHERE id = $1 AND state <> 'RUNNING' AND (photo_decision IS NULL OR photo_decision = 'bad-photo')
   AND ended_at + interval '30 minutes' > $4
RETURNING id;

-- name: RentalExpirePhotoWindows
-- No photo within 30 minutes of the end: bad-parking (requirement). SKIP LOCKED lets several
-- workers sweep at once; the conditions are re-checked on the locked rows.
WITH due AS (
  SELECT id FROM rentals
   WHERE state <> 'RUNNING' AND photo_decision IS NULL AND ended_at + interval '30 minutes' <= $1
   ORDER BY ended_at
   LIMIT $2
     FOR UPDATE SKIP LOCKED
)
UPDATE rentals r SET photo_decision = 'bad-parking', photo_decided_at = $1, updated_at = $1
  FROM due WHERE r.id = due.id AND r.photo_decision IS NULL
RETURNING r.id;

-- name: RentalSpeedAtStart
-- The limit a start gave its vehicle (lib/domain/rentals/engine.ts), from then on the speed round's
-- to keep (publisher/policy/speed.ts, vehicle_speed_commands of migration 000300): the city's slow
-- zone it started in ($3 area, $4 policy, $5 rule; the round gives the normal limit back when the
-- vehicle leaves it or the ride ends), or, with $3 NULL, its beginners' limit (a restore still due
-- from an earlier ride is replaced; RentalEnd asks for the normal limit back after the ride).
-- $8: the vehicle acknowledged; else the round retries it, counted.
INSERT INTO vehicle_speed_commands AS c (vehicle_id, zone_id, area_id, policy_id, rule_id, wanted_kph, wanted_at,
                                         acked_kph, acked_at, attempts, last_attempt_at, failures, last_error)
VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $8 THEN $6::int END, CASE WHEN $8 THEN $7::timestamptz END, 1, $7,
        CASE WHEN $8 THEN 0 ELSE 1 END, $9)
ON CONFLICT (vehicle_id) DO UPDATE
  SET zone_id = EXCLUDED.zone_id, area_id = EXCLUDED.area_id, policy_id = EXCLUDED.policy_id, rule_id = EXCLUDED.rule_id,
      wanted_kph = EXCLUDED.wanted_kph, wanted_at = EXCLUDED.wanted_at, acked_kph = EXCLUDED.acked_kph, acked_at = EXCLUDED.acked_at,
      attempts = EXCLUDED.attempts, last_attempt_at = EXCLUDED.last_attempt_at, failures = EXCLUDED.failures, last_error = EXCLUDED.last_error;
