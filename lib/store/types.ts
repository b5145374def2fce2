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
