/**
 * The JWK Set (RFC 7517 §5) the feed hosts publish at /.well-known/jwks.json (api/feeds/jwks.ts):
 * the public halves of the Ed25519 keys that sign the feed answers (RFC 9421, `alg="ed25519"`;
 * docs/feed-signatures.md). Each key is an OKP JWK (RFC 8037) whose `kid` is its RFC 7638
 * thumbprint, the `keyid` of the signatures it makes.
 */
const base64url = { type: 'string', pattern: '^[A-Za-z0-9_-]+$', maxLength: 64 } as const;

const SigningJwkSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['kty', 'crv', 'x', 'kid', 'use', 'alg'],
  properties: {
    kty: { const: 'OKP' },
    crv: { const: 'Ed25519' },
    x: { ...base64url, description: 'the public key, 32 bytes, base64url (RFC 8037 §2)' },
    kid: { ...base64url, description: 'the RFC 7638 thumbprint of the key: the `keyid` parameter of the signatures it makes' },
    use: { const: 'sig' },
    alg: { const: 'EdDSA', description: 'JOSE’s name of Ed25519; in Signature-Input the RFC 9421 name is `ed25519`' },
  },
} as const;

export const JwksSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      minItems: 1,
      maxItems: 16,
      items: SigningJwkSchema,
      description:
        'the active key (it signs), the next one (published before it signs) and those retiring (they signed until the last rotation and stay for its overlap)',
    },
  },
} as const;
