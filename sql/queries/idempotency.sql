-- Idempotency-Key records (migration 000290; the rules: api/kit/idempotency.ts).

-- name: IdempotencyTake
-- Takes the key ($1 scope, $2 key) for a request ($3 fingerprint, $4 owner, $5 now, $6 lease until,
-- $7 expires at): a new key, one whose record has expired, or one still running for the same request
-- whose lease ended (its process died before it answered). No row back: the key is held; the caller
-- reads the record with IdempotencyGet.
INSERT INTO idempotency_keys AS k (scope, key, fingerprint, owner, state, lease_until, created_at, expires_at)
VALUES ($1, $2, $3, $4, 'running', $6, $5, $7)
ON CONFLICT (scope, key) DO UPDATE
   SET fingerprint = excluded.fingerprint, owner = excluded.owner, state = 'running', lease_until = excluded.lease_until,
       status = NULL, headers = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
 WHERE k.expires_at <= $5 OR (k.state = 'running' AND k.lease_until <= $5 AND k.fingerprint = excluded.fingerprint)
RETURNING k.owner;

-- name: IdempotencyGet
-- The record that holds a key, as it stands.
-- not null: fingerprint, state
SELECT fingerprint, state, status, headers, body FROM idempotency_keys WHERE scope = $1 AND key = $2;

-- name: IdempotencyRecord
-- The answer of the request that holds the key ($3 owner); nothing if it no longer holds it.
UPDATE idempotency_keys SET state = 'done', status = $4, headers = $5, body = $6
 WHERE scope = $1 AND key = $2 AND owner = $3 AND state = 'running'
RETURNING key;

-- name: IdempotencyRelease
-- The key given back by the request that holds it ($3 owner): its answer is not one to replay.
DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND owner = $3 AND state = 'running';

-- name: IdempotencyPurge
-- Up to $2 records past their 24 hours ($1 now).
WITH gone AS (
  DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2))
  RETURNING 1)
SELECT count(*)::int AS n FROM gone;
