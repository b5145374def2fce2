-- TOMP booking API (api/tomp, lib/domain/tomp). Business times are parameters (ctx.clock), never now().

-- name: TompOperatingRegions
-- $1 zone scope (null = every zone). A zone boundary with several polygons is shown as its largest
-- polygon: serviceArea is a single GeoJSON Polygon in TOMP.
SELECT z.id, z.name,
       ST_AsGeoJSON((SELECT d.geom FROM ST_Dump(z.boundary) d ORDER BY ST_Area(d.geom::geography) DESC LIMIT 1), 6) AS geojson
  FROM zones z
 WHERE z.status = 'operating' AND ($1::text[] IS NULL OR z.id = ANY ($1))
 ORDER BY z.id;

-- name: TompPricingPlans
-- $1 zone scope (null = every zone), $2 optional region (zone) id
SELECT z.id AS zone_id, z.name AS zone_name, z.currency, z.vat_rate, z.country,
       vt.id AS vehicle_type_id, vt.name AS vehicle_type_name, vt.form_factor, vt.propulsion_type,
       p.start_price, p.price_per_minute
  FROM pricing p
  JOIN zones z ON z.id = p.zone_id
  JOIN vehicle_types vt ON vt.id = p.vehicle_type_id
 WHERE z.status = 'operating' AND ($1::text[] IS NULL OR z.id = ANY ($1)) AND ($2::text IS NULL OR z.id = $2)
 ORDER BY z.id, vt.id;

-- name: TompFindVehicle
-- $1 a vehicle id or the current GBFS vehicle id (uuid or null), $2 the printed 4-character code (or null);
-- $3/$4 the booking's `from` lng/lat (distance_m: how far the traveller stands from the vehicle)
SELECT v.id, v.zone_id, vt.form_factor, z.licence_verification_required,
       ST_Distance(v.location::geography, ST_SetSRID(ST_MakePoint($3, $4), 4326)::geography) AS distance_m
  FROM vehicles v
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
  JOIN zones z ON z.id = v.zone_id
 WHERE ($1::uuid IS NOT NULL AND (v.id = $1 OR v.gbfs_id = $1)) OR ($2::text IS NOT NULL AND v.code = $2)
 LIMIT 1;

-- name: TompLockCustomer
-- serialises find-or-create of one MaaS customer (users has no unique key on external_id)
SELECT pg_advisory_xact_lock(hashtext('tomp-customer:' || $1::text || ':' || $2::text));

-- name: TompFindCustomer
SELECT id, blocked FROM users
 WHERE partner_id = $1 AND external_id = $2 AND deleted_at IS NULL
 ORDER BY created_at, id
 LIMIT 1;

-- name: TompInsertCustomer
INSERT INTO users (partner_id, email, external_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, $4)
RETURNING id, blocked;

-- name: TompHoldCheck
-- why a vehicle could not be held for a pending booking; $2/$3 the caller's from lng/lat
SELECT v.status, v.mds_state, v.battery_percent, v.zone_id, ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
       z.licence_verification_required, z.status AS zone_status,
       (zone_rules_at(v.zone_id, ST_X(v.location), ST_Y(v.location), v.vehicle_type_id)).ride_start_allowed AS start_allowed, z.sleep_windows, z.timezone, z.min_battery_percent, z.unlock_distance_m,
       ST_Distance(v.location::geography, ST_SetSRID(ST_MakePoint($2, $3), 4326)::geography) AS distance_m
  FROM vehicles v JOIN zones z ON z.id = v.zone_id
 WHERE v.id = $1;

-- name: TompHoldVehicle
-- the race-deciding step of a pending booking: only a ready vehicle can be held
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
UPDATE vehicles SET status = 'booked'
 WHERE id = $1 AND status = 'ready' AND mds_state = 'available'
RETURNING id, zone_id, battery_percent, ST_X(location) AS lng, ST_Y(location) AS lat;

-- name: TompReleaseVehicle
-- lng, lat: of vehicles.location, a NOT NULL point.
-- not null: lng, lat
UPDATE vehicles SET status = 'ready'
 WHERE id = $1 AND status = 'booked'
RETURNING id, zone_id, mds_state, battery_percent, ST_X(location) AS lng, ST_Y(location) AS lat;

-- name: TompInsertBooking
INSERT INTO tomp_bookings (partner_id, user_id, vehicle_id, rental_id, state, from_location, customer_external_id, language, expires_at, created_at, updated_at, licence_verified)
VALUES ($1, $2, $3, $4, $5, ST_SetSRID(ST_MakePoint($6, $7), 4326), $8, $9, $10, $11, $11, $12)
RETURNING id;

-- name: TompInsertLeg
INSERT INTO tomp_legs (booking_id, state, departure_time, created_at, updated_at)
VALUES ($1, 'NOT_STARTED', $2, $3, $3)
RETURNING id;

-- name: TompLockBooking
-- from_lng, from_lat: of tomp_bookings.from_location, a NOT NULL point.
-- not null: from_lng, from_lat
SELECT b.id, b.partner_id, b.user_id, b.vehicle_id, b.rental_id, b.state, b.expires_at, b.licence_verified,
       ST_X(b.from_location) AS from_lng, ST_Y(b.from_location) AS from_lat
  FROM tomp_bookings b
 WHERE b.id = $1 AND b.partner_id = $2
   FOR UPDATE;

-- name: TompLockBookingNowait
-- inside the rental engine's transaction (COMMIT): never wait for the booking with the vehicle locked
-- from_lng, from_lat: of tomp_bookings.from_location, a NOT NULL point.
-- not null: from_lng, from_lat
SELECT b.id, b.partner_id, b.user_id, b.vehicle_id, b.rental_id, b.state, b.expires_at,
       ST_X(b.from_location) AS from_lng, ST_Y(b.from_location) AS from_lat
  FROM tomp_bookings b
 WHERE b.id = $1 AND b.partner_id = $2
   FOR UPDATE NOWAIT;

-- name: TompSetBookingState
-- $4 the states the change is allowed from: a conditional update, so concurrent events cannot both win
UPDATE tomp_bookings SET state = $2, updated_at = $3
 WHERE id = $1 AND state = ANY ($4::text[])
RETURNING id;

-- name: TompSetLegState
UPDATE tomp_legs SET state = $2, updated_at = $3
 WHERE booking_id = $1
RETURNING id;

-- name: TompConfirmBooking
WITH b AS (
  UPDATE tomp_bookings SET state = 'CONFIRMED', rental_id = $2, updated_at = $3
   WHERE id = $1 AND state = 'PENDING'
  RETURNING id
)
UPDATE tomp_legs SET departure_time = $4, updated_at = $3
 WHERE booking_id IN (SELECT id FROM b)
RETURNING id;

-- name: TompExpiredPending
SELECT id, partner_id FROM tomp_bookings
 WHERE state = 'PENDING' AND expires_at <= $1
 ORDER BY expires_at
 LIMIT $2;

-- name: TompBookingId
SELECT id FROM tomp_bookings WHERE id = $1 AND partner_id = $2;

-- name: TompInsertSupportTicket
INSERT INTO support_tickets (booking_id, partner_id, support_type, occurred_at, contact_information_end_user, comment, status, created_at)
VALUES ($1, $2, $3, $4, $5, $6, 'PROCESSING', $7)
RETURNING id, status;

-- name: TompBookingById
-- from_lng, from_lat: of tomp_bookings.from_location, a NOT NULL point.
-- not null: from_lng, from_lat
SELECT b.id, b.partner_id, b.user_id, b.vehicle_id, b.rental_id, b.state AS booking_state, b.customer_external_id, b.language,
       b.expires_at, b.created_at, ST_X(b.from_location) AS from_lng, ST_Y(b.from_location) AS from_lat,
       l.id AS leg_id, l.state AS leg_state, l.departure_time,
       v.battery_percent, v.last_moved_at, v.vehicle_type_id, v.zone_id,
       vt.form_factor, vt.propulsion_type, vt.max_range_meters,
       z.currency, z.vat_rate, z.country,
       p.start_price AS plan_start_price, p.price_per_minute AS plan_price_per_minute,
       r.state AS rental_state, r.started_at, r.ended_at, r.start_price, r.price_per_minute, r.duration_min, r.distance_m,
       r.total_amount, r.currency AS rental_currency, r.vat_rate AS rental_vat_rate,
       ST_X(r.vehicle_end_location) AS end_lng, ST_Y(r.vehicle_end_location) AS end_lat
  FROM tomp_bookings b
  JOIN tomp_legs l ON l.booking_id = b.id
  JOIN vehicles v ON v.id = b.vehicle_id
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
  JOIN zones z ON z.id = v.zone_id
  LEFT JOIN pricing p ON p.zone_id = v.zone_id AND p.vehicle_type_id = v.vehicle_type_id
  LEFT JOIN rentals r ON r.id = b.rental_id
 WHERE b.id = $1 AND b.partner_id = $2;

-- name: TompBookingIdByLeg
SELECT b.id FROM tomp_legs l JOIN tomp_bookings b ON b.id = l.booking_id
 WHERE l.id = $1 AND b.partner_id = $2;

-- name: TompLockBookingForExpiry
-- SKIP LOCKED: a booking being committed or cancelled right now is left to that transaction
-- from_lng, from_lat: of tomp_bookings.from_location, a NOT NULL point.
-- not null: from_lng, from_lat
SELECT b.id, b.partner_id, b.user_id, b.vehicle_id, b.rental_id, b.state, b.expires_at,
       ST_X(b.from_location) AS from_lng, ST_Y(b.from_location) AS from_lat
  FROM tomp_bookings b
 WHERE b.id = $1
   FOR UPDATE SKIP LOCKED;

-- name: TompVehicleHeld
-- a vehicle held by a PENDING booking that has not expired (the engine lets TOMP starts take a
-- 'booked' vehicle, so a one-stop booking checks this first)
SELECT EXISTS (SELECT 1 FROM tomp_bookings WHERE vehicle_id = $1 AND state = 'PENDING' AND expires_at > $2) AS held;

-- name: TompCityAreas
-- The areas of the city's Policy rules in force (migration 000300) in the zones of $1 (null = every
-- zone), with their policy's window; an area of several polygons is shown as its largest.
-- not null: geojson, starts_at
SELECT a.id, a.zone_id, a.name, a.area_type, a.max_speed_kph, r.starts_at, r.ends_at,
       ST_AsGeoJSON((SELECT d.geom FROM ST_Dump(a.geom) d ORDER BY ST_Area(d.geom::geography) DESC LIMIT 1), 6) AS geojson
  FROM areas a
  JOIN city_rules r ON r.zone_id = a.zone_id AND r.policy_id = a.policy_id AND r.rule_id = a.rule_id
  JOIN zones z ON z.id = a.zone_id
 WHERE a.source = 'city' AND z.status = 'operating' AND ($1::text[] IS NULL OR a.zone_id = ANY ($1))
 ORDER BY a.zone_id, zone_area_order(a.source, a.area_type), a.name, a.id;
