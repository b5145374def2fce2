/**
 * Answers a request with an object of the store through Koa, as the serving decision says
 * (api/kit/serve.ts answerOf: 200 or 304, the headers in their order, the body source):
 * HEAD without opening the object, the stored gzip bytes unchanged for clients that accept gzip and
 * decoded on the fly (streaming, constant memory) for the others. With an ObjectCache (published
 * objects), a hot object is answered from memory with one write; see object-cache.ts for its
 * freshness rules.
 */
import type Koa from 'koa';
import { createGunzip } from 'node:zlib';
import { pipeline, PassThrough, Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { ObjectMeta, ObjectStore } from '../../lib/core/store/types.js';
import { answerOf, type Answer, type ServeRule } from './serve.js';
import { acceptsEncoding } from './conditional.js';
import type { ObjectCache } from './object-cache.js';
import { requestLogOf } from './request-log.js';
import { declareDigest, decodedDigestOf, recordedDigestOf } from './content-digest.js';

export interface ServeObjectOptions extends ServeRule {
  /**
   * Serve through this cache; `version` is what the caller's index says the object is (e.g. the
   * publication row's key + sha256), so that a republished object is never answered from memory.
   */
  cache?: { cache: ObjectCache; version: string };
  /**
   * An object answered in another form than it is stored in (a GBFS file: its stored data in the
   * envelope of a later last_updated): given the stored object's metadata, the representation to
   * answer (made before), a function from the stored bytes to it, or undefined to answer what is
   * stored. The function may answer undefined too (the bytes are not what it expects): what is
   * stored is answered.
   */
  derive?: (meta: ObjectMeta) => Derived | ((stored: Buffer) => Derived | undefined) | undefined;
}

/** A representation made from the stored bytes (ServeObjectOptions.derive). */
export interface Derived {
  meta: ObjectMeta;
  body: Buffer;
  lastModifiedHttp: string;
}

interface Found {
  meta: ObjectMeta;
  body: Readable | Buffer | undefined;
  lastModifiedHttp?: string | undefined;
}

async function find(store: ObjectStore, key: string, head: boolean, cache: ServeObjectOptions['cache']): Promise<Found | undefined> {
  if (!cache) return head ? store.head(key).then((meta) => meta && { meta, body: undefined }) : store.get(key);
  if (head) return cache.cache.head(store, key, cache.version).then((h) => h && { meta: h.meta, body: undefined, lastModifiedHttp: h.lastModifiedHttp });
  const loaded = await cache.cache.load(store, key, cache.version);
  if (!loaded) return undefined;
  return 'cached' in loaded
    ? { meta: loaded.cached.meta, body: loaded.cached.body, lastModifiedHttp: loaded.cached.lastModifiedHttp }
    : { meta: loaded.meta, body: loaded.stream };
}

/** Sets the decided headers in their order (Vary merged with what an outer middleware set). */
function setHeaders(ctx: Koa.Context, headers: readonly string[]): void {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i];
    const value = headers[i + 1];
    if (name === 'Vary') ctx.vary(value);
    else if (name === 'Content-Length') ctx.length = Number(value);
    else ctx.set(name, value);
  }
}

/**
 * Answers the request with the object at `key`. Returns false, having written nothing, when the
 * object does not exist (the caller decides what that means).
 */
export async function serveObject(ctx: Koa.Context, store: ObjectStore, key: string, opts: ServeObjectOptions): Promise<boolean> {
  let found = await find(store, key, ctx.method === 'HEAD', opts.cache);
  if (!found) return false;
  const derive = opts.derive?.(found.meta);
  if (derive && typeof derive !== 'function') {
    found = derive;
  } else if (derive) {
    // the stored bytes, even for a HEAD (the derived length is the answer's Content-Length)
    const full = found.body ? found : await find(store, key, false, opts.cache);
    if (!full) return false;
    const stored = Buffer.isBuffer(full.body) ? full.body : await buffer(full.body!);
    found = derive(stored) ?? { ...full, body: stored };
  }
  const answer: Answer = answerOf(
    found.lastModifiedHttp ? { meta: found.meta, lastModifiedHttp: found.lastModifiedHttp } : { meta: found.meta },
    {
      head: ctx.method === 'HEAD',
      ifNoneMatch: ctx.get('If-None-Match') || undefined,
      ifModifiedSince: ctx.get('If-Modified-Since') || undefined,
      acceptsGzip: acceptsEncoding(ctx.get('Accept-Encoding') || undefined, 'gzip'),
    },
    opts,
  );
  const { body } = found;
  if (answer.body === 'none' && body && !Buffer.isBuffer(body)) body.destroy();
  ctx.status = answer.status;
  setHeaders(ctx, answer.headers);
  if (answer.body === 'stored') {
    // an object too large for the body cache streams from the store: its digest is the one its writer
    // recorded, so a signed answer need not gather it first
    const recorded = Buffer.isBuffer(body) ? undefined : recordedDigestOf(found.meta.metadata.sha256);
    if (recorded && body) declareDigest(body, recorded);
    ctx.body = body!;
  } else if (answer.body === 'decoded') {
    // pipeline() destroys both sides on error (a corrupt object or a client gone away)
    const out = new PassThrough();
    pipeline(Buffer.isBuffer(body) ? Readable.from([body], { objectMode: false }) : body!, createGunzip(), out, (err) => {
      if (err) requestLogOf(ctx)?.warn({ err: err.message, key }, 'decoding stored object failed');
    });
    // the decoded bytes of a cached object are the same every time: their digest once per object,
    // so that a signed answer (api/feeds/signatures.ts) can still stream
    const digest = Buffer.isBuffer(body) ? decodedDigestOf(body) : undefined;
    if (digest) declareDigest(out, digest);
    // Content-Type is already set, so Koa keeps it for the stream body.
    ctx.body = out;
  }
  return true;
}
