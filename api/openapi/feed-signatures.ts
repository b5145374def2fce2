/**
 * The signature headers of every answer of the feed hosts in their OpenAPI documents
 * (api/openapi/feeds.ts): RFC 9530 Content-Digest and the RFC 9421 Signature-Input and Signature
 * that api/feeds/signatures.ts adds to every answer, errors and 304s included, declared once and
 * written into every response (inline: the documents' checks and their clients read a response's
 * headers where they are). docs/feed-signatures.md is the contract.
 */
import type { Header, PathItem, Response } from './common.js';
import { header, HTTP_METHODS } from './common.js';

const SIGNED: Record<string, Header> = {
  'Content-Digest': header(
    'RFC 9530: `sha-256=:<base64>:`, the sha-256 of the bytes of the body as sent (the gzip bytes when `Content-Encoding: gzip`); absent without a body (304, HEAD)',
    { type: 'string', pattern: '^sha-256=:[A-Za-z0-9+/]{43}=:$' },
    false,
  ),
  'Signature-Input': header(
    'RFC 9421: `feed=("@status" "content-type" "content-digest" "etag" "@method";req "@path";req "@query";req);created=<s>;keyid="<kid>";alg="ed25519";tag="mobility-feeds"`: the components the signature covers (those the answer has, in this order), when it was made and by which key of /.well-known/jwks.json',
    { type: 'string', maxLength: 512 },
    true,
  ),
  Signature: header(
    'RFC 9421: `feed=:<base64>:`, the Ed25519 signature of the signature base that Signature-Input describes',
    { type: 'string', maxLength: 128 },
    true,
  ),
};

const withSignature = (r: Response): Response => ({ ...r, headers: { ...r.headers, ...SIGNED } });

/** Every inline response of `paths` with the signature headers (the shared ones: `signedResponses`). */
export function signedPaths(paths: Record<string, PathItem>): Record<string, PathItem> {
  for (const item of Object.values(paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      for (const [status, r] of Object.entries(op.responses)) if (!('$ref' in r)) op.responses[status] = withSignature(r);
    }
  }
  return paths;
}

/** The shared responses (components.responses) with the signature headers. */
export function signedResponses(shared: Record<string, Response>): Record<string, Response> {
  return Object.fromEntries(Object.entries(shared).map(([name, r]) => [name, withSignature(r)]));
}
