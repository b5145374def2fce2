/**
 * A GBFS file's envelope served apart from its data (issue 26: no write for unchanged content).
 *
 * A stored GBFS object is one gzip member of fragments (fragments.ts): the envelope's head
 * (`{"last_updated":…,"ttl":…,"version":"…","data":`), the data's fragments, the closing brace. When
 * a status file's data has not changed, its ttl refresh moves only the index row's last_updated
 * (the publisher confirmed the data still current) and the store keeps the object it has; the file
 * route then answers the stored object with the head of the row's last_updated in place of the
 * stored one: the stored head's deflate bytes are cut off the front, the new head's put before
 * the rest, and the gzip trailer's CRC-32 recomputed from the parts' CRCs. The rest is copied as
 * stored: nothing is decompressed, parsed or compressed again but the ~70-byte head.
 */
import { NamedCache } from '../../core/cache.js';
import { crc32Combine, crc32Uncombine, fragment, GZIP_HEADER, type Fragment } from '../../core/gzip.js';
import type { GbfsVersion } from './files.js';
import { envelopeV2 } from './v2.js';
import { envelopeV3 } from './v3.js';

/** The text of the envelope before `data`: the JSON of envelopeV2/V3 up to `"data":`. */
export function envelopeHead(version: GbfsVersion, lastUpdated: Date, ttl: number): string {
  const json = JSON.stringify(version === '2.2' ? envelopeV2(lastUpdated, ttl, null) : envelopeV3(lastUpdated, ttl, null));
  return json.slice(0, -'null}'.length);
}

/** The envelope's end after `data`. */
export const ENVELOPE_TAIL = '}';

/** Head fragments by text: a process serves the same few heads many times. */
const heads = new NamedCache<string, Fragment>('gbfs_envelope_heads', { max: 1024 });

function headFragment(version: GbfsVersion, lastUpdated: Date, ttl: number): Fragment {
  const text = envelopeHead(version, lastUpdated, ttl);
  let f = heads.get(text);
  if (!f) heads.set(text, (f = fragment(text)));
  return f;
}

/**
 * The envelope a stored GBFS object was written with (its `last-updated` and `ttl` metadata), when
 * it is not the one of the index row's `lastUpdated`; undefined when the object is served as stored.
 */
export function staleEnvelope(metadata: Record<string, string>, lastUpdated: Date): { storedAt: Date; ttl: number } | undefined {
  const storedAt = metadata['last-updated'];
  const ttl = Number(metadata.ttl);
  if (!storedAt || !Number.isInteger(ttl) || Date.parse(storedAt) === lastUpdated.getTime()) return undefined;
  return { storedAt: new Date(storedAt), ttl };
}

/**
 * The stored GBFS object `stored`, written with the head of `storedLastUpdated`, as the same data
 * under the head of `lastUpdated`. Undefined when the bytes are not laid out as the publisher
 * writes them (the head's fragment is not where it should be): the caller serves what is stored.
 */
export function reEnveloped(stored: Buffer, version: GbfsVersion, ttl: number, storedLastUpdated: Date, lastUpdated: Date): Buffer | undefined {
  const old = headFragment(version, storedLastUpdated, ttl);
  const head = headFragment(version, lastUpdated, ttl);
  const restStart = GZIP_HEADER.length + old.deflate.length;
  if (stored.length < restStart + 8 || !stored.subarray(0, GZIP_HEADER.length).equals(GZIP_HEADER)) return undefined;
  if (!stored.subarray(GZIP_HEADER.length, restStart).equals(old.deflate)) return undefined;
  const crc = stored.readUInt32LE(stored.length - 8);
  const size = stored.readUInt32LE(stored.length - 4);
  // ISIZE is the length modulo 2^32 (RFC 1952); a GBFS file stays far below 4 GiB
  const restLength = size - old.length;
  if (restLength < 0) return undefined;
  const restCrc = crc32Uncombine(crc, old.crc, restLength);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc32Combine(head.crc, restCrc, restLength), 0);
  trailer.writeUInt32LE((head.length + restLength) % 0x100000000, 4);
  // the rest: the data's and the tail's fragments and the empty final block, as stored
  return Buffer.concat([GZIP_HEADER, head.deflate, stored.subarray(restStart, stored.length - 8), trailer]);
}
