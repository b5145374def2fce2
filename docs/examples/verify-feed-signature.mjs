// How a city verifies a feed answer (docs/feed-signatures.md): plain Node.js 18+ and one npm package,
// `npm install http-message-signatures` (an RFC 9421 implementation that knows nothing of this
// platform). test/feed-signatures.test.ts runs this file against the in-process hosts.
//
//   node verify-feed-signature.mjs 'https://feeds.example/v1/partner-apis/mds/berlin/trips?end_time=2026-11-21T08' "$TOKEN"
//
// It fetches the answer with its bytes exactly as sent (gzip stays gzip: the digest is of those
// bytes), checks Content-Digest against them, takes the key the signature names from the host's JWKS
// and verifies the signature over the answer and the request it answers. Keep the answer's bytes,
// its headers, the request line and the JWK together as your evidence.
import { createHash, createPublicKey } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createVerifier, httpbis } from 'http-message-signatures';

/** GET `url` without decoding the body: status, headers (lower-case names) and the bytes received. */
function getRaw(url, headers) {
  const request = new URL(url).protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Fetches `url` with `headers` and verifies the answer. Resolves to the answer and the `keyid`
 * that signed it; rejects when the digest or the signature does not hold.
 */
export async function fetchVerified(url, headers = {}) {
  const answer = await getRaw(url, headers);

  // 1. RFC 9530: the digest is the sha-256 of the bytes as received
  const digest = `sha-256=:${createHash('sha256').update(answer.body).digest('base64')}:`;
  if (answer.headers['content-digest'] !== digest) throw new Error(`Content-Digest does not match the body (${answer.headers['content-digest']})`);

  // 2. the public keys of the host (cache them: the set changes only with a rotation)
  const jwks = await (await fetch(new URL('/.well-known/jwks.json', url))).json();

  // 3. RFC 9421: the signature over the answer's status and headers and the request's method, path and query
  let keyid;
  const ok = await httpbis.verifyMessage(
    {
      keyLookup: async ({ keyid: id }) => {
        keyid = id;
        const jwk = jwks.keys.find((k) => k.kid === id);
        return jwk ? { id, algs: ['ed25519'], verify: createVerifier(createPublicKey({ key: jwk, format: 'jwk' }), 'ed25519') } : null;
      },
      // refuse a signature that does not cover what matters
      requiredFields: ['@status', 'content-type', 'content-digest', '@method', '@path', '@query'],
      requiredParams: ['created', 'keyid', 'alg'],
    },
    { status: answer.status, headers: answer.headers },
    { method: 'GET', url, headers },
  );
  if (ok !== true) throw new Error(ok === null ? `no signature, or key ${keyid} is not in the JWKS` : 'the signature does not verify');
  return { ...answer, keyid };
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const [url, token] = process.argv.slice(2);
  const headers = { 'Accept-Encoding': 'gzip', ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  fetchVerified(url, headers).then(
    (a) => console.log(`verified: ${a.status}, ${a.body.length} bytes, signed by key ${a.keyid}`),
    (err) => {
      console.error(`NOT verified: ${err.message}`);
      process.exit(1);
    },
  );
}
