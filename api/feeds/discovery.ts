/**
 * OAuth 2.0 Authorization Server Metadata (RFC 8414) of the two token hosts: GET
 * /.well-known/oauth-authorization-server, public, on the main host (issuer PUBLIC_BASE_URL) and
 * on the legacy host (issuer PUBLIC_LEGACY_URL), each naming its own token endpoint. With it a
 * standard client configures itself from the issuer alone (openid-client's `discovery()`).
 *
 * The issuer is the configured public base URL exactly (no trailing slash; clients compare it after
 * URL parsing). The route is the host's root well-known path: when PUBLIC_BASE_URL has a path (a
 * proxy serving the API under /prefix), RFC 8414 §3.1 puts the metadata at
 * /.well-known/oauth-authorization-server/prefix, which the proxy routes here (docs/feeds-access.md).
 *
 * What the metadata lists is what api/feeds/token.ts accepts: HTTP Basic or form credentials, the
 * client credentials grant only. It names no authorization endpoint, JWKS or scopes (see
 * schemas/oauth/metadata.ts, the document's `AuthorizationServerMetadata`).
 */
import type Koa from 'koa';
import type { Config } from '../../lib/core/config.js';
import { FEED_REF } from '../openapi/records-feeds.js';
import type { AuthorizationServerMetadata } from '../../schemas/oauth/metadata.js';
import type { FeedEndpoint } from './endpoint.js';

export const OAUTH_METADATA_PATH = '/.well-known/oauth-authorization-server';
/** It changes only with the configuration, i.e. with a deploy. */
const CACHE_CONTROL = 'public, max-age=3600';

export type TokenHost = 'main' | 'legacy';

/** The metadata of one host, whose token endpoint is at `tokenPath`. */
function authorizationServerMetadata(config: Config, host: TokenHost, tokenPath: string): AuthorizationServerMetadata {
  const issuer = host === 'main' ? config.publicBaseUrl : config.publicLegacyUrl;
  return {
    issuer,
    token_endpoint: `${issuer}${tokenPath}`,
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    grant_types_supported: ['client_credentials'],
    response_types_supported: [],
    service_documentation: `${config.publicBaseUrl}/docs`,
  };
}

const DESCRIPTION =
  'OAuth 2.0 Authorization Server Metadata (RFC 8414), public. Each token host publishes its own: the main host with issuer `PUBLIC_BASE_URL` ' +
  'and token endpoint `/v1/partner-apis/token`, the legacy host with issuer `PUBLIC_LEGACY_URL` and `/token`. Client authentication ' +
  '`client_secret_basic` or `client_secret_post`, grant `client_credentials` only; no authorization endpoint (`response_types_supported` is ' +
  'empty) and no scopes (the client’s role and zones decide what its token reads). A standard client needs only the issuer: openid-client ' +
  '`discovery(new URL(issuer), clientId, clientSecret, ClientSecretBasic(clientSecret), { algorithm: "oauth2" })`.';

/** The metadata row of a host's table; `tokenPath` is the path of that table's token row. */
export function oauthMetadataEndpoint(operationId: string, host: TokenHost, tokenPath: string): FeedEndpoint {
  return {
    operationId,
    method: 'get',
    path: OAUTH_METADATA_PATH,
    summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
    description: DESCRIPTION,
    tag: 'Authentication',
    auth: 'none',
    responses: {
      200: {
        description: 'the metadata of this host’s token endpoint',
        content: { 'application/json': FEED_REF.AuthorizationServerMetadata },
        headers: {
          'Cache-Control': { description: `\`${CACHE_CONTROL}\``, schema: { type: 'string', maxLength: 64 }, required: true },
          'Access-Control-Allow-Origin': {
            description: '`*`: public metadata, readable by browser-based tools',
            schema: { type: 'string', maxLength: 1 },
            required: true,
          },
        },
      },
    },
    errors: [],
    handle: (deps, ctx: Koa.Context) => {
      ctx.set('Cache-Control', CACHE_CONTROL);
      // public, like the OpenAPI documents: browser-based tools may read it
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.body = authorizationServerMetadata(deps.app.config, host, tokenPath);
    },
  };
}
