/**
 * OAuth 2.0 Authorization Server Metadata (RFC 8414 §2) as the two token hosts publish it at
 * /.well-known/oauth-authorization-server (api/feeds/discovery.ts). Only the members a
 * client-credentials-only server has: no authorization endpoint (so no response types), no JWKS
 * (tokens are for our own feeds, not for clients to verify), no scopes (a client's role and zones
 * decide what its token reads; a `scope` parameter is ignored).
 */
import type { FromSchema } from 'json-schema-to-ts';

const absoluteUrl = { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2048 } as const;

export const AuthorizationServerMetadataSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['issuer', 'token_endpoint', 'token_endpoint_auth_methods_supported', 'grant_types_supported', 'response_types_supported', 'service_documentation'],
  properties: {
    issuer: {
      ...absoluteUrl,
      pattern: '^https?://[^?#]+$',
      description:
        'the host’s public base URL (PUBLIC_BASE_URL, PUBLIC_LEGACY_URL): no query or fragment; the metadata URL is this with /.well-known/oauth-authorization-server inserted after the authority (RFC 8414 §3.1)',
    },
    token_endpoint: { ...absoluteUrl, description: 'POST here for an access token (client credentials grant)' },
    token_endpoint_auth_methods_supported: {
      type: 'array',
      minItems: 1,
      maxItems: 2,
      uniqueItems: true,
      items: { enum: ['client_secret_basic', 'client_secret_post'] },
      description: 'HTTP Basic, or client_id and client_secret in the form (never both in one request)',
    },
    grant_types_supported: { type: 'array', minItems: 1, maxItems: 1, items: { const: 'client_credentials' } },
    response_types_supported: {
      type: 'array',
      maxItems: 0,
      items: { type: 'string', maxLength: 64 },
      description: 'required by RFC 8414 §2; empty: there is no authorization endpoint',
    },
    service_documentation: { ...absoluteUrl, description: 'the API documentation (the feeds document at /docs of the main host)' },
  },
} as const;
export type AuthorizationServerMetadata = FromSchema<typeof AuthorizationServerMetadataSchema>;
