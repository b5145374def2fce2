/**
 * The JWK Set of the feed signatures (api/feeds/signatures.ts), public, on the main host and on the
 * legacy host: GET /.well-known/jwks.json. A city's RFC 9421 verifier takes the key whose `kid` is
 * the signature's `keyid` from here. The path is the one JOSE tooling looks for by default (jose's
 * createRemoteJWKSet takes any URL; JWKS fetchers of API gateways default to it); the draft "HTTP
 * Message Signatures Directory" (/.well-known/http-message-signatures-directory) is a bot-auth
 * draft whose media type and self-signed directory are not settled: docs/feed-signatures.md.
 *
 * Cacheable for 5 minutes: a key is published here from the rotation before the one that makes it
 * sign, so a cached copy always holds the signing key (docs/feed-signatures.md "Keys").
 */
import type Koa from 'koa';
import { FEED_REF } from '../openapi/records-feeds.js';
import type { FeedEndpoint } from './endpoint.js';

export const JWKS_PATH = '/.well-known/jwks.json';
const CACHE_CONTROL = 'public, max-age=300';
/** RFC 7517 §8.5.1 */
const JWKS_MEDIA_TYPE = 'application/jwk-set+json';

const DESCRIPTION =
  'The public keys of the feed signatures (RFC 7517 JWK Set), public. Every answer of the MDS, legacy MDS, GBFS and insurance feeds carries an ' +
  'RFC 9421 `Signature` (label `feed`, `alg="ed25519"`) over an RFC 9530 `Content-Digest`; its `keyid` is the `kid` of one key here. The set ' +
  'holds the active key, the next one (published before it signs) and the retiring ones (for the overlap of a rotation, 7 days by default). ' +
  'The same set on the main and the legacy host. See docs/feed-signatures.md.';

/** The JWKS row of a host's table. */
export function jwksEndpoint(operationId: string): FeedEndpoint {
  return {
    operationId,
    method: 'get',
    path: JWKS_PATH,
    summary: 'Public keys of the feed signatures (JWKS)',
    description: DESCRIPTION,
    tag: 'Authentication',
    auth: 'none',
    responses: {
      200: {
        description: 'the keys that sign, will sign, or signed within the overlap',
        content: { [JWKS_MEDIA_TYPE]: FEED_REF.Jwks },
        headers: {
          'Cache-Control': { description: `\`${CACHE_CONTROL}\``, schema: { type: 'string', maxLength: 64 }, required: true },
          'Access-Control-Allow-Origin': {
            description: '`*`: public keys, readable by browser-based tools',
            schema: { type: 'string', maxLength: 1 },
            required: true,
          },
        },
      },
    },
    errors: [],
    handle: async (deps, ctx: Koa.Context) => {
      const keys = await deps.signer.ring.current();
      ctx.set('Cache-Control', CACHE_CONTROL);
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.type = JWKS_MEDIA_TYPE;
      ctx.body = keys.jwks;
    },
  };
}
