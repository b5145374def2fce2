/**
 * Serves an object of the store over HTTP: ETag, Last-Modified, Cache-Control, 304 on
 * If-None-Match / If-Modified-Since, HEAD without opening the object, and gzip passthrough — the
 * stored gzip bytes go out unchanged to clients that accept gzip, and are decoded on the fly
 * (streaming, constant memory) for the others. With an ObjectCache (feed files), a hot object is
 * answered from memory with one write; see object-cache.ts for its freshness rules.
 */
import type Koa from 'koa';
import { createGunzip } from 'node:zlib';
import { pipeline, PassThrough, Readable } from 'node:stream';
import type { ObjectMeta, ObjectStore } from '../store/types.js';
import { acceptsEncoding, isNotModified } from './conditional.js';
import type { ObjectCache } from './object-cache.js';

export interface ServeObjectOptions {
  cacheControl: string;
  /** Content-Type to send (e.g. a versioned media type); the stored type otherwise */
  contentType?: string;
  /**
   * Serve through this cache; `version` is what the caller's index says the object is (e.g. the
   * publication row's key + sha256), so that a republished object is never answered from memory.
   */
  cache?: { cache: ObjectCache; version: string };
}

function setCommonHeaders(ctx: Koa.Context, meta: ObjectMeta, etag: string, opts: ServeObjectOptions, lastModifiedHttp?: string): void {
  ctx.set('ETag', etag);
  ctx.set('Last-Modified', lastModifiedHttp ?? meta.lastModified.toUTCString());
  ctx.set('Cache-Control', opts.cacheControl);
  if (meta.contentEncoding) ctx.vary('Accept-Encoding');
}

/**
 * Answers the request with the object at `key`. Returns false, having written nothing, when the
 * object does not exist (the caller decides what that means).
 */
export async function serveObject(ctx: Koa.Context, store: ObjectStore, key: string, opts: ServeObjectOptions): Promise<boolean> {
  const head = ctx.method === 'HEAD';
  let found: { meta: ObjectMeta; body: Readable | Buffer | undefined; lastModifiedHttp?: string | undefined } | undefined;
  if (opts.cache) {
    const { cache, version } = opts.cache;
    if (head) found = await cache.head(store, key, version).then((h) => h && { meta: h.meta, body: undefined, lastModifiedHttp: h.lastModifiedHttp });
    else {
      const loaded = await cache.load(store, key, version);
      found = loaded && ('cached' in loaded ? { meta: loaded.cached.meta, body: loaded.cached.body, lastModifiedHttp: loaded.cached.lastModifiedHttp } : { meta: loaded.meta, body: loaded.stream });
    }
  } else {
    found = head ? await store.head(key).then((meta) => meta && { meta, body: undefined }) : await store.get(key);
  }
  if (!found) return false;
  const { meta, body } = found;
  const gzipped = meta.contentEncoding === 'gzip';
  const passthrough = !gzipped || acceptsEncoding(ctx.get('Accept-Encoding') || undefined, 'gzip');
  // The decoded bytes are a different representation of the same resource: a weak validator.
  const etag = passthrough ? meta.etag : `W/${meta.etag.replace(/^W\//, '')}`;
  setCommonHeaders(ctx, meta, etag, opts, found.lastModifiedHttp);

  if (isNotModified({ ifNoneMatch: ctx.get('If-None-Match') || undefined, ifModifiedSince: ctx.get('If-Modified-Since') || undefined }, etag, meta.lastModified)) {
    if (body && !Buffer.isBuffer(body)) body.destroy();
    ctx.status = 304;
    return true;
  }

  ctx.status = 200;
  ctx.set('Content-Type', opts.contentType ?? meta.contentType);
  if (passthrough) {
    if (gzipped) ctx.set('Content-Encoding', 'gzip');
    ctx.length = meta.size;
    if (head) return true;
    ctx.body = body!;
    return true;
  }
  if (head) return true;
  // pipeline() destroys both sides on error (a corrupt object or a client gone away).
  const out = new PassThrough();
  pipeline(Buffer.isBuffer(body) ? Readable.from([body], { objectMode: false }) : body!, createGunzip(), out, (err) => {
    if (err) ctx.state.log?.warn({ err: err.message, key }, 'decoding stored object failed');
  });
  // Content-Type is already set, so Koa keeps it for the stream body.
  ctx.body = out;
  return true;
}
