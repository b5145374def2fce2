/**
 * A byte-bounded in-memory LRU (lru-cache, sized in body bytes) of stored objects (the gzip bytes as stored, with their metadata), for
 * the feed files many clients fetch in the same hours. A hit answers with one `res.end(buffer)`
 * instead of open + trailer read + a stream of 64 KB chunks, which is what made the authenticating
 * file route several times slower than a static file server.
 *
 * Freshness. Each entry carries the `version` the caller's index gave when it was filled (the
 * publication row's object key + sha256): a request whose index names another version never gets the
 * old bytes. Independently of the index, an entry is checked against the store (a HEAD) when it is
 * older than `revalidateMs` (default 2 s by the clock), so an object deleted or rewritten behind the
 * index's back is noticed within that bound too. Objects larger than `maxEntryBytes` are never
 * cached; the caller streams them.
 */
import type { Readable } from 'node:stream';
import { NamedCache } from '../../lib/core/cache.js';
import type { Clock } from '../../lib/core/clock.js';
import type { ObjectMeta, ObjectStore } from '../../lib/core/store/types.js';

export interface CachedObject {
  meta: ObjectMeta;
  body: Buffer;
  /** `Last-Modified` in HTTP form, computed once */
  lastModifiedHttp: string;
}

interface Entry extends CachedObject {
  key: string;
  version: string;
  checkedAt: number;
}

/** What `load` found: a cached object, an uncacheable one as a stream, or nothing (no such object). */
export type Loaded = { cached: CachedObject } | { meta: ObjectMeta; stream: Readable } | undefined;

export interface ObjectCacheOptions {
  maxBytes: number;
  /** default: a quarter of maxBytes, at most 32 MB */
  maxEntryBytes?: number;
  revalidateMs?: number;
  clock: Clock;
}

export class ObjectCache {
  /** Byte-bounded by lru-cache (sizes are body bytes); the least recently used entry goes first. */
  private readonly entries: NamedCache<string, Entry>;
  private readonly inflight = new Map<string, Promise<Loaded>>();
  readonly maxBytes: number;
  readonly maxEntryBytes: number;
  private readonly revalidateMs: number;
  private readonly clock: Clock;

  constructor(opts: ObjectCacheOptions) {
    this.maxBytes = opts.maxBytes;
    this.maxEntryBytes = Math.min(opts.maxEntryBytes ?? Math.floor(opts.maxBytes / 4), opts.maxBytes);
    this.revalidateMs = opts.revalidateMs ?? 2000;
    this.clock = opts.clock;
    this.entries = new NamedCache<string, Entry>('object_bodies', { maxSize: Math.max(1, this.maxBytes), sizeCalculation: (e) => Math.max(1, e.body.length) });
  }

  /** Bytes held (bodies only). */
  get bytes(): number {
    return this.entries.calculatedSize;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The object at `key` as of index version `version`: from memory when the entry has that version
   * and was checked against the store less than `revalidateMs` ago, else read from the store (and
   * cached when it fits). Concurrent misses on one key share one read.
   */
  async load(store: ObjectStore, key: string, version: string): Promise<Loaded> {
    const now = this.clock.now().getTime();
    const hit = this.peek(key, version, now, true);
    if (hit) return { cached: hit };
    const e = this.entries.peek(key);
    const id = `${key}\n${version}`;
    let p = this.inflight.get(id);
    if (!p) {
      p = this.fill(store, key, version, e, now).finally(() => this.inflight.delete(id));
      this.inflight.set(id, p);
      return p;
    }
    // A shared load that ended as a stream can be consumed only once: read again on our own.
    const shared = await p;
    return shared && 'stream' in shared ? this.fill(store, key, version, undefined, now) : shared;
  }

  /**
   * The entry of `key` when it has `version` and was checked against the store less than
   * `revalidateMs` before `now`; undefined when `load`/`head` has to go to the store. `touch` marks
   * it recently used (a GET; a HEAD does not). Synchronous, for the hot path.
   */
  peek(key: string, version: string, now: number, touch: boolean): CachedObject | undefined {
    const e = this.entries.peek(key);
    if (e === undefined || e.version !== version || now < e.checkedAt || now - e.checkedAt >= this.revalidateMs) return undefined;
    if (touch) this.entries.get(key);
    return e;
  }

  /** The metadata only (HEAD): from a current entry, else from the store without filling. */
  async head(store: ObjectStore, key: string, version: string): Promise<{ meta: ObjectMeta; lastModifiedHttp?: string } | undefined> {
    const now = this.clock.now().getTime();
    const e = this.entries.peek(key);
    if (e && e.version === version && now >= e.checkedAt && now - e.checkedAt < this.revalidateMs) return e;
    const meta = await store.head(key);
    return meta && { meta };
  }

  private async fill(store: ObjectStore, key: string, version: string, old: Entry | undefined, now: number): Promise<Loaded> {
    if (old && old.version === version) {
      // Same version, checked too long ago: a HEAD tells whether the bytes we hold are still the store's.
      const meta = await store.head(key);
      if (!meta) {
        this.drop(key);
        return undefined;
      }
      if (meta.etag === old.meta.etag && meta.size === old.meta.size && meta.lastModified.getTime() === old.meta.lastModified.getTime()) {
        old.checkedAt = now;
        this.entries.get(key);
        return { cached: old };
      }
    }
    const found = await store.get(key);
    if (!found) {
      this.drop(key);
      return undefined;
    }
    const { meta, body } = found;
    if (meta.size > this.maxEntryBytes) {
      this.drop(key);
      return { meta, stream: body };
    }
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of body as AsyncIterable<Buffer>) {
      chunks.push(c);
      n += c.length;
    }
    const bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, n);
    if (bytes.length !== meta.size) throw new Error(`object ${key}: read ${bytes.length} bytes, expected ${meta.size}`);
    const entry: Entry = { key, version, meta, body: bytes, lastModifiedHttp: meta.lastModified.toUTCString(), checkedAt: now };
    this.entries.set(key, entry);
    return { cached: entry };
  }

  private drop(key: string): void {
    this.entries.delete(key);
  }
}
