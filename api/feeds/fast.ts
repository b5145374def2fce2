/**
 * The hot path of the authenticating hourly-file routes: a request that the in-process caches can
 * answer completely (token verified before, zone list current, publication row and file body fresh,
 * gzip accepted) is answered here, before @koa/router's generic dispatch, with no database or store
 * access and no promise hop except the revocation check. Anything else — every error, a cache miss,
 * identity decoding, percent-encoded query strings — returns false and takes the ordinary route,
 * which answers exactly as before. This path only ever gives the answer the ordinary route would give
 * (200 or 304, same headers and bytes); it uses the same checks (roles, scope, negotiation, hour
 * rules, conditional requests) on the same cached state, so the freshness bounds of
 * docs/feeds-access.md "Performance" hold unchanged.
 */
import type Koa from 'koa';
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

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/**
 * Small memo tables for the header and parameter values clients repeat on every request; bounded by
 * clearing when full, so hostile variety costs at most a re-parse.
 */
class Memo<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max = 256) {}
  get(k: string, make: (k: string) => V): V {
    let v = this.m.get(k);
    if (v === undefined && !this.m.has(k)) {
      v = make(k);
      if (this.m.size >= this.max) this.m.clear();
      this.m.set(k, v);
    }
    return v as V;
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

/**
 * Answers the request from the caches when it can (true); false, having written nothing, otherwise.
 * Never throws.
 */
export async function tryFastHourFile(deps: FeedDeps, koa: Koa.Context, route: FastHourRoute, zoneId: string, qs: string): Promise<boolean> {
  const files = deps.files;
  if (!files) return false;
  const req = koa.req;
  const head = req.method === 'HEAD';
  if (!head && req.method !== 'GET') return false;
  const h = req.headers;
  const auth = h.authorization;
  if (auth === undefined || h['x-access-token'] !== undefined) return false;
  const m = BEARER.exec(auth);
  if (!m) return false;
  const claims = deps.tokens.cached(m[1]!);
  if (!claims) return false;

  let memo = offersByAccept.get(route);
  if (!memo) offersByAccept.set(route, (memo = new Memo()));
  const offer = memo.get(h.accept ?? '', (a) => {
    try {
      return negotiate(a || undefined, route.offers, route.fallback);
    } catch {
      return null;
    }
  });
  if (!offer || !canRead(claims.role, route.access(offer.version))) return false;
  const zone = deps.zones.peek(zoneId);
  if (!zone || !inScope(claims.zones, zoneId)) return false;

  const raw = queryValue(qs, route.param);
  if (!raw) return false;
  const hour = hours.get(raw, (r) => hourOrNull(route.param, r));
  if (!hour) return false;
  const now = deps.app.clock.now().getTime();
  const start = hour.start.getTime();
  if (start + HOUR_MS > now || start < floorHour(zone.createdAt).getTime()) return false;
  const entry = deps.publications.peek(route.feed, offer.version, zoneId, hour.sql, now);
  const row = entry?.row;
  if (!row || row.status !== 'published' || row.dirty || !row.object_key) return false;
  const obj = files.peek(row.object_key, `${row.object_key}|${row.sha256}`, now, !head);
  if (!obj || obj.meta.contentEncoding !== 'gzip') return false;
  const ae = h['accept-encoding'];
  if (!ae || !gzipOk.get(ae, (v) => acceptsEncoding(v, 'gzip'))) return false;

  try {
    if (await deps.revoked.isRevoked(claims.clientId)) return false;
  } catch {
    return false;
  }

  // Same headers, names and order as serveObject, then Koa answers as it does for that path.
  koa.state.feedClient = claims.clientId;
  (koa as { _matchedRoute?: string })._matchedRoute = route.pattern;
  const res = koa.res;
  const { meta } = obj;
  res.setHeader('ETag', meta.etag);
  res.setHeader('Last-Modified', obj.lastModifiedHttp);
  res.setHeader('Cache-Control', HOUR_FILE_CACHE_CONTROL);
  if (res.hasHeader('Vary')) koa.vary('Accept-Encoding');
  else res.setHeader('Vary', 'Accept-Encoding');
  const inm = h['if-none-match'];
  const ims = h['if-modified-since'];
  if ((inm || ims) && isNotModified({ ifNoneMatch: inm || undefined, ifModifiedSince: ims || undefined }, meta.etag, meta.lastModified)) {
    koa.status = 304;
    return true;
  }
  koa.status = 200;
  res.setHeader('Content-Type', offer.contentType);
  res.setHeader('Content-Encoding', 'gzip');
  res.setHeader('Content-Length', meta.size);
  if (!head) koa.body = obj.body;
  return true;
}
