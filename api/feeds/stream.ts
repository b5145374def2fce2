/**
 * Streams a realtime feed response from a database cursor: the first row is fetched before the
 * status line goes out, so that an unreachable database still gets a proper 503 and an unknown
 * device a 404; the rest flows cursor → mapper → JSON chunks → (gzip, when the client accepts it)
 * → socket with bounded memory. Every realtime endpoint of both hosts answers through here.
 */
import type Koa from 'koa';
import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream';
import { jsonEnvelope } from '../../lib/feeds/mds/envelope.js';
import { acceptsEncoding } from '../kit/conditional.js';

/**
 * zlib level of realtime answers: they are made per request, so the cheapest level that still
 * shrinks MDS JSON ~8× (an hour of legacy events: 427 KB raw) wins over the stored files' level 3.
 */
const REALTIME_GZIP_LEVEL = 1;

/** Cache policy of the realtime endpoints: always fresh, never in a shared cache. */
const REALTIME_CACHE_CONTROL = 'private, no-cache';

export interface StreamSpec<R> {
  contentType: string;
  head: object;
  arrayKey: string;
  tail?: object;
  rows: AsyncGenerator<R>;
  /** the row's record: an object, or JSON text (one or more records, comma-separated), or undefined for none */
  map: (row: R) => object | string | undefined;
  /** when set, an empty result is this error instead of an empty array (single-device endpoints) */
  emptyError?: () => Error;
}

export async function streamFeed<R>(ctx: Koa.Context, spec: StreamSpec<R>): Promise<void> {
  const it = spec.rows;
  // However the response ends (finished, client gone, error), close the cursor and its connection.
  ctx.res.once('close', () => void it.return(undefined).catch(() => undefined));
  let first: IteratorResult<R>;
  try {
    first = await it.next();
  } catch (err) {
    await it.return(undefined).catch(() => undefined);
    throw err;
  }
  if (first.done && spec.emptyError) throw spec.emptyError();

  async function* records(): AsyncGenerator<object | string | undefined> {
    if (first.done) return;
    yield spec.map(first.value);
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield spec.map(n.value);
    }
  }

  ctx.status = 200;
  ctx.set('Content-Type', spec.contentType);
  ctx.set('Cache-Control', REALTIME_CACHE_CONTROL);
  ctx.vary('Accept-Encoding');
  const json = jsonEnvelope(spec.head, spec.arrayKey, records(), spec.tail ?? {});
  if (!acceptsEncoding(ctx.get('Accept-Encoding') || undefined, 'gzip')) {
    ctx.body = json;
    return;
  }
  ctx.set('Content-Encoding', 'gzip');
  const gzip = createGzip({ level: REALTIME_GZIP_LEVEL });
  // an error on either side ends both (the cursor is closed by the 'close' handler above)
  pipeline(json, gzip, () => undefined);
  ctx.body = gzip;
}

/** The rows of an already fetched page (a bounded array) as the stream streamFeed takes. */
// eslint-disable-next-line @typescript-eslint/require-await -- adapts a sync array to the async generator streamFeed reads: there is nothing to await
export async function* fromArray<R>(rows: readonly R[]): AsyncGenerator<R> {
  yield* rows;
}
