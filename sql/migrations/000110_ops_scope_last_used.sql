-- The operator console (/console, api/console/) is reached with an API key of scope 'ops', held by
-- an 'operator' partner (the operator's own staff). Keys and feed clients remember when they were
-- last used, so the console's Credentials view can show stale credentials; the writes are
-- conditional (at most one per minute per key, one per token issued per client), so they cost
-- nothing on the request path.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scope_check,
  ADD CONSTRAINT api_keys_scope_check CHECK (scope IN ('partner', 'tomp', 'insurance', 'ops'));
ALTER TABLE partners DROP CONSTRAINT partners_kind_check,
  ADD CONSTRAINT partners_kind_check CHECK (kind IN ('rental', 'maas', 'insurer', 'operator'));
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
ALTER TABLE feed_clients ADD COLUMN last_used_at timestamptz;
