-- Operator administration (ops CLI): partners, API keys, feed clients, zones, vehicles.

-- name: AdminFindPartnerByName
SELECT id, name, kind, trip_type FROM partners WHERE name = $1;

-- name: AdminCreatePartner
INSERT INTO partners (name, kind, trip_type, tomp_postponed_commit)
VALUES ($1, $2, $3, $4)
RETURNING id, name, kind, trip_type;

-- name: AdminListApiKeys
SELECT k.id, k.scope, k.key_prefix, k.label, k.created_at, k.expires_at, k.revoked_at, k.last_used_at, p.name AS partner
  FROM api_keys k JOIN partners p ON p.id = k.partner_id
 WHERE ($1::text IS NULL OR k.scope = $1)
 ORDER BY p.name, k.created_at;

-- name: AdminFindApiKey
SELECT id, partner_id, scope, label, revoked_at FROM api_keys WHERE id = $1;

-- name: AdminListFeedClients
SELECT client_id, role, zones, label, created_at, revoked_at, last_used_at FROM feed_clients ORDER BY client_id;

-- name: AdminRotateFeedClient
UPDATE feed_clients SET secret_hash = $2 WHERE client_id = $1 AND revoked_at IS NULL
RETURNING client_id, role, zones;

-- name: AdminUpsertZone
INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, language, parking_mode,
                   licence_verification_required, max_speed_kph, reduced_speed_kph, min_required_rides,
                   speed_unit, min_battery_percent, unlock_distance_m, sleep_windows, status, boundary, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
        ST_Multi(ST_SetSRID(ST_GeomFromGeoJSON($19), 4326)), $20)
ON CONFLICT (id) DO UPDATE SET
  name = EXCLUDED.name, city = EXCLUDED.city, country = EXCLUDED.country, timezone = EXCLUDED.timezone,
  currency = EXCLUDED.currency, vat_rate = EXCLUDED.vat_rate, language = EXCLUDED.language,
  parking_mode = EXCLUDED.parking_mode, licence_verification_required = EXCLUDED.licence_verification_required,
  max_speed_kph = EXCLUDED.max_speed_kph, reduced_speed_kph = EXCLUDED.reduced_speed_kph,
  min_required_rides = EXCLUDED.min_required_rides, speed_unit = EXCLUDED.speed_unit,
  min_battery_percent = EXCLUDED.min_battery_percent, unlock_distance_m = EXCLUDED.unlock_distance_m,
  sleep_windows = EXCLUDED.sleep_windows, status = EXCLUDED.status, boundary = EXCLUDED.boundary,
  updated_at = EXCLUDED.updated_at
RETURNING id, (xmax = 0) AS inserted;

-- name: AdminDeleteZoneAreas
DELETE FROM areas WHERE zone_id = $1;

-- name: AdminInsertArea
INSERT INTO areas (id, zone_id, name, area_type, vehicle_types, geom, capacity, max_speed_kph)
VALUES (COALESCE($8::uuid, gen_random_uuid()), $1, $2, $3, $4, ST_Multi(ST_SetSRID(ST_GeomFromGeoJSON($5), 4326)), $6, $7)
RETURNING id;

-- name: AdminGeometryProblem
SELECT CASE WHEN ST_IsValid(g) THEN NULL ELSE ST_IsValidReason(g) END AS problem
  FROM (SELECT ST_SetSRID(ST_GeomFromGeoJSON($1), 4326) AS g) s;

-- name: AdminSetVehicleStatus
UPDATE vehicles SET status = $2
 WHERE (id::text = $1 OR code = upper($1)) AND status <> 'riding'
RETURNING id, code, status;

-- name: AdminFindVehicle
SELECT id, code, status FROM vehicles WHERE id::text = $1 OR code = upper($1);

-- name: AdminListZoneIds
SELECT id FROM zones ORDER BY id;
