/**
 * Publishes one hourly file: (feed, version, zone, hour) → one gzip object + its feed_publications row.
 *
 *   lock → claim (clear dirty / create 'pending' row) → snapshot → cursor → mapper → validate →
 *   JSON → gzip → sha256 + bytes → temp file → (content changed?) store.put → row 'published'
 *
 * Memory does not depend on the hour's size: every stage is a stream with backpressure. The spool
 * file is what lets "same content again writes nothing" hold: the sha256 is known before the store
 * is touched. The store's put is atomic, so a failure anywhere leaves the previous version (or
 * nothing) under the key; the row then says 'failed' with the error, and a retry publishes.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type pg from 'pg';
import type { AppContext } from '../lib/context.js';
import { classify, q, type NamedQuery } from '../lib/db.js';
import { describeErrors } from '../lib/validate.js';
import { formatHour, HOUR_MS } from '../lib/feeds/hours.js';
import { objectKey, type HourlyFeed } from '../lib/feeds/publications.js';
import { jsonEnvelope } from '../lib/feeds/mds/envelope.js';
import { Snapshot, hourParam } from '../lib/feeds/mds/sources.js';
import { renderingOf } from './feeds/hourly.js';

export interface PublishOptions {
  /** write the object even when its content is unchanged (ops "republish") */
  force?: boolean;
}

export interface PublishResult {
  feed: string;
  zone: string;
  hour: string;
  key: string;
  /** written: the object changed (or force); unchanged: same sha256, store untouched */
  outcome: 'written' | 'unchanged';
  sha256: string;
  records: number;
  bytes: number;
}

/** A record our own schema rejects: a bug or bad data; the hour is marked failed with this text. */
export class FeedValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FeedValidationError';
  }
}

/** sha256 and byte count of what flows through. */
class Digest extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    cb(null, chunk);
  }
}

async function run(client: pg.PoolClient, query: NamedQuery, params: unknown[]): Promise<pg.QueryResult> {
  try {
    return await client.query({ name: query.name, text: query.text, values: params });
  } catch (err) {
    throw classify(err, query.name);
  }
}

export async function publishHour(ctx: AppContext, feed: HourlyFeed, zoneId: string, hour: Date, opts: PublishOptions = {}): Promise<PublishResult> {
  const r = renderingOf(feed);
  const key = objectKey(feed, zoneId, hour);
  const hourText = hourParam(hour);
  const pk = [feed.feed, feed.version, zoneId, hourText];
  const lockKey = `${feed.id}/${zoneId}/${hourText}`;
  const log = ctx.log.child({ feed: feed.id, zone: zoneId, hour: formatHour(hour) });
  const started = performance.now();

  let client: pg.PoolClient;
  try {
    client = await ctx.db.pool.connect();
  } catch (err) {
    throw classify(err, 'connect');
  }
  let discard = false;
  const dir = await mkdtemp(join(tmpdir(), 'feed-'));
  try {
    // Long hours stream for a while: the pool's statement timeout must not cut the lock wait short
    // of a concurrent publisher of the same file, nor the snapshot (which sets its own).
    await run(client, q('PubLock'), [lockKey]);
    const prev = (await run(client, q('PubClaim'), pk)).rows[0] as { sha256: string | null; object_key: string | null };

    const snap = await Snapshot.begin(client, { statementTimeoutMs: 30 * 60_000 });
    let records = 0;
    let watermarkMs: number | null = null;
    const spool = join(dir, 'body.json.gz');
    const digest = new Digest();
    try {
      const [stats] = await snap.query<{ records: number; watermark_ms: number | null }>(r.statsQuery, [zoneId, hourText]);
      watermarkMs = stats?.watermark_ms ?? null;
      // last_updated: when the hour's data last changed, never before the hour closed; derived from
      // the data so that republishing unchanged data produces identical bytes.
      const lastUpdated = Math.max(watermarkMs ?? 0, hour.getTime() + HOUR_MS);
      const head = r.head(lastUpdated);
      if (!r.headSchema(head)) throw new FeedValidationError(`${feed.id} head: ${describeErrors(r.headSchema.errors)}`);
      const provider = ctx.config;
      async function* mapped(): AsyncGenerator<object> {
        let i = 0;
        for await (const row of snap.stream(r.rowsQuery, [zoneId, hourText])) {
          const rec = r.map(row, provider);
          i++;
          if (rec === undefined) continue;
          if (!r.record(rec)) throw new FeedValidationError(`${feed.id} row ${i}: ${describeErrors(r.record.errors)}`);
          records++;
          yield rec;
        }
      }
      await pipeline(jsonEnvelope(head, r.arrayKey, mapped(), r.tail), createGzip({ level: 6 }), digest, createWriteStream(spool));
    } finally {
      await snap.close();
      if (snap.broken) discard = true;
    }

    const sha256 = digest.hash.digest('hex');
    const unchanged = !opts.force && prev?.sha256 === sha256 && prev.object_key === key && (await ctx.store.head(key)) !== undefined;
    if (!unchanged) {
      await ctx.store.put(key, createReadStream(spool), {
        contentType: 'application/json',
        contentEncoding: 'gzip',
        metadata: { sha256, records: String(records), 'last-updated': String(Math.max(watermarkMs ?? 0, hour.getTime() + HOUR_MS)) },
      });
    }
    const lastUpdated = new Date(Math.max(watermarkMs ?? 0, hour.getTime() + HOUR_MS));
    await run(client, q('PubPublished'), [
      ...pk, key, sha256, records, digest.bytes, lastUpdated, watermarkMs === null ? null : new Date(watermarkMs), !unchanged, ctx.clock.now(),
    ]);
    log.info({ records, bytes: digest.bytes, outcome: unchanged ? 'unchanged' : 'written', ms: Math.round(performance.now() - started) }, 'feed hour published');
    return { feed: feed.id, zone: zoneId, hour: formatHour(hour), key, outcome: unchanged ? 'unchanged' : 'written', sha256, records, bytes: digest.bytes };
  } catch (err) {
    discard = true;
    const message = err instanceof Error ? err.message : String(err);
    log.warn({ err: message }, 'feed hour publication failed');
    // through the pool: this connection may be the thing that broke
    await ctx.db.query(q('PubFailed'), [...pk, message, ctx.clock.now()]).catch((e) => log.error({ err: String(e) }, 'could not record the failure'));
    throw err;
  } finally {
    if (!discard) {
      try {
        await run(client, q('PubUnlock'), [lockKey]);
      } catch {
        discard = true;
      }
    }
    // a discarded connection takes its advisory lock with it
    client.release(discard ? true : undefined);
    await rm(dir, { recursive: true, force: true });
  }
}
