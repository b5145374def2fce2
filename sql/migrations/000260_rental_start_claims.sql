-- A rental start in two short transactions around the vehicle's unlock (issue 41, "a slow vehicle
-- stalls nobody else"; lib/domain/rentals/engine.ts). Phase 1 inserts the rental as STARTING: a
-- claim on its vehicle and its user that the partial unique indexes see, so a second start of either
-- fails at once. The unlock then goes out with no transaction open; phase 2 turns the claim into a
-- RUNNING rental (with its trip_start event) or deletes it. A STARTING rental is nobody's business but
-- the engine's: rental_records leaves it out, it has no event, no trip and no booking, and its vehicle
-- keeps its status until phase 2.
--
-- claim_expires_at: a process killed between the phases leaves its claim behind. Past this instant
-- the claim no longer holds its vehicle and user: the next start on either deletes it (in SQL, under
-- the vehicle's row lock) and the publisher's rental sweep deletes the rest and relocks their vehicles.

ALTER TABLE rentals ADD COLUMN claim_expires_at timestamptz;

ALTER TABLE rentals DROP CONSTRAINT rentals_state_check;
ALTER TABLE rentals ADD CONSTRAINT rentals_state_check CHECK (state IN ('STARTING', 'RUNNING', 'ENDED', 'ENDED_WITH_NO_CHARGE', 'ENDED_INTERNALLY'));
ALTER TABLE rentals ADD CONSTRAINT rentals_claim_check CHECK ((state = 'STARTING') = (claim_expires_at IS NOT NULL));
ALTER TABLE rentals DROP CONSTRAINT rentals_check;
ALTER TABLE rentals ADD CONSTRAINT rentals_check CHECK ((state IN ('STARTING', 'RUNNING')) = (ended_at IS NULL));
ALTER TABLE rentals DROP CONSTRAINT rentals_check2;
ALTER TABLE rentals ADD CONSTRAINT rentals_check2 CHECK (state IN ('STARTING', 'RUNNING') OR (total_amount IS NOT NULL AND subtotal IS NOT NULL
  AND vat_amount IS NOT NULL AND duration_min IS NOT NULL AND distance_m IS NOT NULL AND vehicle_end_location IS NOT NULL));

-- one starting-or-running rental per user and per vehicle; the names stay (the engine maps them to
-- RentalAlreadyExists and VehicleNotAvailable)
DROP INDEX rentals_one_running_per_user;
CREATE UNIQUE INDEX rentals_one_running_per_user ON rentals (user_id) WHERE state IN ('STARTING', 'RUNNING');
DROP INDEX rentals_one_running_per_vehicle;
CREATE UNIQUE INDEX rentals_one_running_per_vehicle ON rentals (vehicle_id) WHERE state IN ('STARTING', 'RUNNING');

-- the sweep of claims left by processes that died between the phases
CREATE INDEX rentals_claims_expiring ON rentals (claim_expires_at) WHERE state = 'STARTING';

CREATE OR REPLACE VIEW rental_records AS
SELECT r.id, r.partner_id, r.user_id, r.vehicle_id, v.code AS vehicle_code, r.zone_id, r.trip_id, r.source, r.state,
       r.beginners_mode, r.licence_validated, r.group_id, r.ride_type, r.currency, r.vat_rate,
       r.start_price, r.price_per_minute, r.started_at, r.ended_at,
       ST_X(r.user_start_location) AS user_start_lng, ST_Y(r.user_start_location) AS user_start_lat,
       ST_X(r.user_end_location) AS user_end_lng, ST_Y(r.user_end_location) AS user_end_lat,
       ST_X(r.vehicle_start_location) AS vehicle_start_lng, ST_Y(r.vehicle_start_location) AS vehicle_start_lat,
       ST_X(r.vehicle_end_location) AS vehicle_end_lng, ST_Y(r.vehicle_end_location) AS vehicle_end_lat,
       r.start_battery_percent, r.end_battery_percent, r.duration_min, r.distance_m,
       r.subtotal, r.total_amount, r.vat_amount, r.receipt_key, r.photo_key, r.photo_decision, r.photo_decided_at
  FROM rentals r
  JOIN vehicles v ON v.id = r.vehicle_id
 WHERE r.state <> 'STARTING';
