/**
 * The hot path of the authenticating hourly-file routes: a request that the in-process caches can
 * answer completely (token verified before, zone list current, publication row and file body fresh,
 * gzip accepted, the client's standing or its key loaded and current) is answered on the raw node:http
 * request, before Koa (api/app.ts `withHotPath`), synchronously: no database or store access, no
 * promise hop. Anything else — every error, a cache miss, identity decoding, percent-encoded query
 * strings — goes to Koa untouched and takes the ordinary route. This path only ever gives the answer
 * the ordinary route would give (200 or 304, same headers in the same order, same bytes) by
 * construction: the hour rule, the row rule and the answer (status, headers, body source) are the
 * serving decision's (api/kit/serve.ts) that the route follows too, taken on the same cached
 * state, and the access checks (roles, scope, negotiation) are the route's own functions; so the
 * freshness bounds of docs/feeds-access.md "Performance" hold unchanged. What the outermost
 * middleware guarantees (request id, metrics, access line) comes from the same helper (request-envelope.ts).
 *
 * Per-request cost is what limits a file route answered from memory (docs/benchmarks.md, feeds):
 * what depends only on the request's strings is decided once per keep-alive connection (`Shape`),
 * and the answer's headers once per cached object (the decision's answers are built once per
 * object; `headerBlock` adds the request id's and the signature's slots, one `writeHead`). The
 * signature is the one the ordinary route would make (api/feeds/signatures.ts), made once per
 * answer, request line and second.
 */
import { bearerOf } from '../kit/api-key-gate.js';
import { NamedCache } from '../../lib/core/cache.js';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { CachedObject, ObjectCache } from '../kit/object-cache.js';
import type { FeedTokenClaims } from './access-tokens.js';
import { requestIdOf, type RequestTelemetry } from '../middleware/request-envelope.js';
import { floorHour } from '../../lib/feeds/hours.js';
import type { HourlyFeedName } from '../../lib/feeds/publications.js';
import { canRead, inScope, type FeedAccess } from '../../lib/feeds/roles.js';
import { acceptsEncoding } from '../kit/conditional.js';
import { answerOf, hourFile, hourlyObject, type Answer, type ServeRule } from '../kit/serve.js';
import type { FeedDeps } from './auth.js';
import { feedKeyId, type FeedKeyPrincipal } from '../../lib/feeds/keys.js';
import { negotiate, type MediaOffer } from './accept.js';
import { HOUR_FILE_CACHE_CONTROL } from './files.js';
import type { ZoneInfo } from './zones.js';
import { timeHourParam, type Hour } from './params.js';
import type { FeedSigner, SignedParts } from './signatures.js';
import { contentDigestOf } from '../kit/content-digest.js';
import type { SigningKeys } from '../../lib/feeds/signing-keys.js';

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

/**
 * Small memo tables for the header and parameter values clients repeat on every request; bounded
 * (lru-cache), so hostile variety costs at most a re-parse. Values are boxed: lru-cache holds no
 * null, and a refused value is remembered as null.
 */
class Memo<V> {
  private readonly m: NamedCache<string, { v: V }>;
  constructor(max = 256) {
    this.m = new NamedCache<string, { v: V }>('hot_path_memo', { max });
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
function queryValue(qs: string, name: string): string | undefined {
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
 * What one connection's last hot answer was decided from, and what those strings decide: keep-alive
 * clients repeat the same request (same URL, token, Accept and Accept-Encoding), and for them the
 * matching, parsing and memo lookups that depend on nothing but those strings are done once per
 * connection. Everything that depends on the time or on a cache's freshness — the token's expiry,
 * the zone list, the revocation set, the publication row, the cached body, the conditional headers —
 * is still read on every request, from the same caches and under the same rules as the first time.
 * Held per socket and hot path (a WeakMap in `hourFileHotPath`): one entry per open connection,
 * gone with it; it holds strings and small records, never a body (the body cache's bound holds).
 */
interface Shape {
  url: string;
  auth: string | undefined;
  /** the X-Access-Token header */
  key: string | undefined;
  accept: string | undefined;
  acceptEncoding: string;
  route: FastHourRoute;
  zoneId: string;
  /**
   * The credential: a token's claims (a valid token's claims never change; its expiry and its
   * client's standing are checked per request), or a key's lookup id and the loaded set's
   * principal for it (the same object until the set's next refresh: compared per request).
   */
  credential: { claims: FeedTokenClaims } | { keyId: string; principal: FeedKeyPrincipal };
  hourStart: number;
  /** the publication index's key of (feed, version, zone, hour) */
  rowKey: string;
  /** how the route serves the file (the decision's rule: the negotiated media type) */
  rule: ServeRule;
  /** derived from the last zone seen, recomputed when the cache hands out another one */
  zone: ZoneInfo | undefined;
  zoneFirstHour: number;
}

/**
 * The shape of a request whose strings the hot path can answer from (route, token verified before
 * and not expired, an offer the role may read, a zone in scope, a plain hour, gzip accepted);
 * undefined otherwise (then nothing may be written).
 */
function shapeOf(deps: FeedDeps, req: IncomingMessage, url: string, route: FastHourRoute, zoneId: string, qs: string): Shape | undefined {
  const h = req.headers;
  const auth = h.authorization;
  const key = h['x-access-token'];
  let credential: Shape['credential'];
  let claims: { role: FeedKeyPrincipal['role']; zones: string[] | null };
  if (key !== undefined) {
    // both at once is the ordinary route's 400; an empty or repeated header its to read
    if (auth !== undefined || typeof key !== 'string') return undefined;
    const keyId = feedKeyId(key);
    const principal = keyId && deps.keys.peek(keyId);
    if (!keyId || !principal) return undefined;
    credential = { keyId, principal };
    claims = principal;
  } else {
    if (auth === undefined) return undefined;
    const token = bearerOf(auth);
    if (!token) return undefined;
    const verified = deps.tokens.cached(token);
    if (!verified) return undefined;
    credential = { claims: verified };
    claims = verified;
  }

  let memo = offersByAccept.get(route);
  if (!memo) offersByAccept.set(route, (memo = new Memo()));
  const offer = memo.get(h.accept ?? '', (a) => {
    try {
      return negotiate(a || undefined, route.offers, route.fallback);
    } catch {
      return null;
    }
  });
  if (!offer || !canRead(claims.role, route.access(offer.version)) || !inScope(claims.zones, zoneId)) return undefined;

  const raw = queryValue(qs, route.param);
  if (!raw) return undefined;
  const hour = hours.get(raw, (r) => hourOrNull(route.param, r));
  if (!hour) return undefined;
  const ae = h['accept-encoding'];
  if (!ae || !gzipOk.get(ae, (v) => acceptsEncoding(v, 'gzip'))) return undefined;
  return {
    url,
    auth,
    key,
    accept: h.accept,
    acceptEncoding: ae,
    route,
    zoneId,
    credential,
    hourStart: hour.start.getTime(),
    rowKey: deps.publications.keyOf(route.feed, offer.version, zoneId, hour.sql),
    rule: { cacheControl: HOUR_FILE_CACHE_CONTROL, contentType: offer.contentType },
    zone: undefined,
    zoneFirstHour: 0,
  };
}

/**
 * The connection's shape when this request has the same strings (and, for a key, the loaded set
 * still gives the same principal: a refresh may have changed its client's role or zones);
 * undefined otherwise.
 */
function sameShape(deps: FeedDeps, shapes: WeakMap<object, Shape>, req: IncomingMessage, url: string): Shape | undefined {
  const s = shapes.get(req.socket);
  if (s === undefined || s.url !== url) return undefined;
  const h = req.headers;
  if (h.authorization !== s.auth || h['x-access-token'] !== s.key || h['accept-encoding'] !== s.acceptEncoding || h.accept !== s.accept) return undefined;
  return 'keyId' in s.credential && deps.keys.peek(s.credential.keyId) !== s.credential.principal ? undefined : s;
}

/**
 * The decided headers behind an X-Request-Id slot (slot 1, filled per request), then the answer's
 * Content-Digest (of the cached body, once per body) and the Signature-Input and Signature slots
 * (the last four, filled per request by the signer: api/feeds/signatures.ts), as one `writeHead`
 * array with what the signature covers: built once per answer, and the decision builds its answers
 * once per cached object.
 */
interface HeaderBlock {
  headers: string[];
  parts: Omit<SignedParts, 'method' | 'url'>;
}
const headerBlocks = new WeakMap<Answer, HeaderBlock>();

function headerBlock(answer: Answer, obj: CachedObject): HeaderBlock {
  let block = headerBlocks.get(answer);
  if (!block) {
    const named = (name: string) => {
      const i = answer.headers.indexOf(name);
      return i >= 0 && i % 2 === 0 ? answer.headers[i + 1] : undefined;
    };
    const digest = answer.body === 'stored' ? contentDigestOf(obj.body) : undefined;
    block = {
      headers: ['X-Request-Id', '', ...answer.headers, ...(digest ? ['Content-Digest', digest] : []), 'Signature-Input', '', 'Signature', ''],
      parts: { status: answer.status, contentType: named('Content-Type'), contentDigest: digest, etag: named('ETag') },
    };
    headerBlocks.set(answer, block);
  }
  return block;
}

/**
 * The serving decision on the caches, for a request of shape `s`: the answer and the cached object
 * it is made of, when the caches hold all it needs and its body is the stored bytes; undefined
 * otherwise (then nothing may be written). Synchronous: everything it reads is in memory.
 */
function answerFromCaches(
  deps: FeedDeps,
  files: ObjectCache,
  req: IncomingMessage,
  s: Shape,
  now: number,
  head: boolean,
): { answer: Answer; obj: CachedObject } | undefined {
  // a key's principal was checked against the loaded set in this tick (shapeOf, sameShape)
  const token = 'claims' in s.credential ? s.credential.claims : undefined;
  if (token && now >= token.expiresAt * 1000) return undefined;
  const zone = deps.zones.peek(s.zoneId);
  if (!zone) return undefined;
  if (zone !== s.zone) {
    s.zone = zone;
    s.zoneFirstHour = floorHour(zone.createdAt).getTime();
  }
  if (hourFile(s.hourStart, now, s.zoneFirstHour) !== 'closed') return undefined;
  const entry = deps.publications.peekKey(s.rowKey);
  const target = entry && hourlyObject(entry.row);
  if (!target) return undefined;
  const obj = files.peek(target.key, target.version, now, !head);
  if (!obj) return undefined;
  const h = req.headers;
  // acceptsGzip: a shape admits only requests that accept gzip
  const answer = answerOf(
    obj,
    { head, ifNoneMatch: h['if-none-match'] || undefined, ifModifiedSince: h['if-modified-since'] || undefined, acceptsGzip: true },
    s.rule,
  );
  // decoding for the client streams: the ordinary route's to do
  if (answer.body === 'decoded') return undefined;
  // a client the loaded standings do not know as active (or a refresh due) is the ordinary path's to decide
  return !token || deps.revoked.peek(token.clientId) === 'active' ? { answer, obj } : undefined;
}

/**
 * Writes the answer as Koa would after the outermost middleware, serveObject and the feeds'
 * signature: X-Request-Id first, then the decided headers in their order, the digest and the
 * signature (one `writeHead`); a 304 and a HEAD end without a body.
 */
function writeAnswer(
  res: ServerResponse,
  signer: FeedSigner,
  keys: SigningKeys,
  answer: Answer,
  obj: CachedObject,
  requestId: string,
  method: string,
  url: string,
  now: number,
): void {
  const block = headerBlock(answer, obj);
  // the answer decides status and headers; the 304 answer is shared by GET and HEAD
  const { input, signature } = signer.reused(keys, answer, method === 'GET' ? url : `${method} ${url}`, () => ({ ...block.parts, method, url }), now);
  const headers = block.headers;
  // writeHead copies the array into the header block before it returns: the shared array is free again
  headers[1] = requestId;
  headers[headers.length - 3] = input;
  headers[headers.length - 1] = signature;
  res.writeHead(answer.status, headers);
  if (answer.body === 'stored') res.end(obj.body);
  else res.end();
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
  const shapes = new WeakMap<object, Shape>();
  return (req, res, fallback) => {
    const method = req.method;
    const cache = deps.files;
    if (!cache || (method !== 'GET' && method !== 'HEAD')) return fallback(req, res);
    const started = performance.now();
    const url = req.url ?? '';
    let s = sameShape(deps, shapes, req, url);
    if (s === undefined) {
      const match = matchFile(files, url);
      if (!match) return fallback(req, res);
      try {
        s = shapeOf(deps, req, url, match.route, match.zoneId, match.qs);
      } catch {
        s = undefined;
      }
      if (!s) return fallback(req, res);
      shapes.set(req.socket, s);
    }
    let found: { answer: Answer; obj: CachedObject } | undefined;
    const now = deps.app.clock.now().getTime();
    try {
      found = answerFromCaches(deps, cache, req, s, now, method === 'HEAD');
    } catch {
      found = undefined;
    }
    // before the signing keys are loaded, the ordinary route loads them
    const keys = deps.signer.ring.peek();
    if (!found || !keys) return fallback(req, res);
    const requestId = requestIdOf(req.headers['x-request-id']);
    writeAnswer(res, deps.signer, keys, found.answer, found.obj, requestId, method, url, now);
    telemetry.finish(started, method, s.route.pattern, found.answer.status, url, requestId);
  };
}

/** The hot route `url` names, with its zone id and query string; undefined for every other URL. */
function matchFile(files: readonly FastHourFile[], url: string): { route: FastHourRoute; zoneId: string; qs: string } | undefined {
  for (const { re, route } of files) {
    const m = re.exec(url);
    if (m) return { route, zoneId: m[1], qs: m[2] ?? '' };
  }
  return undefined;
}
