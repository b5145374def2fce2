/**
 * Ops functions behind `bin/ops.ts backfill | republish | publish-status` (the CLI adds the
 * progress bar and the exit code). Both are safe to run next to live publishers: a file is published
 * under its own advisory lock, and a backfill without `force` skips hours that are current.
 */
import { historyStatus, type HistoryTableStatus } from './jobs/history.js';
import type { AppContext } from '../lib/context.js';
import { q } from '../lib/db.js';
import { floorHour, formatHour, hoursBetween, HOUR_MS } from '../lib/feeds/hours.js';
import { feedOf, selectFeeds, type HourlyFeed } from '../lib/feeds/publications.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import type { HourFileResult, PublishResult } from './publish.js';
import { publishSetWithMetrics } from './publish-metrics.js';
import { latestDueHour, lookbackStart } from './schedule.js';

export class OpsError extends Error {}

export interface HourFailure {
  feed: string;
  zone: string;
  hour: string;
  error: string;
}

export type BackfillProgress =
  | { kind: 'done'; done: number; total: number; result: PublishResult }
  | { kind: 'skipped'; done: number; total: number; feed: string; zone: string; hour: string }
  | { kind: 'failed'; done: number; total: number; failure: HourFailure };

export interface BackfillOptions {
  zones: string[] | 'all';
  /** first and last hour (inclusive; floored to the hour) */
  from: Date;
  to: Date;
  /** feed ids or prefixes (`mds-2.0-trips`, `mds-1.2`, `insurance`) or 'all' */
  feeds: string[] | 'all';
  /** publish hours that are already current again and rewrite their objects */
  force: boolean;
  /** files published in parallel (default 2) */
  concurrency?: number;
  onProgress?: (p: BackfillProgress) => void;
}

export interface BackfillSummary {
  total: number;
  written: number;
  unchanged: number;
  skipped: number;
  failed: HourFailure[];
  /** why the window held no hour to publish (total 0), for the operator */
  nothingDone?: string;
}

interface ZoneRow {
  id: string;
  created_at: Date;
}

async function resolveZones(ctx: AppContext, zones: string[] | 'all'): Promise<ZoneRow[]> {
  const all = await ctx.db.many<ZoneRow>(q('PubZones'));
  if (zones === 'all' || zones.includes('all')) return all;
  const unknown = zones.filter((z) => !all.some((a) => a.id === z));
  if (unknown.length) throw new OpsError(`unknown zone(s): ${unknown.join(', ')}`);
  return all.filter((a) => zones.includes(a.id));
}

function nothingDoneReason(o: BackfillOptions, zones: ZoneRow[], lastClosed: Date): string {
  if (floorHour(o.from) > lastClosed) return `the window starts after ${formatHour(lastClosed)}, the last closed hour (an hour is published once it has ended)`;
  if (!zones.length) return 'no zone selected';
  const born = zones.map((z) => floorHour(z.created_at)).sort((a, b) => a.getTime() - b.getTime())[0]!;
  return `the window ends before ${formatHour(born)}, when the first selected zone was created`;
}

/**
 * Publishes every (feed, zone, hour) in the range that has closed, from the zone's first hour on.
 * Failures do not stop the run; they are returned (and recorded as 'failed' rows).
 */
export async function backfill(ctx: AppContext, o: BackfillOptions): Promise<BackfillSummary> {
  if (!(o.from.getTime() <= o.to.getTime())) throw new OpsError('from must not be after to');
  const feeds = selectFeeds(o.feeds);
  const zones = await resolveZones(ctx, o.zones);
  const lastClosed = floorHour(new Date(ctx.clock.now().getTime() - HOUR_MS));
  const current = new Set<string>();
  if (!o.force) {
    const rows = await ctx.db.many(q('PubStatusRows'), [zones.map((z) => z.id), hourParam(floorHour(o.from)), hourParam(floorHour(o.to))]);
    for (const r of rows) if (r.status === 'published' && !r.dirty) current.add(`${feedOf(r.feed, r.version)?.id}|${r.scope}|${formatHour(r.hour)}`);
  }
  // one unit of work per (zone, hour): publishHourSet reads each source row once for all its files
  const work: { zone: string; hour: Date; feeds: HourlyFeed[] }[] = [];
  let total = 0;
  for (const z of zones) {
    for (const hour of hoursBetween(o.from, o.to)) {
      if (hour < floorHour(z.created_at) || hour > lastClosed) continue;
      work.push({ zone: z.id, hour, feeds: [...feeds] });
      total += feeds.length;
    }
  }
  const summary: BackfillSummary = { total, written: 0, unchanged: 0, skipped: 0, failed: [] };
  if (!work.length) summary.nothingDone = nothingDoneReason(o, zones, lastClosed);
  let done = 0;
  let next = 0;
  const worker = async () => {
    while (next < work.length) {
      const w = work[next++]!;
      const hour = formatHour(w.hour);
      const due = w.feeds.filter((f) => !current.has(`${f.id}|${w.zone}|${hour}`));
      for (const f of w.feeds) {
        if (due.includes(f)) continue;
        summary.skipped++;
        o.onProgress?.({ kind: 'skipped', done: ++done, total, feed: f.id, zone: w.zone, hour });
      }
      if (!due.length) continue;
      let results: HourFileResult[];
      try {
        results = await publishSetWithMetrics(ctx, w.zone, w.hour, due, { force: o.force });
      } catch (err) {
        // the set failed before any file (e.g. the database is gone): every file of it failed
        const error = err instanceof Error ? err.message : String(err);
        results = due.map((f) => ({ feed: f.id, zone: w.zone, hour, key: '', outcome: 'failed' as const, error: new Error(error) }));
      }
      for (const result of results) {
        if (result.outcome === 'failed') {
          const failure = { feed: result.feed, zone: w.zone, hour, error: result.error.message };
          summary.failed.push(failure);
          o.onProgress?.({ kind: 'failed', done: ++done, total, failure });
        } else {
          if (result.outcome === 'written') summary.written++;
          else summary.unchanged++;
          o.onProgress?.({ kind: 'done', done: ++done, total, result });
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 2) }, worker));
  return summary;
}

/** State of one file: current, waiting for a republish (dirty), failed, being published, never published, or not due yet. */
export type CellState = 'published' | 'dirty' | 'failed' | 'pending' | 'missing' | 'not_due';

export interface StatusRow {
  zone: string;
  hour: string;
  /** feed id → state */
  states: Record<string, CellState>;
}

/** One file's figures: the publications index (api/feeds/publications-index.ts). */
export interface FileFigures {
  feed: string;
  zone: string;
  hour: string;
  state: CellState;
  /** a file is served (published, or dirty / failed with a previous version) */
  served: boolean;
  record_count: number | null;
  sha256: string | null;
  first_publication_time: number | null;
  last_publication_time: number | null;
  /** writes after the first (republications whose content changed, or forced) */
  republish_count: number;
}

export interface PublishStatus {
  feeds: string[];
  rows: StatusRow[];
  /** per file, in row order then feed order */
  files: FileFigures[];
  totals: Record<CellState, number>;
  /** republications of the range's files whose content changed (or forced) */
  republished: number;
  failures: HourFailure[];
  /** what Postgres retains of each history table (partitions, retention, archived range) */
  history: HistoryTableStatus[];
  /** per zone: how far the history catch-up has confirmed every file published */
  catchup: CatchupStatus[];
}

/** History catch-up of one zone (publisher/schedule.ts): hours before the cron's look-back. */
export interface CatchupStatus {
  zone: string;
  /** `YYYY-MM-DDTHH`: every hour before it has a file of every feed (the oldest mark over the feeds) */
  completeBefore: string;
  /** hours between that mark and the look-back not yet confirmed (0: the history is complete) */
  hoursLeft: number;
}

export interface PublishStatusOptions {
  zones: string[] | 'all';
  /** default: 24 hours before `to` */
  from?: Date;
  /** default: the latest hour that is due */
  to?: Date;
  feeds?: string[] | 'all';
}

/** The hours × feeds table of a range, per zone (hours before a zone existed are left out). */
export async function publishStatus(ctx: AppContext, o: PublishStatusOptions): Promise<PublishStatus> {
  const feeds = selectFeeds(o.feeds ?? 'all');
  const zones = await resolveZones(ctx, o.zones);
  const now = ctx.clock.now();
  const due = latestDueHour(now, ctx.config.publishLatenessSeconds);
  const to = floorHour(o.to ?? due);
  const from = floorHour(o.from ?? new Date(to.getTime() - 23 * HOUR_MS));
  if (from > to) throw new OpsError('from must not be after to');
  const rows = await ctx.db.many(q('PubStatusRows'), [zones.map((z) => z.id), hourParam(from), hourParam(to)]);
  const byKey = new Map<string, any>();
  for (const r of rows) byKey.set(`${feedOf(r.feed, r.version)?.id}|${r.scope}|${formatHour(r.hour)}`, r);
  const totals: Record<CellState, number> = { published: 0, dirty: 0, failed: 0, pending: 0, missing: 0, not_due: 0 };
  const failures: HourFailure[] = [];
  const out: StatusRow[] = [];
  const files: FileFigures[] = [];
  let republished = 0;
  for (const z of zones) {
    for (const hour of hoursBetween(from, to)) {
      if (hour < floorHour(z.created_at)) continue;
      const h = formatHour(hour);
      const states: Record<string, CellState> = {};
      for (const f of feeds) {
        const r = byKey.get(`${f.id}|${z.id}|${h}`);
        let s: CellState;
        if (!r) s = hour > due ? 'not_due' : 'missing';
        else if (r.status === 'failed') {
          s = 'failed';
          failures.push({ feed: f.id, zone: z.id, hour: h, error: r.last_error ?? '' });
        } else if (r.status === 'pending') s = 'pending';
        else s = r.dirty ? 'dirty' : 'published';
        states[f.id] = s;
        totals[s]++;
        const writes = r ? Number(r.writes) : 0;
        republished += Math.max(0, writes - 1);
        files.push({
          feed: f.id, zone: z.id, hour: h, state: s, served: !!r?.object_key && r.status !== 'pending',
          record_count: r?.record_count ?? null, sha256: r?.sha256 ?? null,
          first_publication_time: r?.first_published_ms == null ? null : Number(r.first_published_ms),
          last_publication_time: r?.last_published_ms == null ? null : Number(r.last_published_ms),
          republish_count: Math.max(0, writes - 1),
        });
      }
      out.push({ zone: z.id, hour: h, states });
    }
  }
  return { feeds: feeds.map((f) => f.id), rows: out, files, totals, republished, failures, history: await historyStatus(ctx), catchup: await catchupStatus(ctx, zones.map((z) => z.id), feeds) };
}

async function catchupStatus(ctx: AppContext, zoneIds: string[], feeds: readonly HourlyFeed[]): Promise<CatchupStatus[]> {
  const start = lookbackStart(ctx.clock.now(), ctx.config.publishLatenessSeconds);
  const rows = await ctx.db.many(q('PubCatchupStatus'), [feeds.map((f) => f.feed), feeds.map((f) => f.version), zoneIds]);
  return rows.map((r) => {
    // a feed without a mark has not been scanned yet: it counts from the zone's first hour
    const mark: Date = r.feeds_marked === feeds.length && r.complete_before ? r.complete_before : r.first_hour;
    const hoursLeft = Math.max(0, Math.round((start.getTime() - mark.getTime()) / HOUR_MS));
    return { zone: r.zone_id, completeBefore: formatHour(hoursLeft ? mark : start), hoursLeft };
  });
}
