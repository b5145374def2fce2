/**
 * Ops functions behind `bin/ops.ts backfill | republish | publish-status` (the CLI adds the
 * progress bar and the exit code). Both are safe to run next to live publishers: a file is published
 * under its own advisory lock, and a backfill without `force` skips hours that are current. The
 * status itself is lib/publication/status.ts (the API reads it too); the CLI's adds what the history
 * tables retain.
 */
import { historyStatus, type HistoryTableStatus } from './jobs/history.js';
import type { AppContext } from '../lib/domain/context.js';
import { sql } from '../lib/core/sql/typed.js';
import { floorHour, formatHour, hoursBetween, HOUR_MS } from '../lib/feeds/hours.js';
import { feedOf, selectFeeds, type HourlyFeed } from '../lib/feeds/publications.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import {
  OpsError,
  publicationStatus,
  resolveZones,
  type HourFailure,
  type PublicationStatus,
  type PublishStatusOptions,
  type ZoneRow,
} from '../lib/publication/status.js';
import type { HourFileResult, PublishResult } from './publish.js';
import { publishSetWithMetrics } from './publish-metrics.js';

export type { CellState, HourFailure, PublishStatusOptions } from '../lib/publication/status.js';

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

function nothingDoneReason(o: BackfillOptions, zones: ZoneRow[], lastClosed: Date): string {
  if (floorHour(o.from) > lastClosed) return `the window starts after ${formatHour(lastClosed)}, the last closed hour (an hour is published once it has ended)`;
  if (!zones.length) return 'no zone selected';
  const born = zones.map((z) => floorHour(z.created_at)).sort((a, b) => a.getTime() - b.getTime())[0];
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
    const rows = await ctx.db.many(sql('PubStatusRows'), [zones.map((z) => z.id), hourParam(floorHour(o.from)), hourParam(floorHour(o.to))]);
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
      const w = work[next++];
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

/** `make publish-status`: the publication status, and what Postgres retains of each history table. */
export interface PublishStatus extends PublicationStatus {
  /** what Postgres retains of each history table (partitions, retention, archived range) */
  history: HistoryTableStatus[];
}

/** The hours × feeds table of a range, per zone, with the history tables' retention. */
export async function publishStatus(ctx: AppContext, o: PublishStatusOptions): Promise<PublishStatus> {
  return { ...(await publicationStatus(ctx, o)), history: await historyStatus(ctx) };
}
