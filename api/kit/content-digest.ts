/**
 * RFC 9530 Content-Digest (sha-256) of what a route sends, computed once per body where the body is
 * one that stays the same: a cached object's stored bytes (the body cache hands out the same Buffer
 * until the object changes) and the decoded form of those bytes, which serve-object.ts streams to a
 * client that does not take gzip. The feeds sign over it (api/feeds/signatures.ts).
 */
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';

const digests = new WeakMap<Buffer, string>();
const decodedDigests = new WeakMap<Buffer, string>();
const declared = new WeakMap<object, string>();

const digest = (bytes: Buffer) => `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`;

/** The Content-Digest of `bytes`; memoized per Buffer. */
export function contentDigestOf(bytes: Buffer): string {
  let d = digests.get(bytes);
  if (d === undefined) digests.set(bytes, (d = digest(bytes)));
  return d;
}

/**
 * The Content-Digest of the gzip bytes `stored` once decoded: decoded once per Buffer (a cached
 * object's), not per answer. Undefined when the bytes are not gzip (the stream would fail too).
 */
export function decodedDigestOf(stored: Buffer): string | undefined {
  let d = decodedDigests.get(stored);
  if (d === undefined) {
    try {
      d = digest(gunzipSync(stored));
    } catch {
      return undefined;
    }
    decodedDigests.set(stored, d);
  }
  return d;
}

/**
 * The Content-Digest of stored bytes whose sha-256 the writer recorded (the publication sink's `sha256`
 * metadata, hex: publisher/publication/bytes.ts), so that an object streamed from the store without
 * passing through the body cache is signed without being read into memory first; undefined for
 * anything that is not a sha-256 in hex.
 */
export function recordedDigestOf(sha256Hex: string | undefined): string | undefined {
  if (sha256Hex === undefined || !/^[0-9a-f]{64}$/.test(sha256Hex)) return undefined;
  return `sha-256=:${Buffer.from(sha256Hex, 'hex').toString('base64')}:`;
}

/** Says what a streamed body's bytes digest to, when it is known before the stream runs. */
export function declareDigest(body: object, contentDigest: string): void {
  declared.set(body, contentDigest);
}

/** The digest declared for a streamed body, if any. */
export function declaredDigestOf(body: object): string | undefined {
  return declared.get(body);
}
