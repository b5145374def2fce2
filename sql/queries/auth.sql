-- API keys, and the shared per-key rate limit. Times come from the caller's clock ($n), not now().

-- name: AuthFindApiKey
-- A usable key of the given scope with what a request needs to know about its partner. zones is
-- null when the partner has no partner_zones rows (= every zone). It runs on a verifier's cache miss
-- (lib/domain/credentials/api-keys.ts), and records the key's last use there, conditionally, so a key in use is
-- written at most once a minute whatever the traffic.
WITH touched AS (
  UPDATE api_keys SET last_used_at = $3
   WHERE key_hash = $1 AND scope = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)
     AND (last_used_at IS NULL OR last_used_at < $3::timestamptz - interval '1 minute')
)
SELECT k.id AS key_id,
       k.expires_at,
       p.id AS partner_id,
       p.name AS partner_name,
       p.rate_limit_per_minute,
       p.trip_type,
       p.tomp_postponed_commit,
       (SELECT array_agg(z.zone_id ORDER BY z.zone_id) FROM partner_zones z WHERE z.partner_id = p.id) AS zones
  FROM api_keys k
  JOIN partners p ON p.id = k.partner_id
 WHERE k.key_hash = $1
   AND k.scope = $2
   AND k.revoked_at IS NULL
   AND (k.expires_at IS NULL OR k.expires_at > $3);

-- name: AuthInsertApiKey
INSERT INTO api_keys (partner_id, scope, key_hash, key_prefix, label, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id;

-- name: AuthRevokeApiKey
UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL
RETURNING id, partner_id, scope, label;

-- name: AuthRateLimitClaim
-- Claims the next $3 positions of the key's window, up to the limit $4, for one process
-- (api/kit/ratelimit.ts; migration 000230): the positions (claimed_from, claimed_to], none when equal.
-- not null: claimed_from, claimed_to
SELECT claimed_from, claimed_to FROM rate_limit_claim($1, $2, $3, $4);

-- name: AuthRateLimitReturn
-- Hands back $3 positions of the key's window that this process claimed and will not spend.
UPDATE rate_limit_counters SET count = count - $3 WHERE key_id = $1 AND window_start = $2;

-- name: AuthRateLimitPrune
DELETE FROM rate_limit_counters WHERE window_start < $1;
