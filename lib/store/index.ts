/**
 * Opens the object store named by `STORE_URL`: `file://path` (relative paths are relative to the
 * project root) or `s3://bucket/prefix` (with `S3_ENDPOINT` for any S3-compatible server).
 *
 * The backends are imported statically, not with `import()`: under mocha the test files load as
 * CommonJS, and a dynamic import would create a second copy of types.ts whose StoreError fails
 * `instanceof`. The backends import the validators below back from this module; that cycle is safe
 * because only function declarations cross it, and only at call time.
 */
import { isAbsolute, resolve } from 'node:path';
import type { Config } from '../config.js';
import { ROOT } from '../paths.js';
import { StoreError, type ObjectStore, type PutOptions } from './types.js';
import { FsStore } from './fs.js';
import { S3Store } from './s3.js';

export type { ObjectStore, ObjectMeta, PutOptions, StoredObject } from './types.js';
export { StoreError, assertKey } from './types.js';

export async function openStore(config: Config): Promise<ObjectStore> {
  const url = config.storeUrl;
  if (url.startsWith('file://')) {
    const raw = decodeURIComponent(url.slice('file://'.length));
    if (raw === '') throw new StoreError('STORE_URL file:// needs a path');
    const root = isAbsolute(raw) ? raw : resolve(ROOT, raw);
    return FsStore.open(root);
  }
  if (url.startsWith('s3://')) {
    const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
    if (!m) throw new StoreError(`STORE_URL must be s3://bucket[/prefix], got "${url}"`);
    const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
    return S3Store.open({
      bucket: m[1]!,
      prefix,
      endpoint: config.s3Endpoint,
      region: config.s3Region,
      forcePathStyle: config.s3ForcePathStyle,
    });
  }
  throw new StoreError(`unsupported STORE_URL "${url}"`);
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
