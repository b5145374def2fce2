-- The keys that sign every feed answer (RFC 9421 HTTP Message Signatures, issue 40;
-- lib/feeds/signing-keys.ts has the rules, docs/feed-signatures.md the contract). Ed25519 key
-- pairs: the public half as a JWK, served in the feed hosts' JWKS (/.well-known/jwks.json); the
-- private half as PKCS#8 DER, encrypted at rest (AES-256-GCM under a key derived from
-- SIGNING_SECRET: iv || tag || ciphertext), removed once the key is retired.
--
-- States: `next` is published in the JWKS before it signs anything, so that a city's cached JWKS
-- already holds the key a rotation promotes; `active` signs; `retiring` signs no more and stays in
-- the JWKS until `retire_after` (the overlap), so that answers it signed still verify; `retired`
-- is out of the JWKS and has no private half. At most one `active` and one `next`, decided here by
-- the two partial unique indexes.
CREATE TABLE feed_signing_keys (
  kid           text PRIMARY KEY,
  state         text NOT NULL CHECK (state IN ('next', 'active', 'retiring', 'retired')),
  public_jwk    jsonb NOT NULL,
  private_key   bytea,
  created_at    timestamptz NOT NULL,
  activated_at  timestamptz,
  retiring_at   timestamptz,
  retire_after  timestamptz,
  retired_at    timestamptz,
  CHECK ((state = 'retired') = (private_key IS NULL)),
  CHECK (state <> 'retiring' OR retire_after IS NOT NULL)
);

CREATE UNIQUE INDEX feed_signing_keys_one_active ON feed_signing_keys ((true)) WHERE state = 'active';
CREATE UNIQUE INDEX feed_signing_keys_one_next ON feed_signing_keys ((true)) WHERE state = 'next';
