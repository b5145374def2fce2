-- The partner rental API's reads and user writes (api/partner). Rentals are in rentals.sql.
-- $zones parameters: null = the partner may access every zone.

-- name: PartnerUserInsert
INSERT INTO users (partner_id, email, external_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, $4)
RETURNING id, email, external_id;

-- name: PartnerUserGet
SELECT id, email, external_id FROM users WHERE id = $1 AND partner_id = $2 AND deleted_at IS NULL;

-- name: PartnerUserUpdate
UPDATE users SET email = COALESCE($3, email), updated_at = $4
 WHERE id = $1 AND partner_id = $2 AND deleted_at IS NULL
RETURNING id, email, external_id;

-- name: PartnerUserLockForErase
-- The row lock makes a concurrent rental start (which holds the user FOR SHARE) finish first; the
-- erase statement that follows then sees its running rental.
SELECT id FROM users WHERE id = $1 AND partner_id = $2 AND deleted_at IS NULL FOR UPDATE;

-- name: PartnerUserErase
-- GDPR erasure: personal data gone, the row stays so that rentals keep their accounting link. The
-- user's personal data elsewhere goes with it: the partner's own id of the customer on TOMP
-- bookings, and the contact data and free text of support tickets about them.
WITH erased AS (
  UPDATE users SET email = NULL, external_id = NULL, deleted_at = $2, updated_at = $2
   WHERE id = $1 AND deleted_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.user_id = $1 AND r.state = 'RUNNING')
  RETURNING id
), bookings AS (
  UPDATE tomp_bookings SET customer_external_id = '[erased]', updated_at = $2
   WHERE user_id IN (SELECT id FROM erased)
  RETURNING id
), tickets AS (
  UPDATE support_tickets SET contact_information_end_user = '[erased]', comment = '[erased]'
   WHERE booking_id IN (SELECT id FROM bookings)
)
SELECT id FROM erased;

-- name: PartnerUserExists
SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND partner_id = $2 AND deleted_at IS NULL) AS exists;

-- name: PartnerZone
SELECT z.id, z.name, z.city, z.timezone, z.sleep_windows, z.status, z.parking_mode, z.licence_verification_required,
       z.max_speed_kph, z.min_required_rides, z.reduced_speed_kph, z.speed_unit
  FROM zones z
 WHERE z.id = $1 AND ($2::text[] IS NULL OR z.id = ANY ($2));

-- name: PartnerZones
SELECT z.id, z.name, z.city, z.timezone, z.sleep_windows, z.status, z.parking_mode, z.licence_verification_required,
       z.max_speed_kph, z.min_required_rides, z.reduced_speed_kph, z.speed_unit
  FROM zones z
 WHERE $1::text[] IS NULL OR z.id = ANY ($1)
 ORDER BY z.id;

-- name: PartnerZoneAreas
-- $2: include free-floating areas (v2 only).
-- The city's areas (rules of its MDS Policy in force, migration 000300) first: they win where they
-- overlap the operator's.
SELECT a.id, a.name, a.area_type, a.vehicle_types, a.source, ST_AsGeoJSON(a.geom, 7)::json AS geometry
  FROM areas a
 WHERE a.zone_id = $1 AND ($2 OR a.area_type <> 'free-floating')
 ORDER BY a.source = 'operator', a.area_type, a.name, a.id;

-- name: PartnerAreasOccupancy
-- The requirement's record: occupancy = parked scooters, capacity = the spot's scooter capacity.
-- Scooters standing (not riding) inside each parking-spot area, computed in PostGIS; a bicycle in a
-- spot that admits both is not occupancy of its scooter capacity (docs/partner-api.md).
-- A parking spot always has a capacity (CHECK on areas: parking-spot exactly when capacity is set).
-- not null: capacity
SELECT a.id, a.capacity, count(v.id)::int AS occupancy
  FROM areas a
  LEFT JOIN (vehicles v JOIN vehicle_types vt ON vt.id = v.vehicle_type_id AND vt.form_factor = 'scooter')
         ON v.zone_id = a.zone_id AND v.status <> 'riding' AND ST_Intersects(a.geom, v.location)
 WHERE a.zone_id = $1 AND a.area_type = 'parking-spot'
 GROUP BY a.id, a.capacity
 ORDER BY a.id;

-- name: PartnerVehicleById
SELECT v.id, v.code, v.zone_id, v.status, v.locked, v.battery_percent, ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
       vt.form_factor, vt.max_range_meters, p.start_price, p.price_per_minute, z.currency, z.vat_rate
  FROM vehicles v
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
  JOIN zones z ON z.id = v.zone_id
  JOIN pricing p ON p.zone_id = v.zone_id AND p.vehicle_type_id = v.vehicle_type_id
 WHERE v.id = $1 AND ($2::text[] IS NULL OR v.zone_id = ANY ($2));

-- name: PartnerVehicleByCode
SELECT v.id, v.code, v.zone_id, v.status, v.locked, v.battery_percent, ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
       vt.form_factor, vt.max_range_meters, p.start_price, p.price_per_minute, z.currency, z.vat_rate
  FROM vehicles v
  JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
  JOIN zones z ON z.id = v.zone_id
  JOIN pricing p ON p.zone_id = v.zone_id AND p.vehicle_type_id = v.vehicle_type_id
 WHERE v.code = $1 AND ($2::text[] IS NULL OR v.zone_id = ANY ($2));

-- name: PartnerAvailableVehicles
-- What a partner can rent now in one zone, with the zone in the same round trip (the list is the
-- API's most frequent read): one row per vehicle, or a single row with vehicle columns null when the
-- zone has none; no row when the zone does not exist or is outside the partner's zones ($3).
-- Available: ready, charged enough for the zone, no running rental, not held by a pending TOMP
-- booking ($2 = now), priced. The caller drops the vehicles when the zone is sleeping.
-- list_version: the zone's version (migration 000140) in the same snapshot as the vehicles, so a
-- cached list is never labelled newer than what it shows.
SELECT z.timezone, z.sleep_windows, z.status AS zone_status, COALESCE(zv.version, 0) AS list_version,
       v.id, v.code, v.zone_id, v.status, v.locked, v.battery_percent, v.lng, v.lat,
       v.form_factor, v.max_range_meters, v.start_price, v.price_per_minute, z.currency, z.vat_rate
  FROM zones z
  LEFT JOIN LATERAL (
    SELECT v.id, v.code, v.zone_id, v.status, v.locked, v.battery_percent, ST_X(v.location) AS lng, ST_Y(v.location) AS lat,
           vt.form_factor, vt.max_range_meters, p.start_price, p.price_per_minute
      FROM vehicles v
      JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
      JOIN pricing p ON p.zone_id = v.zone_id AND p.vehicle_type_id = v.vehicle_type_id
     WHERE v.zone_id = z.id AND v.status = 'ready' AND v.battery_percent >= z.min_battery_percent
       AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING')
       AND NOT EXISTS (SELECT 1 FROM tomp_bookings b WHERE b.vehicle_id = v.id AND b.state = 'PENDING' AND b.expires_at > $2)
  ) v ON true
  LEFT JOIN zone_versions zv ON zv.zone_id = z.id
 WHERE z.id = $1 AND ($3::text[] IS NULL OR z.id = ANY ($3))
 ORDER BY v.code;

-- name: PartnerZoneVersion
-- The zone's current version (migration 000140): a cached vehicle list rendered at an older one is
-- out of date. No row: no such zone.
-- zone_versions (migration 000190) sums a zone's NOT NULL shard counters per group: never null.
-- not null: version
SELECT version FROM zone_versions WHERE zone_id = $1;
