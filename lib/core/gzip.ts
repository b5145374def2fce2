/**
 * Gzip as every published object is stored: the zlib level of all of them, and gzip files stitched
 * from independently compressed pieces, so that a file is never recompressed whole. A GBFS status
 * file's refresh compresses only its new envelope head (its data is the fragment compressed when the
 * data last changed), and a GBFS 2.2 system of many zones is the zones' own fragments end to end
 * (docs/gbfs.md, "GBFS 2.2 at breadth").
 *
 * A fragment is a raw DEFLATE stream ended with a sync flush: its last block is not final and it
 * ends on a byte boundary, and it refers to nothing before its start, so fragments concatenate into
 * one valid DEFLATE stream (what pigz does). The file is one ordinary gzip member: header, the
 * fragments, an empty final block, and the CRC-32 and length of the whole text — the CRC combined
 * from the fragments' own (zlib's crc32_combine), never computed over the text again. Any gzip
 * reader decodes it; nothing depends on multi-member support.
 *
 * Whether a file's text changed is `contentDigest` (gbfs_snapshots.content_digest): the sha256 of
 * its segments' sha256s in order, which changes exactly when the text does and costs nothing to
 * recompute for a refresh or an assembly, so nothing is compressed to find a file unchanged. The
 * row's `sha256` (the object's `sha256` metadata, the serving cache's version) is that of the stored
 * bytes, as for every published object (publisher/publication/bytes.ts).
 */
import { createHash } from 'node:crypto';
import { constants, crc32, deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * zlib level of the stored objects. 6 (zlib's default) costs ~1.7× the CPU of 3 for ~5 % smaller
 * files on our JSON; see docs/feeds.md "Performance". Changing it changes the bytes (and sha256) of
 * every object, so each is rewritten once on its next publication. A fragment is part of a stored
 * object, so it is compressed at this level too.
 */
export const GZIP_LEVEL = 3;

export interface Fragment {
  /** sha256 (hex) of the uncompressed text */
  readonly sha256: string;
  /** CRC-32 of the uncompressed text */
  readonly crc: number;
  /** bytes of the uncompressed text */
  readonly length: number;
  /** raw DEFLATE, sync-flushed (empty for an empty text) */
  readonly deflate: Buffer;
}

export const sha256Hex = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/**
 * Compresses one piece of text (`sha256`: its digest, when the caller has it already) at zlib
 * `level` (default: that of every stored object; a piece compressed once and reused many times may
 * afford more).
 */
export function fragment(text: string | Buffer, sha256?: string, level: number = GZIP_LEVEL): Fragment {
  const raw = typeof text === 'string' ? Buffer.from(text) : text;
  return {
    sha256: sha256 ?? sha256Hex(raw),
    crc: crc32(raw) >>> 0,
    length: raw.length,
    deflate: raw.length ? deflateRawSync(raw, { level, finishFlush: constants.Z_SYNC_FLUSH }) : Buffer.alloc(0),
  };
}

/** The text of a fragment (tests, and the small parts a builder reads back). */
export function inflateFragment(f: Fragment): Buffer {
  return f.length ? inflateRawSync(f.deflate, { finishFlush: constants.Z_SYNC_FLUSH }) : Buffer.alloc(0);
}

// CRC-32 combination by polynomial arithmetic modulo the CRC polynomial (zlib 1.2.12's
// multmodp/x2nmodp): the CRC of A‖B from crc(A), crc(B) and |B|, in O(log |B|).
const POLY = 0xedb88320;

function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p = (p ^ b) >>> 0;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? ((b >>> 1) ^ POLY) >>> 0 : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial */
const X2N = (() => {
  const t = new Array<number>(32);
  let p = 0x40000000; // x^1
  t[0] = p;
  for (let n = 1; n < 32; n++) t[n] = p = multmodp(p, p);
  return t;
})();

/** x^(n·2^k) modulo the polynomial */
function x2nmodp(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multmodp(X2N[k & 31], p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** CRC-32 of A‖B given crc(A), crc(B) and the length of B. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multmodp(x2nmodp(lengthB, 3), crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}

/** CRC-32 of B given crc(A‖B), crc(A) and the length of B (crc32Combine solved for crc(B)). */
export function crc32Uncombine(crcAB: number, crcA: number, lengthB: number): number {
  return (multmodp(x2nmodp(lengthB, 3), crcA >>> 0) ^ (crcAB >>> 0)) >>> 0;
}

// gzip member header: magic, deflate, no flags, mtime 0 (the content says when), no extra flags, Unix
export const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]);
// an empty final block with fixed Huffman codes: BFINAL=1, BTYPE=01, end-of-block
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/** The gzip file of the fragments' texts end to end. */
export function gzipOf(fragments: readonly Fragment[]): Buffer {
  let crc = 0;
  let length = 0;
  const parts: Buffer[] = [GZIP_HEADER];
  for (const f of fragments) {
    if (!f.length) continue;
    crc = crc32Combine(crc, f.crc, f.length);
    length += f.length;
    parts.push(f.deflate);
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  // ISIZE: the length modulo 2^32 (RFC 1952)
  trailer.writeUInt32LE(length % 0x100000000, 4);
  parts.push(FINAL_BLOCK, trailer);
  return Buffer.concat(parts);
}

/** The identity of a text made of these segments: sha256 of their sha256s, in order. */
export function contentDigest(segments: ReadonlyArray<{ readonly sha256: string }>): string {
  const h = createHash('sha256');
  for (const s of segments) h.update(s.sha256).update('\n');
  return h.digest('hex');
}
