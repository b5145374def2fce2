/**
 * The serving decision of every published object (hourly files, GBFS snapshots, monthly reports),
 * taken here once for both paths that answer them: the Koa routes (api/feeds/files.ts through
 * api/kit/serve-object.ts) and the hourly files' hot path before Koa (api/feeds/hot-path.ts). The
 * two only fetch what it needs in their own way (the hot path synchronously from the caches, the
 * routes from the caches or the database and the store) and write what it decides.
 *
 *   1. the index row → the object to serve, or none (`hourFile` first for an hourly file: an hour
 *      that has not ended, or before its zone existed, does not exist at all);
 *   2. the stored object + the request's conditional headers and encodings → the answer: 200 or
 *      304, its headers in the order sent, and its body source (nothing, the stored bytes as they
 *      are, or them decoded for a client that does not take gzip).
 *
 * What a family answers when there is no object (202 "not published yet" on MDS 2.0, 404 on the
 * legacy host and for reports, 503 for GBFS) is the family's: the decision says only that.
 */
import { isNotModified } from './conditional.js';
import type { ObjectMeta } from '../../lib/core/store/types.js';
import { HOUR_MS } from '../../lib/feeds/hours.js';
import type { IndexedObject } from '../../lib/publication/keys.js';

/** An object the index names, with the version the body cache keys it by. */
export interface ServedObject {
  readonly key: string;
  /** key + sha256: a republished object is never answered from memory */
  readonly version: string;
}

const named = new WeakMap<object, ServedObject>();

/**
 * The object an index row names; undefined when it names none. Memoized per row (the index caches
 * hand out the same row object until it changes), so the hot path allocates nothing.
 */
export function servedObject(row: IndexedObject): ServedObject | undefined {
  if (!row.object_key) return undefined;
  let o = named.get(row);
  if (o === undefined || o.key !== row.object_key) {
    o = { key: row.object_key, version: `${row.object_key}|${row.sha256}` };
    named.set(row, o);
  }
  return o;
}

/** An hourly file's index row, as much of it as serving needs. */
export interface HourlyRow extends IndexedObject {
  status: 'published' | 'failed' | 'pending';
  dirty: boolean;
}

/**
 * Whether an hourly file's hour exists: it must have ended, and not before the hour its zone was
 * created in. Decided before the row is read (a future hour costs no query).
 */
export function hourFile(hourStartMs: number, nowMs: number, zoneFirstHourMs: number): 'closed' | 'not_in_past' | 'before_zone' {
  if (hourStartMs + HOUR_MS > nowMs) return 'not_in_past';
  if (hourStartMs < zoneFirstHourMs) return 'before_zone';
  return 'closed';
}

/**
 * The file a closed hour serves: only a current one (published, not dirty). Dirty, failed or
 * pending rows serve nothing: the family's "not published yet" answer.
 */
export function hourlyObject(row: HourlyRow | undefined): ServedObject | undefined {
  if (!row || row.status !== 'published' || row.dirty) return undefined;
  return servedObject(row);
}

/** The request, as the answer depends on it. */
export interface ConditionalRequest {
  head: boolean;
  ifNoneMatch: string | undefined;
  ifModifiedSince: string | undefined;
  /** the client accepts gzip (api/kit/conditional.ts acceptsEncoding) */
  acceptsGzip: boolean;
}

/** How the family serves the object. */
export interface ServeRule {
  cacheControl: string;
  /** the Content-Type sent (e.g. a versioned media type); the stored one otherwise */
  contentType?: string;
}

/** A stored object as the store or the body cache describes it. */
export interface Representation {
  meta: ObjectMeta;
  /** `Last-Modified` in HTTP form, when the caller has it already */
  lastModifiedHttp?: string;
}

export interface Answer {
  status: 200 | 304;
  /** header names and values, alternating, in the order to send them */
  headers: readonly string[];
  /** what follows the headers */
  body: 'none' | 'stored' | 'decoded';
}

/**
 * Answers per stored object (its meta), Cache-Control, Content-Type, variant and kind: built once
 * while the object is cached, found again without building a key.
 */
const answers = new WeakMap<ObjectMeta, Map<string, Map<string, Array<Answer | undefined>>>>();

type Variant = 'stored' | 'decoded';
type Kind = 'not_modified' | 'head' | 'full';
const KINDS: readonly Kind[] = ['not_modified', 'head', 'full'];

function cachedAnswer(obj: Representation, rule: ServeRule, variant: Variant, kind: Kind): Answer {
  const { meta } = obj;
  let byCache = answers.get(meta);
  if (!byCache) answers.set(meta, (byCache = new Map<string, Map<string, Array<Answer | undefined>>>()));
  let byType = byCache.get(rule.cacheControl);
  if (!byType) byCache.set(rule.cacheControl, (byType = new Map<string, Array<Answer | undefined>>()));
  const type = rule.contentType ?? meta.contentType;
  let slots = byType.get(type);
  if (!slots) byType.set(type, (slots = []));
  const slot = (variant === 'stored' ? 0 : KINDS.length) + KINDS.indexOf(kind);
  let a = slots[slot];
  if (a === undefined) {
    // the decoded bytes are another representation of the same resource: a weak validator
    const headers = [
      'ETag',
      etagOf(meta, variant),
      'Last-Modified',
      obj.lastModifiedHttp ?? meta.lastModified.toUTCString(),
      'Cache-Control',
      rule.cacheControl,
    ];
    if (meta.contentEncoding) headers.push('Vary', 'Accept-Encoding');
    if (kind !== 'not_modified') {
      headers.push('Content-Type', type);
      if (variant === 'stored') {
        if (meta.contentEncoding === 'gzip') headers.push('Content-Encoding', 'gzip');
        headers.push('Content-Length', String(meta.size));
      }
    }
    const made: Answer = { status: kind === 'not_modified' ? 304 : 200, headers: Object.freeze(headers), body: kind === 'full' ? variant : 'none' };
    a = slots[slot] = Object.freeze(made);
  }
  return a;
}

function etagOf(meta: ObjectMeta, variant: Variant): string {
  return variant === 'stored' ? meta.etag : `W/${meta.etag.replace(/^W\//, '')}`;
}

/**
 * The answer to `req` from the stored object `obj`: the stored bytes go out unchanged to clients
 * that accept gzip (and when the object is not gzip), decoded on the fly for the others (with a
 * weak ETag); 304 when the client's copy is current (If-None-Match, else If-Modified-Since); a HEAD
 * gets the headers of its GET and no body.
 */
export function answerOf(obj: Representation, req: ConditionalRequest, rule: ServeRule): Answer {
  const variant = obj.meta.contentEncoding !== 'gzip' || req.acceptsGzip ? 'stored' : 'decoded';
  if (req.ifNoneMatch || req.ifModifiedSince) {
    if (isNotModified({ ifNoneMatch: req.ifNoneMatch, ifModifiedSince: req.ifModifiedSince }, etagOf(obj.meta, variant), obj.meta.lastModified)) {
      return cachedAnswer(obj, rule, variant, 'not_modified');
    }
  }
  return cachedAnswer(obj, rule, variant, req.head ? 'head' : 'full');
}
