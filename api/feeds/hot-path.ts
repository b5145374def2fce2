/**
 * The hot path of the authenticating hourly-file routes: a request that the in-process caches can
 * answer completely (token verified before, zone list current, publication row and file body fresh,
 * gzip accepted, the client's standing loaded and current) is answered on the raw node:http
 * request, before Koa (api/app.ts `withHotPath`), synchronously: no database or store access, no
 * promise hop. Anything else — every error, a cache miss, identity decoding, percent-encoded query
 * strings — goes to Koa untouched and takes the ordinary route, which answers exactly as before. This path only ever gives the answer
 * the ordinary route would give (200 or 304, same headers in the same order, same bytes); it uses the
 * same checks (roles, scope, negotiation, hour rules, conditional requests) on the same cached state,
 * so the freshness bounds of docs/feeds-access.md "Performance" hold unchanged. What the outermost
 * middleware guarantees (request id, metrics, access line) comes from the same helper (request-envelope.ts).
 */
import { LRUCache } from 'lru-cache';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { CachedObject } from '../../lib/http/object-cache.js';
import { requestIdOf, type RequestTelemetry } from '../middleware/request-envelope.js';
import { floorHour, HOUR_MS } from '../../lib/feeds/hours.js';
import type { HourlyFeedName } from '../../lib/feeds/publications.js';
import { canRead, inScope, type FeedAccess } from '../../lib/feeds/roles.js';
import { acceptsEncoding, isNotModified } from '../../lib/http/conditional.js';
import type { FeedDeps } from './auth.js';
import { negotiate, type MediaOffer } from './accept.js';
import { HOUR_FILE_CACHE_CONTROL } from './files.js';
import { timeHourParam, type Hour } from './params.js';

export interface FastHourRoute {
  /** the router's pattern of the route (the metrics label the ordinary path would give) */
  pattern: string;
  feed: HourlyFeedName;
  /** the query parameter naming the hour */
  param: string;
  offers: readonly MediaOffer<string>[];
  /** undefined: the client must name a version (legacy host) */
  fallback: MediaOffer<string> | undefined;
  access: (version: string) => FeedAccess;
}

/** A hot route: its raw-URL pattern (group 1 the zone id, group 2 the query string) and its rules. */
export interface FastHourFile {
  re: RegExp;
  route: FastHourRoute;
}

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/**
 * Small memo tables for the header and parameter values clients repeat on every request; bounded
 * (lru-cache), so hostile variety costs at most a re-parse. Values are boxed: lru-cache holds no
 * null, and a refused value is remembered as null.
 */
class Memo<V> {
  private readonly m: LRUCache<string, { v: V }>;
  constructor(max = 256) {
    this.m = new LRUCache<string, { v: V }>({ max });
  }
  get(k: string, make: (k: string) => V): V {
    let box = this.m.get(k);
    if (box === undefined) {
      box = { v: make(k) };
      this.m.set(k, box);
    }
    return box.v;
  }
}

const hours = new Memo<Hour | null>();
const gzipOk = new Memo<boolean>();
const offersByAccept = new WeakMap<FastHourRoute, Memo<MediaOffer<string> | null>>();

function hourOrNull(param: string, raw: string): Hour | null {
  try {
    return timeHourParam(param, raw);
  } catch {
    return null;
  }
}

/**
 * The one value of `name` in a raw query string, exactly as URLSearchParams would decode it; undefined
 * when absent, repeated, or when decoding would be needed ('%', '+'): the ordinary path decides then.
 */
export function queryValue(qs: string, name: string): string | undefined {
  if (qs.includes('%') || qs.includes('+')) return undefined;
  let found: string | undefined;
  let i = 0;
  while (i <= qs.length) {
    let amp = qs.indexOf('&', i);
    if (amp < 0) amp = qs.length;
    if (amp > i) {
      const eq = qs.indexOf('=', i);
      const end = eq >= 0 && eq < amp ? eq : amp;
      if (end - i === name.length && qs.startsWith(name, i)) {
        if (found !== undefined) return undefined;
        found = end === amp ? '' : qs.slice(end + 1, amp);
      }
    }
    i = amp + 1;
  }
  return found;
}

/** What the caches say the ordinary route would answer. */
interface FastAnswer {
  status: 200 | 304;
  obj: CachedObject;
  contentType: string;
}

/**
 * The answer the ordinary route would give, when the caches can give all of it; undefined otherwise
 * (then nothing may be written). Synchronous: everything it reads is in memory.
 */
function answerFromCaches(deps: FeedDeps, req: IncomingMessage, route: FastHourRoute, zoneId: string, qs: string): FastAnswer | undefined {
  const files = deps.files;
  if (!files) return undefined;
  const head = req.method === 'HEAD';
  if (!head && req.method !== 'GET') return undefined;
  const h = req.headers;
  const auth = h.authorization;
  if (auth === undefined || h['x-access-token'] !== undefined) return undefined;
  const m = BEARER.exec(auth);
  if (!m) return undefined;
  const claims = deps.tokens.cached(m[1]!);
  if (!claims) return undefined;

  let memo = offersByAccept.get(route);
  if (!memo) offersByAccept.set(route, (memo = new Memo()));
  const offer = memo.get(h.accept ?? '', (a) => {
    try {
      return negotiate(a || undefined, route.offers, route.fallback);
    } catch {
      return null;
    }
  });
  if (!offer || !canRead(claims.role, route.access(offer.version))) return undefined;
  const zone = deps.zones.peek(zoneId);
  if (!zone || !inScope(claims.zones, zoneId)) return undefined;

  const raw = queryValue(qs, route.param);
  if (!raw) return undefined;
  const hour = hours.get(raw, (r) => hourOrNull(route.param, r));
  if (!hour) return undefined;
  const now = deps.app.clock.now().getTime();
  const start = hour.start.getTime();
  if (start + HOUR_MS > now || start < floorHour(zone.createdAt).getTime()) return undefined;
  const entry = deps.publications.peekRow(route.feed, offer.version, zoneId, hour.sql);
  const row = entry?.row;
  if (!row || row.status !== 'published' || row.dirty || !row.object_key) return undefined;
  const obj = files.peek(row.object_key, `${row.object_key}|${row.sha256}`, now, !head);
  if (!obj || obj.meta.contentEncoding !== 'gzip') return undefined;
  const ae = h['accept-encoding'];
  if (!ae || !gzipOk.get(ae, (v) => acceptsEncoding(v, 'gzip'))) return undefined;

  // a client the loaded standings do not know as active (or a refresh due) is the ordinary path's to decide
  if (deps.revoked.peek(claims.clientId) !== 'active') return undefined;
  const inm = h['if-none-match'];
  const ims = h['if-modified-since'];
  const notModified = Boolean((inm || ims) && isNotModified({ ifNoneMatch: inm || undefined, ifModifiedSince: ims || undefined }, obj.meta.etag, obj.meta.lastModified));
  return { status: notModified ? 304 : 200, obj, contentType: offer.contentType };
}

/**
 * Writes `a` as Koa would after the outermost middleware and serveObject: X-Request-Id first, then
 * the headers of serveObject in its order; a 304 and a HEAD end without a body.
 */
function writeAnswer(req: IncomingMessage, res: ServerResponse, a: FastAnswer, requestId: string): void {
  const { meta } = a.obj;
  res.setHeader('X-Request-Id', requestId);
  res.setHeader('ETag', meta.etag);
  res.setHeader('Last-Modified', a.obj.lastModifiedHttp);
  res.setHeader('Cache-Control', HOUR_FILE_CACHE_CONTROL);
  res.setHeader('Vary', 'Accept-Encoding');
  res.statusCode = a.status;
  if (a.status === 304) {
    res.end();
    return;
  }
  res.setHeader('Content-Type', a.contentType);
  res.setHeader('Content-Encoding', 'gzip');
  res.setHeader('Content-Length', String(meta.size));
  if (req.method === 'HEAD') res.end();
  else res.end(a.obj.body);
}

/** Answers one request before Koa, or hands it to `fallback` (the Koa app) untouched. */
export type HotPath = (req: IncomingMessage, res: ServerResponse, fallback: RequestListener) => void;

/**
 * The hot path of one host: requests whose raw URL matches one of `files` are tried against the
 * caches; whatever they cannot answer, and every other request, goes to `fallback` as it came.
 * `telemetry` is the host's outermost-middleware helper, so an answer here counts and logs as one
 * through Koa would (same labels, route pattern as the router's).
 */
export function hourFileHotPath(deps: FeedDeps, files: readonly FastHourFile[], telemetry: RequestTelemetry): HotPath {
  return (req, res, fallback) => {
    const method = req.method;
    if (!deps.files || (method !== 'GET' && method !== 'HEAD')) return fallback(req, res);
    const url = req.url ?? '';
    for (const { re, route } of files) {
      const m = re.exec(url);
      if (!m) continue;
      const started = performance.now();
      let a: FastAnswer | undefined;
      try {
        a = answerFromCaches(deps, req, route, m[1]!, m[2] ?? '');
      } catch {
        a = undefined;
      }
      if (!a) return fallback(req, res);
      const requestId = requestIdOf(req.headers['x-request-id']);
      writeAnswer(req, res, a, requestId);
      telemetry.finish(started, method, route.pattern, a.status, url, requestId);
      return;
    }
    fallback(req, res);
  };
}
