/**
 * The one request body reader of every API family (partner, TOMP, the feed token endpoints, the
 * legacy host). Each family maps a `BodyRefused` to its own error format (413 / 400); what this
 * module decides is the same for all:
 *
 * - **Size**: at most `limit` bytes are kept. A body that turns out larger is refused, and the rest
 *   is drained (discarded) as long as the whole stays within `limit + DRAIN_BYTES`, so the client
 *   reads the refusal and its keep-alive connection answers the next request at once. A body larger
 *   than that (declared or seen) is not read further: the refusal carries `Connection: close` and
 *   the socket is closed after it, so nobody can hold a connection by trickling a huge body.
 * - **Depth**: JSON nesting is counted on the raw bytes, iteratively, before anything parses or
 *   validates the value, so no code on the request path recurses on a depth the client chose.
 * - **Abort**: a client that goes away mid-body raises `ClientAborted`, which the families pass on
 *   and the outermost middleware (api/middleware/request-envelope.ts) records as 499, not as a server error.
 */
import type Koa from 'koa';

/** Bytes past the limit that are still drained to keep a connection usable after a refusal. */
const DRAIN_BYTES = 256 * 1024;

/** Deepest JSON nesting (objects and arrays) a request body may have; ours need fewer than 10. */
export const MAX_JSON_DEPTH = 64;

export class BodyRefused extends Error {
  constructor(
    readonly reason: 'too_large' | 'too_deep',
    readonly limit: number,
  ) {
    super(reason === 'too_large' ? `request body larger than ${limit} bytes` : `request body nested deeper than ${limit} levels`);
    this.name = 'BodyRefused';
  }
}

/** The client closed the connection before its body was complete: nothing to answer. */
export class ClientAborted extends Error {
  readonly expose = false;
  readonly status = 400;
  constructor() {
    super('client aborted the request body');
    this.name = 'ClientAborted';
  }
}

export const isClientAborted = (err: unknown): err is ClientAborted => err instanceof ClientAborted;

/** The refused request's connection is closed after the answer instead of being drained. */
function closeAfterAnswer(ctx: Koa.Context): void {
  ctx.set('Connection', 'close');
  ctx.req.pause();
  ctx.res.once('finish', () => ctx.req.socket.destroySoon());
}

/**
 * For the outermost middleware, before the answer goes out: a request refused before its body was
 * read (a 401, 405, 415 ...) keeps its connection only if what is left is small enough to drain;
 * otherwise (unknown or large length) the answer closes the connection, so that the next request
 * of a keep-alive client is not stuck behind a body node:http would discard byte by byte.
 */
export function closeIfBodyUnread(ctx: Koa.Context): void {
  const req = ctx.req;
  if (req.complete || req.readableEnded || req.listenerCount('data') > 0 || ctx.headerSent) return;
  const declared = Number(ctx.get('content-length') || NaN);
  if (!(declared <= DRAIN_BYTES)) ctx.set('Connection', 'close');
}

/**
 * The raw body, at most `limit` bytes. Throws `BodyRefused('too_large')` past the limit and
 * `ClientAborted` when the client goes away.
 */
export function readBody(ctx: Koa.Context, limit: number): Promise<Buffer> {
  const req = ctx.req;
  const declared = Number(ctx.get('content-length') || NaN);
  if (Number.isFinite(declared) && declared > limit + DRAIN_BYTES) {
    closeAfterAnswer(ctx);
    return Promise.reject(new BodyRefused('too_large', limit));
  }
  // events rather than `for await`: leaving an async iteration early destroys the socket, and the
  // client would never read its 413
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: Error) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
      if (err) reject(err);
      else if (size > limit) reject(new BodyRefused('too_large', limit));
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > limit + DRAIN_BYTES) {
        closeAfterAnswer(ctx);
        done(new BodyRefused('too_large', limit));
      }
    };
    const onEnd = () => done();
    // node:http: 'error' (ECONNRESET "aborted") or 'close' before the body was complete
    const onGone = () => {
      if (!req.complete) done(new ClientAborted());
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('close', onGone);
    // the events may be past already: the body was read by someone else, or the client went away
    // while the request waited for its credentials; listening alone would then wait forever, and
    // the request would never be answered, logged or counted
    if (req.readableEnded) done();
    else if (req.destroyed) onGone();
  });
}

/**
 * The deepest nesting of `[` / `{` in JSON text, ignoring brackets inside strings; stops counting
 * once past `max` (the text is refused anyway). Iterative, linear in the length.
 */
export function jsonDepthExceeds(text: Buffer | string, max = MAX_JSON_DEPTH): boolean {
  const s = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inString) {
      // a backslash: skip the escaped byte
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * The body parsed as JSON: `BodyRefused` for size or depth, `undefined` for an empty body,
 * `SyntaxError` for malformed JSON (each family words these its own way).
 */
export async function readJsonBody(ctx: Koa.Context, limit: number): Promise<unknown> {
  const raw = await readBody(ctx, limit);
  if (jsonDepthExceeds(raw)) throw new BodyRefused('too_deep', MAX_JSON_DEPTH);
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  return JSON.parse(text);
}
