/**
 * Writing GBFS snapshots: a document is its envelope's head (last_updated, ttl, version), its data
 * as segments (compressed fragments, lib/core/gzip.ts) and the envelope's closing brace.
 * The stored object is those fragments stitched into one gzip member (publisher/publication/bytes.ts
 * stitchedBytes) and published through the sink of every published object (publisher/publication/sink.ts):
 * its index row's sha256 is that of the stored bytes. Whether a file's data changed is decided
 * before any bytes are made, by its content digest (gbfs_snapshots.content_digest: the digest of its
 * segments' sha256s, lib/core/gzip.ts contentDigest), so that deciding it, refreshing a
 * status file and assembling a 2.2 system never serialize, hash or compress its data again.
 *
 * The same data at the same key writes nothing, unless the store lost the object (checked when a
 * build says so: static files are checked at each of their builds). A status file whose data did not
 * change is refreshed once STATUS_REFRESH_SECONDS old: only its index row moves to the new
 * last_updated (and the content digest of the text at it); the store keeps the object, and the file
 * route answers it with the envelope of the row's last_updated (lib/feeds/gbfs/envelope.ts), so an
 * idle zone stores nothing. last_updated is `now` in whole seconds, always after the previous value.
 * The caller holds the lock of the zone or scope (publisher/publication/lock.ts gbfsUnit: one writer per
 * file in the cluster) and records the rows it collected in its transaction (batch.ts BuildTx).
 */
import type { AppContext } from '../../../lib/domain/context.js';
import { STATUS_REFRESH_SECONDS, gbfsObjectKey, type GbfsVersion } from '../../../lib/feeds/gbfs/files.js';
import { contentDigest, fragment, sha256Hex, type Fragment } from '../../../lib/core/gzip.js';
import { wholeSeconds } from '../../../lib/feeds/gbfs/time.js';
import { ENVELOPE_TAIL, envelopeHead } from '../../../lib/feeds/gbfs/envelope.js';
import { stitchedBytes } from '../../publication/bytes.js';
import { GBFS_INDEX, type GbfsIndexRow } from '../../publication/indexes.js';
import { PublicationSink, unchangedObject } from '../../publication/sink.js';
import { compile, describeErrors } from '../../../lib/core/validate.js';

/** What to build whatever the counters say: ops and tests (`publishGbfsSnapshots`). */
export type GbfsForce = 'status' | 'static' | 'all';

export interface GbfsBuildResult {
  /** files whose object was stored */
  written: number;
  /** status files whose data was unchanged and due: the index row's last_updated moved, nothing was stored (the route serves the stored data in the new envelope) */
  refreshed: number;
  unchanged: number;
  /** files (or zone parts) that failed to build, validate or store (logged; the others are still published) */
  failed: number;
}

/** Adds the counts of `r` to `into`. */
export function addResults(into: GbfsBuildResult, r: GbfsBuildResult): void {
  into.written += r.written;
  into.refreshed += r.refreshed;
  into.unchanged += r.unchanged;
  into.failed += r.failed;
}

/** A piece of a document's text: its sha256 now, its compressed fragment when it is written. */
export interface Segment {
  readonly sha256: string;
  fragment(): Fragment;
}

/** A segment of text, compressed on first use (never, when the file turns out unchanged). */
export function textSegment(text: string): Segment {
  const raw = Buffer.from(text);
  const sha256 = sha256Hex(raw);
  let f: Fragment | undefined;
  return { sha256, fragment: () => (f ??= fragment(raw, sha256)) };
}

export function fragmentSegment(f: Fragment): Segment {
  return { sha256: f.sha256, fragment: () => f };
}

/** Constant segments (separators, skeletons), compressed once per process. */
const constants = new Map<string, Segment>();
function constantSegment(text: string): Segment {
  let s = constants.get(text);
  if (!s) {
    const f = fragment(text);
    s = fragmentSegment(f);
    constants.set(text, s);
  }
  return s;
}

/**
 * The segments of a `data` whose one array holds items given as fragments of comma-joined items
 * (a zone's vehicle blocks, the zones' parts of a 2.2 file): the JSON of `empty` (that data with the
 * array empty) up to the array's `[`, the non-empty fragments with a comma between them, the rest.
 * Byte for byte JSON.stringify of the data with those items.
 */
export function itemsData(empty: unknown, items: Iterable<Fragment>): Segment[] {
  const json = JSON.stringify(empty);
  const at = json.indexOf('[]');
  const data = [constantSegment(json.slice(0, at + 1))];
  let first = true;
  for (const f of items) {
    if (!f.length) continue;
    if (!first) data.push(constantSegment(','));
    data.push(fragmentSegment(f));
    first = false;
  }
  data.push(constantSegment(json.slice(at + 1)));
  return data;
}

export interface GbfsDoc {
  version: GbfsVersion;
  /**
   * The gbfs_snapshots scopes this document answers, the first naming the object: the language
   * scopes of a 2.2 system share the object of every file whose text does not depend on the language.
   */
  scopes: string[];
  /** gbfs_snapshots.file (`gbfs.{role}` for the 3.0 discovery variants) */
  file: string;
  ttl: number;
  /** a status file: its last_updated refreshed once STATUS_REFRESH_SECONDS old */
  status: boolean;
  /** the `data` member's JSON, in pieces */
  data: Segment[];
  /** the whole document at a last_updated (what a schema sees); undefined: the data was validated where it was built */
  document?: (lastUpdated: Date) => unknown;
  /** the schema of `document` */
  schema?: object;
}

export interface StoredRow {
  /** of the stored bytes */
  sha256: string;
  /** of the data's pieces; null for a row written before content digests were kept */
  contentDigest: string | null;
  lastUpdated: Date;
  objectKey: string;
  bytes: number;
}

export type Outcome = 'written' | 'refreshed' | 'unchanged' | 'failed';

class GbfsValidationError extends Error {}

/** The key of a stored row in the rows a writer compares with (batch.ts BuildTx.readRows). */
export const rowKey = (version: string, scope: string, file: string) => `${version}/${scope}/${file}`;

/** The envelope before `data` (lib/feeds/gbfs/envelope.ts, which the file route re-envelopes with). */
function headSegment(version: GbfsVersion, lastUpdated: Date, ttl: number): Segment {
  return textSegment(envelopeHead(version, lastUpdated, ttl));
}

/** The index row of `doc` in one of its scopes: the object it names, its text's digest and last_updated. */
function indexRow(doc: GbfsDoc, scope: string, object: { key: string; sha256: string; bytes: number }, contentDigest: string, lastUpdated: Date): GbfsIndexRow {
  return { version: doc.version, scope, file: doc.file, key: object.key, sha256: object.sha256, bytes: object.bytes, contentDigest, ttl: doc.ttl, lastUpdated };
}

export class SnapshotWriter {
  readonly result = { written: 0, refreshed: 0, unchanged: 0, failed: 0 };
  private readonly sink: PublicationSink<GbfsIndexRow>;
  /** the oldest last_updated now stored among the status files published here (a build's status_written_at) */
  private statusOldest: Date | undefined;
  private statusMissing = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly now: Date,
    private readonly rows: Map<string, StoredRow>,
    /** check that the store still holds an unchanged file's object */
    private readonly checkStore: boolean,
  ) {
    this.sink = new PublicationSink(ctx.store, GBFS_INDEX);
  }

  private digestAt(doc: GbfsDoc, lastUpdated: Date): string {
    return contentDigest([headSegment(doc.version, lastUpdated, doc.ttl), ...doc.data, constantSegment(ENVELOPE_TAIL)]);
  }

  /** Whether the stored file is this document's data (a refresh may reuse it). */
  holds(doc: GbfsDoc): boolean {
    const prev = this.rows.get(rowKey(doc.version, doc.scopes[0], doc.file));
    return (
      prev !== undefined &&
      prev.objectKey === gbfsObjectKey(doc.version, doc.scopes[0], doc.file) &&
      this.digestAt(doc, prev.lastUpdated) === prev.contentDigest
    );
  }

  /** Publishes one document; a failure is logged and counted, never thrown. */
  async publish(doc: GbfsDoc): Promise<Outcome> {
    let outcome: Outcome;
    try {
      outcome = await this.publishOne(doc);
    } catch (err) {
      outcome = 'failed';
      this.ctx.log.error({ err, version: doc.version, scope: doc.scopes[0], file: doc.file }, 'gbfs file not published');
      if (doc.status) this.stored(this.rows.get(rowKey(doc.version, doc.scopes[0], doc.file))?.lastUpdated);
    }
    this.result[outcome]++;
    return outcome;
  }

  private stored(lastUpdated: Date | undefined): void {
    if (!lastUpdated) this.statusMissing = true;
    else if (!this.statusOldest || lastUpdated < this.statusOldest) this.statusOldest = lastUpdated;
  }

  /** The oldest last_updated of the status files published here, as now stored; undefined when one is not stored at all. */
  statusWrittenAt(): Date | undefined {
    return this.statusMissing ? undefined : this.statusOldest;
  }

  private async publishOne(doc: GbfsDoc): Promise<Exclude<Outcome, 'failed'>> {
    const scope = doc.scopes[0];
    const objectKey = gbfsObjectKey(doc.version, scope, doc.file);
    const prev = this.rows.get(rowKey(doc.version, scope, doc.file));
    const same = prev !== undefined && this.holds(doc);
    if (same) {
      const fresh = !doc.status || this.now.getTime() - prev.lastUpdated.getTime() < STATUS_REFRESH_SECONDS * 1000;
      // the same data: the same stored bytes, if the store still holds them
      const present =
        !this.checkStore ||
        (await unchangedObject(this.ctx.store, { sha256: prev.sha256, object_key: prev.objectKey }, { sha256: prev.sha256, key: objectKey }));
      if (!fresh && present) return this.refresh(doc, prev, objectKey);
      if (fresh && present) {
        if (doc.status) this.stored(prev.lastUpdated);
        // the language scopes name the same object: repair one that does not
        for (const other of doc.scopes.slice(1)) {
          const r = this.rows.get(rowKey(doc.version, other, doc.file));
          if (!r || r.sha256 !== prev.sha256 || r.objectKey !== objectKey) {
            this.sink.note(indexRow(doc, other, { key: objectKey, sha256: prev.sha256, bytes: prev.bytes }, prev.contentDigest!, prev.lastUpdated));
          }
        }
        return 'unchanged';
      }
    }

    const lastUpdated = this.nextLastUpdated(prev);
    // new data is validated whole; the same data with a new last_updated was validated when built
    if (!same && doc.document && doc.schema) {
      const validate = compile(doc.schema);
      if (!validate(doc.document(lastUpdated))) throw new GbfsValidationError(`${doc.version} ${doc.file}: ${describeErrors(validate.errors, 5)}`);
    }
    const head = headSegment(doc.version, lastUpdated, doc.ttl);
    const tail = constantSegment(ENVELOPE_TAIL);
    const digest = contentDigest([head, ...doc.data, tail]);
    const stored = await this.sink.put(
      prev && { sha256: prev.sha256, object_key: prev.objectKey },
      {
        key: objectKey,
        stored: stitchedBytes([head.fragment(), ...doc.data.map((s) => s.fragment()), tail.fragment()]),
        contentType: 'application/json',
        metadata: { 'last-updated': lastUpdated.toISOString(), ttl: String(doc.ttl) },
      },
      (o) => doc.scopes.map((scope) => indexRow(doc, scope, o, digest, lastUpdated)),
    );
    if (doc.status) this.stored(lastUpdated);
    return stored.outcome;
  }

  /** last_updated moves forward even if the clock does not (two writes in one second). */
  private nextLastUpdated(prev: StoredRow | undefined): Date {
    const lastUpdated = wholeSeconds(this.now);
    return prev && lastUpdated <= prev.lastUpdated ? new Date(prev.lastUpdated.getTime() + 1000) : lastUpdated;
  }

  /**
   * The ttl refresh of an unchanged status file: its rows (every scope that names the object) at the
   * new last_updated, the object as stored.
   */
  private refresh(doc: GbfsDoc, prev: StoredRow, objectKey: string): 'refreshed' {
    const lastUpdated = this.nextLastUpdated(prev);
    const contentDigest = this.digestAt(doc, lastUpdated);
    this.sink.note(...doc.scopes.map((scope) => indexRow(doc, scope, { key: objectKey, sha256: prev.sha256, bytes: prev.bytes }, contentDigest, lastUpdated)));
    this.stored(lastUpdated);
    return 'refreshed';
  }

  /** The index rows of what was published, handed over once (batch.ts BuildTx records them in its transaction). */
  takeRows(): GbfsIndexRow[] {
    return this.sink.take();
  }
}

/** Seconds 0 … 899 from a key: the offset of its hourly rebuild within the first quarter hour. */
export function staggerSeconds(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return h % 900;
}
