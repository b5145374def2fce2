/**
 * The publication sink: the one way an object reaches the store and its index, for hourly files
 * (feed_publications), GBFS snapshots (gbfs_snapshots) and monthly reports (feed_reports).
 *
 *   stored bytes (bytes.ts: gzip, sha256 of the stored bytes)
 *     → unchanged? the index row names the same sha256 at the same key and the store still holds
 *       it: write nothing (unless forced)
 *     → else put, gzip, with the sha256 as metadata (the store's put is atomic: a reader sees the
 *       previous version or this one)
 *     → its index row, recorded only once the object is in the store, in the index of its kind
 *       (indexes.ts), one statement for every row of the writer's run
 *
 * The writer holds the lock of the object (lock.ts) from before it reads the previous row until its
 * rows are recorded, so two writers never interleave on one key.
 *
 * Being the one way in, the sink is where a process counts what it writes (lib/core/metrics.ts
 * store_objects_written_total, store_bytes_written_total) and what it found unchanged
 * (store_writes_skipped_total), by the kind of its index.
 */
import type { Queryable } from '../../lib/core/db.js';
import { metrics, type StoreKind } from '../../lib/core/metrics.js';
import type { ObjectStore } from '../../lib/core/store/types.js';
import type { IndexedObject } from '../../lib/publication/keys.js';
import type { StoredBytes } from './bytes.js';

/** One object to publish. */
export interface ObjectToStore {
  key: string;
  stored: StoredBytes;
  /** the media type of the decoded content (the stored bytes are gzip of it) */
  contentType: string;
  /** more object metadata (`sha256` is the sink's) */
  metadata?: Record<string, string>;
}

export type StoreOutcome = 'written' | 'unchanged';

/**
 * The one "unchanged → write nothing" rule: the previous index row names the same content (sha256)
 * at the same key, and the store still holds that object. The store check matters when an object
 * was deleted behind the index's back (by hand, or a store switch): it is written again instead of
 * being reported unchanged for ever.
 */
export async function unchangedObject(store: ObjectStore, prev: IndexedObject | undefined, next: { sha256: string; key: string }): Promise<boolean> {
  if (!prev || prev.sha256 !== next.sha256 || prev.object_key !== next.key) return false;
  return (await store.head(next.key)) !== undefined;
}

/** Where a kind of publication records its index rows (indexes.ts): one statement for many rows. */
export interface PublicationIndexOf<Row> {
  /** what it indexes: the `kind` label of the store counts */
  readonly kind: StoreKind;
  record(db: Queryable, rows: readonly Row[], now: Date): Promise<void>;
}

/** A published object as the sink left it. */
export interface StoredObject {
  key: string;
  sha256: string;
  bytes: number;
  outcome: StoreOutcome;
}

/**
 * One writer's run: objects stored one by one (or concurrently), their index rows recorded together
 * by `flush`. A row is queued only after its object's put resolved, so the index never names an
 * object the store does not have.
 */
export class PublicationSink<Row> {
  private readonly rows: Row[] = [];
  private readonly labels: { kind: StoreKind };

  constructor(
    private readonly store: ObjectStore,
    private readonly index: PublicationIndexOf<Row>,
  ) {
    this.labels = { kind: index.kind };
  }

  /**
   * Stores `obj` unless unchanged (or `force`), then queues the rows `rowsOf` gives for the result
   * (none: the index already says it all). Throws when the put fails; nothing is queued then.
   */
  async put(
    prev: IndexedObject | undefined,
    obj: ObjectToStore,
    rowsOf: (stored: StoredObject) => readonly Row[],
    opts: { force?: boolean } = {},
  ): Promise<StoredObject> {
    const { key, stored } = obj;
    const same = !opts.force && (await unchangedObject(this.store, prev, { sha256: stored.sha256, key }));
    if (same) metrics.storeWritesSkipped.inc(this.labels);
    else {
      await this.store.put(key, stored.body(), { contentType: obj.contentType, contentEncoding: 'gzip', metadata: { ...obj.metadata, sha256: stored.sha256 } });
      // counted once the store took it: a failed put is store_errors_total's
      metrics.storeObjectsWritten.inc(this.labels);
      metrics.storeBytesWritten.inc(this.labels, stored.bytes);
    }
    const result: StoredObject = { key, sha256: stored.sha256, bytes: stored.bytes, outcome: same ? 'unchanged' : 'written' };
    this.rows.push(...rowsOf(result));
    return result;
  }

  /** Queues rows naming objects already stored (e.g. another scope's row of a shared GBFS object). */
  note(...rows: Row[]): void {
    this.rows.push(...rows);
  }

  /** The queued rows, handed over (the caller records them with others'); the queue is emptied. */
  take(): Row[] {
    return this.rows.splice(0);
  }

  /** Records the queued rows in the writer's connection or transaction. */
  async flush(db: Queryable, now: Date): Promise<void> {
    if (!this.rows.length) return;
    const rows = this.rows.splice(0);
    await this.index.record(db, rows, now);
  }
}
