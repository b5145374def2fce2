-- Idempotency-Key (issue 39; draft-ietf-httpapi-idempotency-key-header): the first answer to a
-- partner's or a MaaS provider's write, kept for 24 hours under the client's scope and its key, so
-- that a retry of a request whose answer was lost (a timeout, a failover) gets that answer back
-- instead of executing again (api/kit/idempotency.ts has the rules; docs/partner-api.md the contract).
--
-- A row is `running` from the moment a request takes the key until its answer is recorded (`done`),
-- or deleted when the answer is one a retry must not get back (a 5xx, a 429: nothing happened, the
-- retry executes). The row is taken by INSERT … ON CONFLICT, so two requests with one key at once are
-- decided here: one runs, the other finds the row running. `owner` is the request that holds it, so
-- that only it records or releases the answer; `lease_until` is when a running row whose process died
-- may be taken by a retry of the same request. A logged table: the answers must survive a failover
-- to the standby, as the writes they describe do.
CREATE TABLE idempotency_keys (
  scope        text NOT NULL,
  key          text NOT NULL,
  -- sha256 of the method, path, query and the request's JSON in a canonical form
  fingerprint  bytea NOT NULL,
  owner        uuid NOT NULL,
  state        text NOT NULL CHECK (state IN ('running', 'done')),
  lease_until  timestamptz NOT NULL,
  status       smallint,
  headers      jsonb,
  body         bytea,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (scope, key),
  CHECK ((state = 'done') = (status IS NOT NULL AND headers IS NOT NULL AND body IS NOT NULL))
);

-- the purge of expired answers (publisher/jobs/history.ts)
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
