/**
 * The three indexes of published objects, each a table with one row per object a client can ask
 * for, written only through the sink (sink.ts) and read by the serving decision (serve.ts):
 *
 *   feed_publications  (feed, version, zone, hour)  hourly MDS and insurance files
 *   gbfs_snapshots     (version, scope, file)       GBFS files; the language scopes of a 2.2 system
 *                                                   may name one shared object
 *   feed_reports       (zone, month)                MDS monthly reports
 *
 * Every row carries object_key, sha256 (of the stored bytes) and bytes; the rest is its kind's own.
 */
import { sql } from '../../lib/core/sql/typed.js';
import type { PublicationIndexOf } from './sink.js';

export interface HourlyIndexRow {
  feed: string;
  version: string;
  zone: string;
  /** `YYYY-MM-DDTHH:00:00` (a UTC timestamp without zone) */
  hour: string;
  key: string;
  sha256: string;
  bytes: number;
  records: number;
  lastUpdated: Date;
  watermark: Date | null;
  /** the object was written (not found unchanged): the row's published_at moves */
  written: boolean;
}

/** feed_publications: the file is 'published' with its figures, its failure cleared. */
export const HOURLY_INDEX: PublicationIndexOf<HourlyIndexRow> = {
  kind: 'hourly',
  async record(db, rows, now) {
    await db.query(sql('PublicationHourlyRecord'), [
      rows.map((r) => r.feed),
      rows.map((r) => r.version),
      rows.map((r) => r.zone),
      rows.map((r) => r.hour),
      rows.map((r) => r.key),
      rows.map((r) => r.sha256),
      rows.map((r) => r.records),
      rows.map((r) => r.bytes),
      rows.map((r) => r.lastUpdated),
      rows.map((r) => r.watermark),
      rows.map((r) => r.written),
      now,
    ]);
  },
};

export interface GbfsIndexRow {
  version: string;
  scope: string;
  file: string;
  key: string;
  sha256: string;
  /** the digest of the document's pieces: "same data" without compressing it again (publisher/feeds/gbfs/snapshots.ts) */
  contentDigest: string;
  bytes: number;
  ttl: number;
  lastUpdated: Date;
}

/** gbfs_snapshots: upserted. */
export const GBFS_INDEX: PublicationIndexOf<GbfsIndexRow> = {
  kind: 'gbfs',
  async record(db, rows, now) {
    await db.query(sql('PublicationGbfsRecord'), [
      rows.map((r) => r.version),
      rows.map((r) => r.scope),
      rows.map((r) => r.file),
      rows.map((r) => r.key),
      rows.map((r) => r.sha256),
      rows.map((r) => r.contentDigest),
      rows.map((r) => r.bytes),
      rows.map((r) => r.ttl),
      rows.map((r) => r.lastUpdated),
      now,
    ]);
  },
};

export interface ReportIndexRow {
  zone: string;
  /** `YYYY-MM` */
  month: string;
  key: string;
  sha256: string;
  bytes: number;
  rows: number;
}

/** feed_reports: upserted; `dirty` is left to the claim and the late-trip trigger. */
export const REPORT_INDEX: PublicationIndexOf<ReportIndexRow> = {
  kind: 'report',
  async record(db, rows, now) {
    await db.query(sql('PublicationReportRecord'), [
      rows.map((r) => r.zone),
      rows.map((r) => `${r.month}-01`),
      rows.map((r) => r.key),
      rows.map((r) => r.sha256),
      rows.map((r) => r.bytes),
      rows.map((r) => r.rows),
      now,
    ]);
  },
};
