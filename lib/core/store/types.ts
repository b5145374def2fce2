/**
 * The object store: where the publisher puts feed files, photos and receipts, and from which the API
 * streams them. Two backends (filesystem, S3) pass the same contract tests. A reader never sees a
 * partially written object: the filesystem backend writes a temp file and renames it, S3 PUTs are
 * atomic by protocol.
 */
import type { Readable } from 'node:stream';

export interface PutOptions {
  contentType: string;
  /** e.g. `gzip` when the bytes are stored compressed */
  contentEncoding?: string;
  /** small string metadata (sha256, record count, last_updated …); keys are lower-case [a-z0-9-] */
  metadata?: Record<string, string>;
}

export interface ObjectMeta {
  key: string;
  size: number;
  contentType: string;
  contentEncoding?: string;
  /** strong validator of the stored bytes, quoted as in HTTP (`"…"`) */
  etag: string;
  lastModified: Date;
  metadata: Record<string, string>;
}

export interface StoredObject {
  meta: ObjectMeta;
  body: Readable;
}

export interface ObjectStore {
  /** Writes the whole object or nothing. `body` may be a Buffer or a stream of unknown length. */
  put(key: string, body: Buffer | Readable, opts: PutOptions): Promise<ObjectMeta>;
  /** The object as a stream with its metadata, or undefined when it does not exist. */
  get(key: string): Promise<StoredObject | undefined>;
  head(key: string): Promise<ObjectMeta | undefined>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): AsyncIterable<ObjectMeta>;
  /** Deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
  /** Throws when the store cannot be reached (readiness). */
  check(): Promise<void>;
  close(): Promise<void>;
}

export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9._=-]*(\/[A-Za-z0-9][A-Za-z0-9._=-]*)*$/;

/** Keys are relative slash-separated paths of safe characters, no `..`, no empty segments. */
export function assertKey(key: string): void {
  if (key.length > 512 || !KEY.test(key) || key.split('/').some((s) => s === '.' || s === '..' || s.includes('..'))) {
    throw new StoreError(`invalid object key: ${JSON.stringify(key)}`);
  }
}

const META_KEY = /^[a-z0-9][a-z0-9-]{0,63}$/;
const META_VALUE = /^[\x20-\x7e]*$/;
const TOKEN = /^[\x21-\x7e]+$/;

/**
 * The put options both backends accept: what S3 can carry as headers (x-amz-meta-* is limited to
 * printable ASCII and 2 KB in all), so that an object stored on disk could move to S3 unchanged.
 */
export function assertPutOptions(opts: PutOptions): void {
  if (!opts || typeof opts.contentType !== 'string' || !/^[\x20-\x7e]+$/.test(opts.contentType)) {
    throw new StoreError('put: contentType is required (printable ASCII)');
  }
  if (opts.contentEncoding !== undefined && !TOKEN.test(opts.contentEncoding)) {
    throw new StoreError('put: invalid contentEncoding');
  }
  let total = 0;
  for (const [k, v] of Object.entries(opts.metadata ?? {})) {
    if (!META_KEY.test(k)) throw new StoreError(`put: invalid metadata key ${JSON.stringify(k)} (lower-case [a-z0-9-])`);
    if (typeof v !== 'string' || !META_VALUE.test(v)) throw new StoreError(`put: metadata ${k} must be printable ASCII`);
    total += k.length + v.length;
  }
  if (total > 2048) throw new StoreError('put: metadata larger than 2 KB');
}

const PREFIX = /^[A-Za-z0-9._=\/-]*$/;

/** A list prefix: any beginning of a valid key (may end inside a segment or with `/`). */
export function assertPrefix(prefix: string): void {
  if (typeof prefix !== 'string' || prefix.length > 512 || !PREFIX.test(prefix) || prefix.startsWith('/') || prefix.includes('//') || prefix.includes('..')) {
    throw new StoreError(`invalid list prefix: ${JSON.stringify(prefix)}`);
  }
}
