-- Device identities of the vehicle broker (ops/admin/devices.ts; the table: migration 000270).

-- name: DeviceFindVehicle
SELECT id, code FROM vehicles WHERE id::text = lower($1) OR code = upper($1);

-- name: DeviceCreate
-- A new identity, or a revoked one issued again (a new generation); an active one stays as it is
-- and no row comes back.
INSERT INTO device_credentials (username, kind, vehicle_id, password_hash, label, created_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (username) DO UPDATE
  SET password_hash = EXCLUDED.password_hash, generation = device_credentials.generation + 1,
      label = EXCLUDED.label, rotated_at = EXCLUDED.created_at, revoked_at = NULL
  WHERE device_credentials.revoked_at IS NOT NULL
RETURNING username, kind, vehicle_id, generation;

-- name: DeviceRotate
UPDATE device_credentials SET password_hash = $2, generation = generation + 1, rotated_at = $3
WHERE username = $1 AND revoked_at IS NULL
RETURNING username, kind, vehicle_id, generation;

-- name: DeviceRevoke
UPDATE device_credentials SET revoked_at = $2
WHERE username = $1 AND revoked_at IS NULL
RETURNING username, kind, vehicle_id, generation;

-- name: DeviceList
SELECT d.username, d.kind, v.code AS vehicle_code, d.generation, d.label, d.created_at, d.rotated_at, d.revoked_at
FROM device_credentials d LEFT JOIN vehicles v ON v.id = d.vehicle_id
WHERE $1::boolean OR d.revoked_at IS NULL
ORDER BY d.kind, d.username;

-- name: DeviceActiveHashes
-- What every broker must hold: the active identities with their hashes (the sync's source).
SELECT username, kind, password_hash, generation FROM device_credentials WHERE revoked_at IS NULL ORDER BY username;
