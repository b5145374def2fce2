/**
 * The bytes of a published object as the store holds them: always gzip, and described by the
 * sha256 and length of exactly those bytes. Every index row's `sha256` (feed_publications,
 * gbfs_snapshots, feed_reports), the object's `sha256` metadata and the serving cache's version are
 * this digest, so "the same sha256" means "the same stored bytes" whichever writer made them.
 *
 * Three ways to make them, one per shape of content:
 *   gzipBytes(text)        a small text compressed whole (monthly reports);
 *   stitchedBytes(pieces)  pieces compressed once and stitched into one gzip member (GBFS,
 *                          lib/core/gzip.ts), never compressed again whole;
 *   GzipSpool              a stream of text compressed into a spool file with backpressure, memory
 *                          independent of the size (hourly files).
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { GZIP_LEVEL, gzipOf, type Fragment } from '../../lib/core/gzip.js';

/** The stored form of one object: gzip bytes, their sha256 (hex) and their length. */
export interface StoredBytes {
  readonly sha256: string;
  readonly bytes: number;
  /** the bytes; each call a fresh reader, so that a put can be repeated */
  body(): Buffer | Readable;
}

const sha256Hex = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function inMemory(gz: Buffer): StoredBytes {
  return { sha256: sha256Hex(gz), bytes: gz.length, body: () => gz };
}

/** A text compressed whole. */
export function gzipBytes(text: string | Buffer): StoredBytes {
  return inMemory(gzipSync(text, { level: GZIP_LEVEL }));
}

/** Independently compressed pieces stitched into one gzip member (nothing is compressed again). */
export function stitchedBytes(fragments: readonly Fragment[]): StoredBytes {
  return inMemory(gzipOf(fragments));
}

/** sha256 and byte count of what flows through. */
class Digest extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    cb(null, chunk);
  }
}

/** text gathered before it is handed to gzip */
const CHUNK = 64 * 1024;

const settled = () => undefined;

/**
 * Text → gzip → sha256/bytes → a spool file. The digest is known when `end` resolves, before the
 * store is touched: that is what lets "the same bytes again write nothing" hold for a file of any
 * size. Writes are gathered into CHUNK-sized pieces for gzip; `write` returns false when gzip's
 * buffer is full (await `drained()` before more).
 */
export class GzipSpool {
  private buf: string;
  private readonly gzip = createGzip({ level: GZIP_LEVEL });
  private readonly digest = new Digest();
  private readonly done: Promise<void>;
  error: Error | undefined;

  constructor(
    readonly path: string,
    head = '',
  ) {
    this.buf = head;
    this.done = pipeline(this.gzip, this.digest, createWriteStream(path));
    this.done.catch((err: Error) => (this.error ??= err));
  }

  write(text: string): boolean {
    this.buf += text;
    if (this.buf.length < CHUNK) return true;
    const ok = this.gzip.write(this.buf);
    this.buf = '';
    return ok;
  }

  /** Resolves when gzip takes more, or when the spool has failed (check `error`). */
  drained(): Promise<void> {
    return Promise.race([new Promise<void>((resolve) => this.gzip.once('drain', resolve)), this.done.then(settled, settled)]);
  }

  /** Writes `tail`, finishes the file and describes it; its body is read back from the spool file. */
  async end(tail = ''): Promise<StoredBytes> {
    this.gzip.end(this.buf + tail);
    this.buf = '';
    await this.done;
    const path = this.path;
    return { sha256: this.digest.hash.digest('hex'), bytes: this.digest.bytes, body: () => createReadStream(path) };
  }

  abort(err: Error): void {
    this.error ??= err;
    this.gzip.destroy(err);
  }
}
