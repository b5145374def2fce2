-- The feed signing keys (lib/feeds/signing-keys.ts): what the API processes load, and the steps of
-- the ops CLI's rotation, each run in one transaction under FeedSigningKeysLock.

-- name: FeedSigningKeysLock
-- one rotation or first creation at a time, across every process
SELECT pg_advisory_xact_lock(hashtext('feed_signing_keys'));

-- name: FeedSigningKeysLoad
-- the active key with its private half, and every key the JWKS publishes as of $1
SELECT kid, state, public_jwk, CASE WHEN state = 'active' THEN private_key END AS private_key, retire_after
FROM feed_signing_keys
WHERE state IN ('next', 'active') OR (state = 'retiring' AND retire_after > $1)
ORDER BY (state = 'active') DESC, created_at DESC;

-- name: FeedSigningKeysList
SELECT kid, state, created_at, activated_at, retiring_at, retire_after, retired_at,
       (state IN ('next', 'active') OR (state = 'retiring' AND retire_after > $1)) AS published
FROM feed_signing_keys
ORDER BY array_position(ARRAY['next', 'active', 'retiring', 'retired'], state), created_at DESC;

-- name: FeedSigningKeyInsert
INSERT INTO feed_signing_keys (kid, state, public_jwk, private_key, created_at, activated_at)
VALUES ($1, $2, $3, $4, $5, CASE WHEN $2 = 'active' THEN $5::timestamptz END);

-- name: FeedSigningKeysStates
SELECT kid, state FROM feed_signing_keys WHERE state IN ('next', 'active');

-- name: FeedSigningKeysRetireExpired
-- retiring keys past their overlap leave the JWKS (the load query stops naming them at retire_after
-- already) and lose their private half
UPDATE feed_signing_keys SET state = 'retired', private_key = NULL, retired_at = $1
WHERE state = 'retiring' AND retire_after <= $1
RETURNING kid;

-- name: FeedSigningKeyRetireActive
UPDATE feed_signing_keys SET state = 'retiring', retiring_at = $1, retire_after = $2
WHERE state = 'active'
RETURNING kid;

-- name: FeedSigningKeyPromoteNext
UPDATE feed_signing_keys SET state = 'active', activated_at = $1
WHERE state = 'next'
RETURNING kid;

-- name: FeedSigningKeyNextSealed
SELECT kid, private_key FROM feed_signing_keys WHERE state = 'next';

-- name: FeedSigningKeyDropNext
-- a next key sealed under another SIGNING_SECRET: it never signed, and would sign nothing readable
DELETE FROM feed_signing_keys WHERE state = 'next';
