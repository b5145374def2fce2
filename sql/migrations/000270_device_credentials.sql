-- Device identities of the vehicle broker (issue 41, "Device identity and access"): one row per
-- MQTT user name, a vehicle (its user name is its id) or a vendor bridge that speaks for many
-- vehicles. The password is stored only as the broker's own hash, Mosquitto's PBKDF2-SHA512
-- `$7$<iterations>$<salt b64>$<hash b64>` (mosquitto_passwd's format, and the salt, hash and
-- iterations of its dynamic-security plugin's file), so every broker is provisioned from this table
-- without a clear password (docs/vehicle-identity.md). `generation` counts the passwords an identity
-- has had: the broker's copy carries it, so a sync tells a stale password from the current one.
CREATE TABLE device_credentials (
  username      text PRIMARY KEY,
  kind          text NOT NULL CHECK (kind IN ('vehicle', 'bridge')),
  vehicle_id    uuid UNIQUE REFERENCES vehicles (id) ON DELETE CASCADE,
  password_hash text NOT NULL CHECK (password_hash ~ '^\$7\$[0-9]+\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$'),
  generation    integer NOT NULL DEFAULT 1,
  label         text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  rotated_at    timestamptz,
  revoked_at    timestamptz,
  -- a vehicle's user name is its id (lib/domain/vehicles/protocol.ts); a bridge's is never a UUID
  CONSTRAINT device_credentials_kind CHECK (
    (kind = 'vehicle' AND vehicle_id IS NOT NULL AND username = vehicle_id::text)
    OR (kind = 'bridge' AND vehicle_id IS NULL AND username ~ '^bridge-[a-z0-9][a-z0-9-]{0,62}$')
  )
);
