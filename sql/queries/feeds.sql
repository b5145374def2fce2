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
