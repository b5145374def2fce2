-- Feed access (OAuth clients) and the indexes the feed routes read (publications, GBFS snapshots).

-- name: FeedClientById
SELECT client_id, secret_hash, role, zones, label, revoked_at FROM feed_clients WHERE client_id = $1;

-- name: FeedClientInsert
INSERT INTO feed_clients (client_id, secret_hash, role, zones, label) VALUES ($1, $2, $3, $4, $5);

-- name: FeedClientTouch
UPDATE feed_clients SET last_used_at = $2 WHERE client_id = $1;

-- name: FeedClientRevoke
UPDATE feed_clients SET revoked_at = $2 WHERE client_id = $1 AND revoked_at IS NULL;

-- name: FeedClientStandings
-- every client id, and whether it is revoked as of $1; an id missing here has no valid tokens
SELECT client_id, (revoked_at IS NOT NULL AND revoked_at <= $1) AS revoked FROM feed_clients;

-- name: FeedClientStanding
-- one client id not in the loaded standings (created since, or never): whether it exists and is revoked
SELECT (revoked_at IS NOT NULL AND revoked_at <= $2) AS revoked FROM feed_clients WHERE client_id = $1;

-- name: FeedZones
SELECT id, created_at FROM zones;

-- name: FeedGbfsSnapshot
-- last_updated: the row's, which a ttl refresh moves without storing the object again (the file
-- route serves the stored data in its envelope, lib/feeds/gbfs/envelope.ts).
SELECT object_key, sha256, ttl, last_updated FROM gbfs_snapshots WHERE version = $1 AND scope = $2 AND file = $3;

-- name: FeedKeysUsable
-- Every key that opens the feeds as of $1 (neither it nor its client revoked), with its client's
-- role and zones: the set each API process keeps (lib/feeds/keys.ts), loaded in one statement.
SELECT k.id, k.key_hash, k.client_id, c.role, c.zones
  FROM feed_client_keys k
  JOIN feed_clients c ON c.client_id = k.client_id
 WHERE (k.revoked_at IS NULL OR k.revoked_at > $1) AND (c.revoked_at IS NULL OR c.revoked_at > $1);

-- name: FeedKeyByHash
-- One key not in the loaded set (created since, or unknown): its client's role and zones, and
-- whether it is usable as of $2.
-- not null: usable
SELECT k.id, k.client_id, c.role, c.zones,
       ((k.revoked_at IS NULL OR k.revoked_at > $2) AND (c.revoked_at IS NULL OR c.revoked_at > $2)) AS usable
  FROM feed_client_keys k
  JOIN feed_clients c ON c.client_id = k.client_id
 WHERE k.key_hash = $1;

-- name: FeedKeysTouch
-- The keys a process served with since its last refresh: their last use, at most once a minute each.
UPDATE feed_client_keys SET last_used_at = $2
 WHERE id = ANY ($1::uuid[]) AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute');

-- name: FeedKeyInsert
INSERT INTO feed_client_keys (client_id, key_hash, key_prefix, label) VALUES ($1, $2, $3, $4) RETURNING id;

-- name: FeedKeyRevoke
-- $3: the client the key must belong to (null: any), so the console cannot revoke through another client's row.
UPDATE feed_client_keys SET revoked_at = $2
 WHERE id = $1 AND revoked_at IS NULL AND ($3::text IS NULL OR client_id = $3)
RETURNING id, client_id;

-- name: FeedKeysList
-- $1: one client's keys, or null for every client's. Never the hash.
SELECT k.id, k.client_id, k.key_prefix, k.label, k.created_at, k.revoked_at, k.last_used_at
  FROM feed_client_keys k
 WHERE ($1::text IS NULL OR k.client_id = $1)
 ORDER BY k.client_id, k.created_at;
