/**
 * Publishes hourly files: (feed, version, zone, hour) → one gzip object + its feed_publications row.
 * The files of one (zone, hour) are published together: the 8 files read only 3 sources (trips,
 * events and telemetry of the hour), so each source is read once and every row is fanned out to all its files.
 *
 *   lock all (publisher/publication/lock.ts) → claim all (clear dirty / create 'pending' rows) → snapshot
 *   (the streaming replica's once it has replayed past the hour and the claim, else the primary's) →
 *     per source: cursor → row → for each file: mapper → validate → JSON → gzip spool (sha256 + bytes)
 *   → per file: the publication sink (publisher/publication/sink.ts: unchanged? else store.put)
 *   → the index rows 'published' (or 'failed', per file)
 *
 * Memory does not depend on the hour's size: every stage is a stream with backpressure (the cursor
 * is read only as fast as the slowest file's gzip takes it). The spool file is what lets "same
 * content again writes nothing" hold: the sha256 of the stored bytes is known before the store is
 * touched. The store's put is atomic, so a failure anywhere leaves the previous version (or nothing)
 * under the key; the row then says 'failed' with the error, and a retry publishes. A file that fails
 * (a record our schema rejects, a store error) does not stop the other files of its hour.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppContext } from '../lib/domain/context.js';
import type { DbRole } from '../lib/core/db.js';
import { sql, type RowOf } from '../lib/core/sql/typed.js';
import { describeErrors } from '../lib/core/validate.js';
import { formatHour, HOUR_MS } from '../lib/feeds/hours.js';
import { HOURLY_FEEDS, objectKey, type HourlyFeed } from '../lib/feeds/publications.js';
import { envelopeParts } from '../lib/feeds/mds/envelope.js';
import type { Provider } from '../lib/feeds/mds/rows.js';
import { Snapshot, hourParam } from '../lib/feeds/mds/sources.js';
import { GzipSpool, type StoredBytes } from './publication/bytes.js';
import { HOURLY_INDEX, type HourlyIndexRow } from './publication/indexes.js';
import { withPublicationLock, type HeldLock } from './publication/lock.js';
import { PublicationSink } from './publication/sink.js';
import { readerPast, readOnReader } from '../lib/core/replica.js';
import { renderingOf, sourceOf, type PublicationTime, type Rendering, type SourceOptions } from './feeds/hourly.js';

export { GZIP_LEVEL } from '../lib/core/gzip.js';

/** The statement timeout of an hour's snapshot: a long hour streams to a slow store for a while. */
const HOUR_SNAPSHOT_TIMEOUT_MS = 30 * 60_000;

export interface PublishOptions {
  /** write the object even when its content is unchanged (ops "republish") */
  force?: boolean;
}

export interface PublishSetOptions extends PublishOptions {
  /** the files to publish (default: every hourly feed) */
  feeds?: readonly HourlyFeed[];
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

/** A file of the set that was not published; its row says 'failed' with the error's message. */
export interface PublishFailure {
  feed: string;
  zone: string;
  hour: string;
  key: string;
  outcome: 'failed';
  error: Error;
}

export type HourFileResult = PublishResult | PublishFailure;

/** A record our own schema rejects: a bug or bad data; the hour is marked failed with this text. */
export class FeedValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FeedValidationError';
  }
}

/**
 * The hour's rows of this file's source were dropped by retention (publisher/jobs/history.ts): the
 * published file is the archive, and publishing again would overwrite it with what is left. The
 * file's row is left as it is (still served).
 */
class ArchivedHourError extends Error {
  constructor(feedId: string, zoneId: string, hour: Date, source: string, droppedBefore: Date) {
    super(
      `${feedId} ${zoneId} ${formatHour(hour)}: the ${source} of this hour were dropped by retention (everything before ` +
        `${droppedBefore.toISOString()}); its published file is the archive and is kept as it is, not republished`,
    );
    this.name = 'ArchivedHourError';
  }
}

/** One file being written: the envelope's head, records joined by commas, its tail, through a gzip spool. */
class FileSink {
  private first = true;
  private readonly spool: GzipSpool;

  constructor(
    path: string,
    open: string,
    private readonly close: string,
  ) {
    this.spool = new GzipSpool(path, open);
  }

  get error(): Error | undefined {
    return this.spool.error;
  }

  /** Appends one record's JSON; false when gzip's buffer is full (await drained() before more). */
  write(json: string): boolean {
    const ok = this.spool.write(this.first ? json : ',' + json);
    this.first = false;
    return ok;
  }

  drained(): Promise<void> {
    return this.spool.drained();
  }

  end(): Promise<StoredBytes> {
    return this.spool.end(this.close);
  }

  abort(err: Error): void {
    this.spool.abort(err);
  }
}

/** The publication row of a file before this publication (PubClaim). */
type Claimed = RowOf<'PubClaim'>;

interface FileJob {
  feed: HourlyFeed;
  r: Rendering;
  key: string;
  prev?: Claimed;
  sink?: FileSink;
  /** the file's stored bytes once rendered */
  stored?: StoredBytes;
  records: number;
  /** MDS publication_time of a record of this file (publication log, else this publication) */
  pub: PublicationTime;
  watermarkMs: number | null;
  lastUpdatedMs: number;
  error?: Error;
  result?: PublishResult;
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** Publishes one file. Throws (after recording the failure in its row) when it is not published. */
export async function publishHour(ctx: AppContext, feed: HourlyFeed, zoneId: string, hour: Date, opts: PublishOptions = {}): Promise<PublishResult> {
  const [r] = await publishHourSet(ctx, zoneId, hour, { ...opts, feeds: [feed] });
  if (r.outcome === 'failed') throw r.error;
  return r;
}

/**
 * Publishes the files of one (zone, hour), by default all 8, reading each source once. Never throws
 * for a file's failure: each file has its result (the failed ones also have a 'failed' row).
 */
export async function publishHourSet(ctx: AppContext, zoneId: string, hour: Date, opts: PublishSetOptions = {}): Promise<HourFileResult[]> {
  const hourText = hourParam(hour);
  const feeds = [...new Map((opts.feeds ?? HOURLY_FEEDS).map((f) => [f.id, f])).values()];
  const started = performance.now();
  // this publication's time: the publication_time of records it is the first to carry
  const now = ctx.clock.now();
  const jobs: FileJob[] = feeds.map((feed) => ({
    feed,
    r: renderingOf(feed),
    key: objectKey(feed, zoneId, hour),
    records: 0,
    pub: () => now.getTime(),
    watermarkMs: null,
    lastUpdatedMs: hour.getTime() + HOUR_MS,
  }));
  if (!jobs.length) return [];
  const log = ctx.log.child({ zone: zoneId, hour: formatHour(hour) });
  const archived = await archivedFiles(ctx, jobs, zoneId, hour);
  if (archived.length) {
    log.warn({ feeds: archived.map((a) => a.feed), err: archived[0].error.message }, 'publication of an archived hour refused');
    const rest = jobs.filter((j) => !archived.some((a) => a.feed === j.feed.id));
    const results = rest.length ? await publishHourSet(ctx, zoneId, hour, { ...opts, feeds: rest.map((j) => j.feed) }) : [];
    return [...archived, ...results];
  }

  const sink = new PublicationSink(ctx.store, HOURLY_INDEX);
  let dir: string | undefined;
  // the server the hour's rows were read from, named in the outcome lines
  let readFrom: DbRole | undefined;
  try {
    // one lock per file (its object key), held on this connection for every statement of the set
    await withPublicationLock(
      ctx,
      jobs.map((j) => j.key),
      async (held) => {
        const onC = held.conn;
        try {
          const claimed = await onC.many(sql('PubClaim'), [jobs.map((j) => j.feed.feed), jobs.map((j) => j.feed.version), zoneId, hourText]);
          for (const j of jobs) j.prev = claimed.find((x) => x.feed === j.feed.feed && x.version === j.feed.version);
          const logged = await onC.many(sql('PubLogTimes'), [jobs.map((j) => j.feed.feed), jobs.map((j) => j.feed.version), zoneId, hourText]);
          for (const j of jobs)
            j.pub = publicationTimes(
              logged.filter((x) => x.feed === j.feed.feed && x.version === j.feed.version).map((x) => Number(x.published_ms)),
              now.getTime(),
            );
          dir = await mkdtemp(join(tmpdir(), 'feed-'));

          // One snapshot for every source (reading them on several connections at once measured no faster:
          // mapping and writing, not Postgres, is the bottleneck; see docs/feeds.md "Performance").
          const snap = await hourSnapshot(ctx, held, hour, now, log);
          readFrom = snap.role;
          try {
            const sourceOpts: SourceOptions = { now, telemetryTripDelayMinutes: ctx.config.telemetryTripDelayMinutes };
            for (const source of ['trips', 'events', 'telemetry'] as const) {
              const group = jobs.filter((j) => j.feed.source === source);
              if (group.length) await renderSource(snap, source, sourceOpts, group, zoneId, hour, dir, ctx.config);
            }
          } finally {
            await snap.close();
            // a replica's snapshot had a connection of its own, which close() has dropped if broken
            if (snap.broken && snap.role === 'primary') held.discard();
          }

          await Promise.all(jobs.filter((j) => !j.error).map((j) => storeFile(sink, j, zoneId, hourText, opts.force ?? false)));
          const written = jobs.filter((j) => j.result?.outcome === 'written');
          // the index rows and their publication log in one transaction: a reader (publish-status, the
          // next publication's publication_time) never sees a file published without its write
          await held.tx(async (tx) => {
            await sink.flush(tx, ctx.clock.now());
            if (written.length) {
              await tx.query(sql('PubLogWritten'), [
                written.map((j) => j.feed.feed),
                written.map((j) => j.feed.version),
                zoneId,
                hourText,
                written.map((j) => j.result!.sha256),
                written.map((j) => j.records),
                now,
              ]);
            }
          });
        } catch (err) {
          held.discard();
          for (const j of jobs) j.error ??= asError(err);
        } finally {
          // while still holding the locks, so that a failure is never written over a newer publication
          await recordOutcomes(ctx, log, jobs, zoneId, hourText, started, readFrom);
        }
      },
    );
  } catch (err) {
    // no connection or no lock: nothing was claimed or written
    for (const j of jobs) j.error ??= asError(err);
    await recordOutcomes(ctx, log, jobs, zoneId, hourText, started);
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
  return jobs.map((j) =>
    j.error ? { feed: j.feed.id, zone: zoneId, hour: formatHour(hour), key: j.key, outcome: 'failed' as const, error: j.error } : j.result!,
  );
}

/** Logs each file's outcome; a failed file's row says 'failed' with its error. */
async function recordOutcomes(
  ctx: AppContext,
  log: AppContext['log'],
  jobs: readonly FileJob[],
  zoneId: string,
  hourText: string,
  started: number,
  pool?: DbRole,
): Promise<void> {
  for (const j of jobs) {
    if (!j.error) {
      log.info(
        { feed: j.feed.id, records: j.records, bytes: j.result!.bytes, outcome: j.result!.outcome, pool, ms: Math.round(performance.now() - started) },
        'feed hour published',
      );
      continue;
    }
    log.warn({ feed: j.feed.id, err: j.error.message, pool }, 'feed hour publication failed');
    // through the pool: the locking connection may be the thing that broke
    await ctx.db
      .query(sql('PubFailed'), [j.feed.feed, j.feed.version, zoneId, hourText, j.error.message, ctx.clock.now()])
      .catch((e) => log.error({ feed: j.feed.id, err: String(e) }, 'could not record the failure'));
  }
}

/**
 * The snapshot the hour's files are read from. The replica's once it has replayed past both the
 * hour's close plus PUBLISH_LATENESS_SECONDS (`now` must be past it) and the claim just made on the
 * lock's connection (readerPast reads the primary's WAL position there, after the claim): every row
 * of the hour committed before the claim cleared its dirty mark is then in the snapshot, and a row
 * committed after it marks the hour dirty again. Otherwise the primary's, on the lock's connection,
 * as without a replica; a replica that fails to open one leaves it to the primary too.
 */
async function hourSnapshot(ctx: AppContext, held: HeldLock, hour: Date, now: Date, log: AppContext['log']): Promise<Snapshot> {
  const opts = { statementTimeoutMs: HOUR_SNAPSHOT_TIMEOUT_MS };
  const closedAt = new Date(hour.getTime() + HOUR_MS + ctx.config.publishLatenessSeconds * 1000);
  const reader = await readerPast(ctx.db, closedAt, now, log, { primary: held.conn });
  return readOnReader(
    reader,
    (replica) => Snapshot.open(replica, opts),
    () => Snapshot.begin(held.conn.client, ctx.log, opts),
  );
}

/** The files of the set whose source rows of `hour` are gone (history_retention), as failures. */
async function archivedFiles(ctx: AppContext, jobs: readonly FileJob[], zoneId: string, hour: Date): Promise<PublishFailure[]> {
  const marks = await ctx.db.many(sql('HistoryRetention'));
  const out: PublishFailure[] = [];
  for (const j of jobs) {
    const m = marks.find((x) => x.source === j.feed.source);
    if (m && hour.getTime() < m.dropped_before.getTime()) {
      out.push({
        feed: j.feed.id,
        zone: zoneId,
        hour: formatHour(hour),
        key: j.key,
        outcome: 'failed',
        error: new ArchivedHourError(j.feed.id, zoneId, hour, j.feed.source, m.dropped_before),
      });
    }
  }
  return out;
}

/**
 * Reads one source of the hour once and writes every file of `group` from it. A file whose head or
 * record fails validation, or whose spool breaks, gets its `error` and is dropped; the others go on.
 * A source error (the cursor, a mapper throwing) fails every file of the group.
 */
async function renderSource(
  snap: Snapshot,
  source: HourlyFeed['source'],
  opts: SourceOptions,
  group: FileJob[],
  zoneId: string,
  hour: Date,
  dir: string,
  provider: Provider,
): Promise<void> {
  const src = sourceOf(source, opts);
  const [stats] = await src.stats(snap, zoneId, hour);
  const watermarkMs = stats?.watermark_ms ?? null;
  // last_updated: when the hour's data last changed, never before the hour closed; derived from
  // the data so that republishing unchanged data produces identical bytes.
  const lastUpdatedMs = Math.max(watermarkMs ?? 0, hour.getTime() + HOUR_MS);
  let live: FileJob[] = [];
  for (const j of group) {
    j.watermarkMs = watermarkMs;
    j.lastUpdatedMs = lastUpdatedMs;
    const head = j.r.head(lastUpdatedMs);
    if (!j.r.headSchema(head)) {
      j.error = new FeedValidationError(`${j.feed.id} head: ${describeErrors(j.r.headSchema.errors)}`);
      continue;
    }
    const { open, close } = envelopeParts(head, j.r.arrayKey, j.r.tail);
    j.sink = new FileSink(join(dir, `${j.feed.id}.json.gz`), open, close);
    live.push(j);
  }
  if (!live.length) return;

  let i = 0;
  try {
    for await (const row of src.rows(snap, zoneId, hour)) {
      i++;
      let waits: Promise<void>[] | undefined;
      let dropped = false;
      for (const j of live) {
        const rec = j.r.map(row, provider, j.pub);
        if (rec === undefined) continue;
        // the mapped object is what gets written: validating it (not the JSON text) needs no re-parse
        if (!j.r.record(rec)) {
          j.sink!.abort((j.error = new FeedValidationError(`${j.feed.id} row ${i}: ${describeErrors(j.r.record.errors)}`)));
          dropped = true;
          continue;
        }
        j.records++;
        if (!j.sink!.write(JSON.stringify(rec))) (waits ??= []).push(j.sink!.drained());
      }
      if (waits) await Promise.all(waits);
      if (dropped || waits) {
        for (const j of live) j.error ??= j.sink!.error;
        live = live.filter((j) => !j.error);
        // nobody left to write for: stop reading (the snapshot then discards its connection)
        if (!live.length) return;
      }
    }
  } catch (err) {
    for (const j of live) j.sink!.abort((j.error ??= asError(err)));
    return;
  }
  await Promise.all(
    live.map(async (j) => {
      try {
        j.stored = await j.sink!.end();
        j.result = {
          feed: j.feed.id,
          zone: zoneId,
          hour: formatHour(hour),
          key: j.key,
          outcome: 'written',
          sha256: j.stored.sha256,
          records: j.records,
          bytes: j.stored.bytes,
        };
      } catch (err) {
        j.error ??= asError(err);
      }
    }),
  );
}

/**
 * A record's publication_time: the first write of its file at or after the record reached us (the
 * publication log, oldest first), else this publication's time. Deterministic for unchanged data,
 * so that republishing it produces the same bytes.
 */
function publicationTimes(loggedMs: readonly number[], nowMs: number): PublicationTime {
  return (recordedMs) => {
    if (!Number.isFinite(recordedMs)) return loggedMs[0] ?? nowMs;
    for (const t of loggedMs) if (t >= recordedMs) return t;
    return nowMs;
  };
}

/** The spooled file through the sink (written, or unchanged); its index row queued. Sets the outcome. */
async function storeFile(sink: PublicationSink<HourlyIndexRow>, j: FileJob, zoneId: string, hourText: string, force: boolean): Promise<void> {
  const res = j.result!;
  try {
    const stored = await sink.put(
      j.prev,
      { key: j.key, stored: j.stored!, contentType: 'application/json', metadata: { records: String(j.records), 'last-updated': String(j.lastUpdatedMs) } },
      (o) => [
        {
          feed: j.feed.feed,
          version: j.feed.version,
          zone: zoneId,
          hour: hourText,
          key: o.key,
          sha256: o.sha256,
          bytes: o.bytes,
          records: j.records,
          lastUpdated: new Date(j.lastUpdatedMs),
          watermark: j.watermarkMs === null ? null : new Date(j.watermarkMs),
          written: o.outcome === 'written',
        },
      ],
      { force },
    );
    res.outcome = stored.outcome;
  } catch (err) {
    j.error = asError(err);
    j.result = undefined;
  }
}
