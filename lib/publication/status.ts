/**
 * The state of the hourly files of a window, per zone, hour and feed, with each file's figures:
 * what `make publish-status` prints (publisher/ops.ts adds what the history tables retain), what the
 * operator console shows (/console/api/publishing) and what the publications index tells a city
 * (/publications). One function, read by both processes, so the three never disagree.
 */
import type { AppContext } from '../domain/context.js';
import { sql, type RowOf } from '../core/sql/typed.js';
import { floorHour, formatHour, hoursBetween, HOUR_MS } from '../feeds/hours.js';
import { feedOf, selectFeeds, type HourlyFeed } from '../feeds/publications.js';
import { hourParam } from '../feeds/mds/sources.js';
import { latestDueHour, lookbackStart } from './due.js';

/** A request the publication functions refuse (an unknown zone, a reversed window): the caller's 400. */
export class OpsError extends Error {}

export interface HourFailure {
  feed: string;
  zone: string;
  hour: string;
  error: string;
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

/** History catch-up of one zone (publisher/schedule.ts): hours before the tick's look-back. */
export interface CatchupStatus {
  zone: string;
  /** `YYYY-MM-DDTHH`: every hour before it has a file of every feed (the oldest mark over the feeds) */
  completeBefore: string;
  /** hours between that mark and the look-back not yet confirmed (0: the history is complete) */
  hoursLeft: number;
}

export interface PublicationStatus {
  feeds: string[];
  rows: StatusRow[];
  /** per file, in row order then feed order */
  files: FileFigures[];
  totals: Record<CellState, number>;
  /** republications of the range's files whose content changed (or forced) */
  republished: number;
  failures: HourFailure[];
  /** per zone: how far the history catch-up has confirmed every file published */
  catchup: CatchupStatus[];
}

export interface PublishStatusOptions {
  zones: string[] | 'all';
  /** default: 24 hours before `to` */
  from?: Date;
  /** default: the latest hour that is due */
  to?: Date;
  feeds?: string[] | 'all';
}

/** A zone with the hour its history starts from. */
export type ZoneRow = RowOf<'PubZones'>;

/** A PubStatusRows row: a file's index row with its writes from the publication log. */
type FileRow = RowOf<'PubStatusRows'>;

/** The zones named (or all of them); an unknown one is an OpsError. */
export async function resolveZones(ctx: Pick<AppContext, 'db'>, zones: string[] | 'all'): Promise<ZoneRow[]> {
  const all = await ctx.db.many(sql('PubZones'));
  if (zones === 'all' || zones.includes('all')) return all;
  const unknown = zones.filter((z) => !all.some((a) => a.id === z));
  if (unknown.length) throw new OpsError(`unknown zone(s): ${unknown.join(', ')}`);
  return all.filter((a) => zones.includes(a.id));
}

/** The hours × feeds table of a range, per zone (hours before a zone existed are left out). */
export async function publicationStatus(ctx: AppContext, o: PublishStatusOptions): Promise<PublicationStatus> {
  const feeds = selectFeeds(o.feeds ?? 'all');
  const zones = await resolveZones(ctx, o.zones);
  const now = ctx.clock.now();
  const due = latestDueHour(now, ctx.config.publishLatenessSeconds);
  const to = floorHour(o.to ?? due);
  const from = floorHour(o.from ?? new Date(to.getTime() - 23 * HOUR_MS));
  if (from > to) throw new OpsError('from must not be after to');
  const rows = await ctx.db.many(sql('PubStatusRows'), [zones.map((z) => z.id), hourParam(from), hourParam(to)]);
  const byKey = new Map<string, FileRow>();
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
          feed: f.id,
          zone: z.id,
          hour: h,
          state: s,
          served: !!r?.object_key && r.status !== 'pending',
          record_count: r?.record_count ?? null,
          sha256: r?.sha256 ?? null,
          first_publication_time: r?.first_published_ms == null ? null : Number(r.first_published_ms),
          last_publication_time: r?.last_published_ms == null ? null : Number(r.last_published_ms),
          republish_count: Math.max(0, writes - 1),
        });
      }
      out.push({ zone: z.id, hour: h, states });
    }
  }
  return {
    feeds: feeds.map((f) => f.id),
    rows: out,
    files,
    totals,
    republished,
    failures,
    catchup: await catchupStatus(
      ctx,
      zones.map((z) => z.id),
      feeds,
    ),
  };
}

async function catchupStatus(ctx: AppContext, zoneIds: string[], feeds: readonly HourlyFeed[]): Promise<CatchupStatus[]> {
  const start = lookbackStart(ctx.clock.now(), ctx.config.publishLatenessSeconds);
  const rows = await ctx.db.many(sql('PubCatchupStatus'), [feeds.map((f) => f.feed), feeds.map((f) => f.version), zoneIds]);
  return rows.map((r) => {
    // a feed without a mark has not been scanned yet: it counts from the zone's first hour
    const mark = r.feeds_marked === feeds.length && r.complete_before ? r.complete_before : r.first_hour;
    const hoursLeft = Math.max(0, Math.round((start.getTime() - mark.getTime()) / HOUR_MS));
    return { zone: r.zone_id, completeBefore: formatHour(hoursLeft ? mark : start), hoursLeft };
  });
}
