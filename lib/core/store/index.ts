/**
 * Opens the object store named by `STORE_URL`: `file://path` (relative paths are relative to the
 * project root) or `s3://bucket/prefix` (with `S3_ENDPOINT` for any S3-compatible server).
 *
 * The backends are imported statically, not with `import()`: under mocha the test files load as
 * CommonJS, and a dynamic import would create a second copy of types.ts whose StoreError fails
 * `instanceof`. The validators both backends share live in types.ts, beside StoreError.
 */
import { isAbsolute, resolve } from 'node:path';
import type { Config } from '../config.js';
import { ROOT } from '../paths.js';
import { StoreError, type ObjectStore } from './types.js';
import { FsStore } from './fs.js';
import { S3Store } from './s3.js';

export type { ObjectStore } from './types.js';

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
      bucket: m[1],
      prefix,
      endpoint: config.s3Endpoint,
      region: config.s3Region,
      forcePathStyle: config.s3ForcePathStyle,
    });
  }
  throw new StoreError(`unsupported STORE_URL "${url}"`);
}
