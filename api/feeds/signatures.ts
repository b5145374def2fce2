/**
 * Signs every answer of the feed hosts (MDS 2.0, legacy 1.2/0.4, GBFS 2.2/3.0, insurance, their
 * tokens, JWKS and errors) with an RFC 9421 HTTP Message Signature over an RFC 9530 Content-Digest,
 * by the active key of lib/feeds/signing-keys.ts, whose public half the JWKS of both hosts publishes
 * (api/feeds/jwks.ts). docs/feed-signatures.md is the contract a city verifies against.
 *
 *   Content-Digest: sha-256=:<base64 of the sha-256 of the bytes sent>:
 *   Signature-Input: feed=("@status" "content-type" "content-digest" "etag" "@method";req "@path";req "@query";req);created=…;keyid="<kid>";alg="ed25519";tag="mobility-feeds"
 *   Signature: feed=:<base64 Ed25519 signature>:
 *
 * The covered components are those the answer has, in that order: "@status" always, "content-type"
 * and "content-digest" when it has content (not a 304, not a HEAD), "etag" when it has one (so a 304
 * or a HEAD still names the representation it vouches for); and always the request's method, path
 * and query (RFC 9421 §2.4, `;req`), which bind the answer to the question — the zone, the hour,
 * the device — so a city can show what was answered to what it asked. `@authority` is left out: a
 * proxy or load balancer in front may present another Host than the city used. No `expires` and no
 * `nonce`: the signature is evidence to keep, not a replay guard.
 *
 * One place per path: the Koa routes of both hosts through `signedRenderer` (the feeds' kit puts it
 * outside the error renderer of every row, and around each host's miss), the hourly files' hot path
 * in its one writeHead (`FeedSigner.reused`). The digest of a cached body is computed once per cached
 * Buffer (the body cache hands out the same Buffer until the object changes), that of its decoded
 * form once too (api/kit/content-digest.ts: a decoded answer still streams); and a signature is
 * deterministic (Ed25519) and its `created` has second resolution: the same answer to the same
 * request line in the same second with the same key has the same signature, so it is made once per
 * (answer, request line, second) and reused. A stored file too large for the body cache streams
 * with the digest its writer recorded (the sink's sha256 of the stored bytes, api/kit/serve-object.ts);
 * any other streamed answer (realtime lists and pages, such a file decoded) is gathered before its
 * headers go out, as its digest must precede it: it costs the memory of the answer as sent (gzip
 * when the client takes it) for as long as it is written.
 */
import type Koa from 'koa';
import { sign } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { Db } from '../../lib/core/db.js';
import type { Clock } from '../../lib/core/clock.js';
import type { Logger } from '../../lib/core/log.js';
import { SigningKeyError, SigningKeyRing, type SigningKeys } from '../../lib/feeds/signing-keys.js';
import { isClientAborted } from '../kit/body.js';
import { contentDigestOf, declaredDigestOf } from '../kit/content-digest.js';
import { recordFault } from '../kit/fault.js';
import { isOutage } from '../kit/outage.js';
import { requestLogOf } from '../kit/request-log.js';
import { FeedError } from './errors.js';

/** The signature's label in Signature-Input and Signature. */
const SIGNATURE_LABEL = 'feed';
/** RFC 9421 `tag`: which application's signature this is. */
const SIGNATURE_TAG = 'mobility-feeds';

/** What of an answer and its request the signature covers. */
export interface SignedParts {
  status: number;
  contentType: string | undefined;
  contentDigest: string | undefined;
  etag: string | undefined;
  method: string;
  /** the request target as received: path, and the query with its `?` or nothing */
  url: string;
}

/** The two header values of one signature, and what they were made with. */
export interface Signed {
  readonly created: number;
  readonly kid: string;
  /** Signature-Input */
  readonly input: string;
  /** Signature */
  readonly signature: string;
}

/** RFC 9421 §2.5: the signature base of `p` and its @signature-params value. */
function signatureBase(p: SignedParts, kid: string, created: number): { base: string; params: string } {
  const q = p.url.indexOf('?');
  const path = (q < 0 ? p.url : p.url.slice(0, q)) || '/';
  const query = q < 0 ? '?' : p.url.slice(q);
  const names: string[] = ['"@status"'];
  const lines: string[] = [`"@status": ${p.status}`];
  const field = (name: string, value: string | undefined) => {
    if (value === undefined) return;
    names.push(`"${name}"`);
    lines.push(`"${name}": ${value.trim()}`);
  };
  field('content-type', p.contentType);
  field('content-digest', p.contentDigest);
  field('etag', p.etag);
  names.push('"@method";req', '"@path";req', '"@query";req');
  lines.push(`"@method";req: ${p.method}`, `"@path";req: ${path}`, `"@query";req: ${query}`);
  const params = `(${names.join(' ')});created=${created};keyid="${kid}";alg="ed25519";tag="${SIGNATURE_TAG}"`;
  lines.push(`"@signature-params": ${params}`);
  return { base: lines.join('\n'), params };
}

/**
 * Makes the Signature-Input and Signature values of answers, with the keys of one process.
 */
export class FeedSigner {
  private readonly memos = new WeakMap<object, Map<string, Signed>>();

  constructor(
    readonly ring: SigningKeyRing,
    private readonly clock: Clock,
  ) {}

  /** The signature of `p` with `keys`, made now. */
  make(keys: SigningKeys, p: SignedParts): Signed {
    return this.signed(keys, p, Math.floor(this.clock.now().getTime() / 1000));
  }

  /**
   * The signature of the answer `memo` stands for (an object whose bytes and headers do not change)
   * to the request `line` (whatever else the covered components depend on: method, URL), at `nowMs`
   * (default: the clock's now): the one made for them in the same second with the same key when
   * there is one (nothing is built then: the hot path's per-answer cost), else made from `parts()`
   * and kept.
   */
  reused(keys: SigningKeys, memo: object, line: string, parts: () => SignedParts, nowMs = this.clock.now().getTime()): Signed {
    const created = Math.floor(nowMs / 1000);
    let byUrl = this.memos.get(memo);
    if (!byUrl) this.memos.set(memo, (byUrl = new Map<string, Signed>()));
    const m = byUrl.get(line);
    if (m !== undefined && m.created === created && m.kid === keys.kid) return m;
    const made = this.signed(keys, parts(), created);
    // bounded: request lines differ by zone and hour, a few per cached object
    if (byUrl.size >= 64) byUrl.clear();
    byUrl.set(line, made);
    return made;
  }

  private signed(keys: SigningKeys, p: SignedParts, created: number): Signed {
    const { base, params } = signatureBase(p, keys.kid, created);
    return {
      created,
      kid: keys.kid,
      input: `${SIGNATURE_LABEL}=${params}`,
      signature: `${SIGNATURE_LABEL}=:${sign(null, Buffer.from(base), keys.privateKey).toString('base64')}:`,
    };
  }
}

/** One signer per configuration (one key ring), shared by the main and the legacy host of a process. */
const signers = new WeakMap<object, FeedSigner>();
export function feedSignerOf(app: { db: Db; clock: Clock; log: Logger; config: { signingSecret: string } }): FeedSigner {
  let s = signers.get(app.config);
  if (!s) {
    s = new FeedSigner(new SigningKeyRing(app.db, app.config.signingSecret, app.clock, app.log), app.clock);
    signers.set(app.config, s);
  }
  return s;
}

/**
 * The answer's content: its bytes (the body gathered when it streams, serialized as Koa would when it
 * is JSON) and their digest; or only the digest of a stream whose bytes are known before it runs (a
 * cached object decoded, api/kit/serve-object.ts), which then streams as before. Undefined without
 * content (HEAD, 304, 204, no body).
 */
async function contentOf(ctx: Koa.Context): Promise<{ digest: string; bytes: Buffer | undefined; cached: boolean } | undefined> {
  const body: unknown = ctx.body;
  if (body === null || body === undefined || ctx.method === 'HEAD' || ctx.status === 304 || ctx.status === 204) return undefined;
  let bytes: Buffer;
  if (Buffer.isBuffer(body)) return { digest: contentDigestOf(body), bytes: body, cached: true };
  if (typeof body === 'string') bytes = Buffer.from(body);
  else if (body instanceof Readable) {
    const declared = declaredDigestOf(body);
    if (declared) return { digest: declared, bytes: undefined, cached: false };
    bytes = await buffer(body);
  }
  // Koa's own serialization of an object body (koa/lib/application.js respond)
  else bytes = Buffer.from(JSON.stringify(body));
  // the type is set already (by the handler, or by Koa when the body was set): a Buffer body keeps it
  ctx.body = bytes;
  return { digest: contentDigestOf(bytes), bytes, cached: false };
}

/** Adds Content-Digest, Signature-Input and Signature to the answer Koa is about to send. */
async function signAnswer(ctx: Koa.Context, signer: FeedSigner): Promise<void> {
  const content = await contentOf(ctx);
  const digest = content?.digest;
  if (digest) ctx.set('Content-Digest', digest);
  const keys = signer.ring.peek() ?? (await signer.ring.current());
  const parts = (): SignedParts => ({
    status: ctx.status,
    contentType: ctx.response.get('Content-Type') || undefined,
    contentDigest: digest,
    etag: ctx.response.get('ETag') || undefined,
    method: ctx.method,
    url: ctx.req.url ?? '/',
  });
  // a cached body (the same Buffer while the object is cached) is signed once a second per request line and headers covered
  const s =
    content?.cached && content.bytes
      ? signer.reused(keys, content.bytes, `${ctx.method} ${ctx.status} ${ctx.response.get('Content-Type')} ${ctx.response.get('ETag')} ${ctx.req.url}`, parts)
      : signer.make(keys, parts());
  ctx.set('Signature-Input', s.input);
  ctx.set('Signature', s.signature);
}

/**
 * `inner` (a feed row's error renderer, or a host's miss), with its answer signed: errors are
 * rendered inside, so they are signed too. A client gone away is not answered, so not signed.
 */
export function signedRenderer(signer: FeedSigner, inner: Koa.Middleware): Koa.Middleware {
  return async (ctx, next) => {
    await inner(ctx, next);
    try {
      await signAnswer(ctx, signer);
    } catch (err) {
      if (isClientAborted(err)) throw err;
      unsigned(ctx, err);
    }
  };
}

/**
 * An answer that could not be signed is not sent: no key this process can read (SIGNING_SECRET
 * changed: 503 until `ops signing-keys rotate` under the new one, docs/feed-signatures.md), or a
 * stored object that failed while it was gathered (500). The error body goes out unsigned: there is
 * nothing to sign it with, or nothing of the answer left to vouch for.
 */
function unsigned(ctx: Koa.Context, err: unknown): void {
  const keys = err instanceof SigningKeyError || isOutage(err);
  if (keys) requestLogOf(ctx)?.error({ err: err.message }, 'feed answer not signed: no signing key');
  else recordFault(ctx, err);
  for (const h of ['Content-Encoding', 'Content-Digest', 'ETag', 'Last-Modified', 'Signature-Input', 'Signature']) ctx.remove(h);
  const e = keys
    ? new FeedError(503, 'service_unavailable', 'the service is temporarily unavailable', ['answers cannot be signed now'], { 'Retry-After': '30' })
    : new FeedError(500, 'internal_error', 'internal server error');
  ctx.status = e.status;
  for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'application/json';
  ctx.body = { error: e.code, error_description: e.description, error_details: e.details };
}
