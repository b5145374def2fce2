-- API keys of feed clients (X-Access-Token on every feed host, beside the OAuth client credentials;
-- issue 40). A key belongs to a feed client and has no role or zones of its own: what it reads is
-- its client's, so changing or revoking the client changes or stops its keys. Only the sha256 of a
-- key is stored (lib/domain/credentials/secrets.ts hashApiKey), with a short prefix to recognise it
-- in listings. The API processes load every usable key in one statement and refresh the set like
-- the client standings (lib/feeds/keys.ts), so a request never waits on this table.
CREATE TABLE feed_client_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  client_id text NOT NULL REFERENCES feed_clients (client_id) ON DELETE CASCADE,
  key_hash bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
  key_prefix text NOT NULL,
  label text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX feed_client_keys_client ON feed_client_keys (client_id);
