-- How far a streaming replica (DATABASE_REPLICA_URL) has replayed the primary's WAL: server
-- functions only, no table, so both run on any database of either server (lib/core/replica.ts).

-- name: ReplicaPrimaryWalPosition
-- The primary's WAL insert position now. Every transaction visible to a statement before this one
-- has its commit record before it (inserted before the commit becomes visible, with
-- synchronous_commit off too), so a replica replayed up to it shows all of them.
-- lsn: the server's WAL position, which it always has.
-- not null: lsn
SELECT pg_current_wal_insert_lsn()::text AS lsn;

-- name: ReplicaReplayedTo
-- On the replica: whether it has replayed up to the primary's position $1, and how many bytes of WAL
-- it is still behind it (0 once past). A server that is not in recovery (a replica URL naming a
-- primary, or a promoted standby) has nothing left to replay.
-- behind_bytes: GREATEST of a COALESCE with 0.
-- not null: behind_bytes
SELECT COALESCE(pg_last_wal_replay_lsn() >= $1::pg_lsn, true) AS replayed,
       GREATEST(COALESCE(pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()), 0), 0) AS behind_bytes;
