/**
 * History maintenance, scheduled by the publisher (once per cluster: a pg-boss singleton job):
 * creates the daily partitions of events, telemetry and trips ahead of time (PARTITIONS_AHEAD_DAYS),
 * gives rows that landed in a DEFAULT partition their own day's partition, and applies retention
 * (RETENTION_*_DAYS): partitions older than their table's retention are dropped, oldest first, when
 * every hour they hold is published and clean (history_drop_partition, migration 000102). Partition
 * creation and dropping are decided in Postgres under locks, so concurrent runs are safe.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';

export type HistoryTable = 'events' | 'telemetry' | 'trips';
export const HISTORY_TABLES: readonly HistoryTable[] = ['events', 'telemetry', 'trips'];

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` of the UTC day of `d`. */
function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export interface PartitionRun {
  /** partitions created ahead (today … today + PARTITIONS_AHEAD_DAYS) */
  ahead: number;
  /** partitions created for rows found in a DEFAULT partition */
  onDemand: number;
}

/**
 * Ensures the partitions of the UTC days [from, to] (inclusive) of every history table exist. One
 * statement, so one transaction, per table and day: attaching a partition locks the table's DEFAULT
 * partition until commit, and one transaction over the three tables (HistoryEnsurePartitions) holds
 * one table's while it waits for the next's, which a publisher's snapshot may hold while it waits
 * for the first: a deadlock that failed an hour's files at the first start of `make run`.
 */
export async function ensurePartitions(ctx: AppContext, from: Date, to: Date): Promise<number> {
  let created = 0;
  const last = Date.parse(`${utcDay(to)}T00:00:00Z`);
  for (const table of HISTORY_TABLES) {
    for (let day = Date.parse(`${utcDay(from)}T00:00:00Z`); day <= last; day += DAY_MS) {
      const row = await ctx.db.one(sql('HistoryEnsurePartition'), [table, utcDay(new Date(day))]);
      if (row.created) created++;
    }
  }
  return created;
}

export async function maintainPartitions(ctx: AppContext): Promise<PartitionRun> {
  const now = ctx.clock.now();
  const ahead = await ensurePartitions(ctx, now, new Date(now.getTime() + ctx.config.partitionsAheadDays * DAY_MS));
  let onDemand = 0;
  for (const r of await ctx.db.many(sql('HistoryDefaultDays'))) {
    const { created } = await ctx.db.one(sql('HistoryEnsurePartition'), [r.parent, r.day]);
    if (created) onDemand++;
  }
  if (ahead || onDemand) ctx.log.info({ ahead, onDemand }, 'history partitions created');
  return { ahead, onDemand };
}

export function retentionDays(ctx: { config: AppContext['config'] }, table: HistoryTable): number {
  const r = ctx.config.retention;
  return table === 'events' ? r.eventsDays : table === 'trips' ? r.tripsDays : r.telemetryDays;
}

export interface RetentionRun {
  /** `table/YYYY-MM-DD` of each dropped partition */
  dropped: string[];
  /** per table, the first partition past retention that had to stay, with its unpublished hours */
  held: { table: HistoryTable; day: string; unpublishedHours: number }[];
}

/**
 * Drops the partitions past retention, per table oldest first; stops at a table's first partition
 * with an hour not yet published (or dirty), so the retained history is always one unbroken range.
 */
export async function applyRetention(ctx: AppContext): Promise<RetentionRun> {
  const run: RetentionRun = { dropped: [], held: [] };
  const today = Date.parse(`${utcDay(ctx.clock.now())}T00:00:00Z`);
  for (const table of HISTORY_TABLES) {
    const cutoff = utcDay(new Date(today - retentionDays(ctx, table) * DAY_MS));
    for (const { day } of await ctx.db.many(sql('HistoryRetentionCandidates'), [table, cutoff])) {
      const { dropped } = await ctx.db.one(sql('HistoryDropPartition'), [table, day]);
      if (dropped) {
        run.dropped.push(`${table}/${day}`);
        continue;
      }
      const { hours } = await ctx.db.one(sql('HistoryUnpublishedHours'), [table, day]);
      run.held.push({ table, day, unpublishedHours: hours });
      break;
    }
  }
  if (run.dropped.length) ctx.log.info({ dropped: run.dropped }, 'history partitions dropped by retention');
  for (const h of run.held) ctx.log.warn(h, 'history partition past retention kept: hours not published yet');
  return run;
}

/** The scheduled job: partitions first (today's must exist before retention looks at old days). */
export async function maintainHistory(ctx: AppContext): Promise<PartitionRun & RetentionRun> {
  const partitions = await maintainPartitions(ctx);
  return { ...partitions, ...(await applyRetention(ctx)) };
}

export interface HistoryTableStatus {
  table: HistoryTable;
  retentionDays: number;
  /** daily partitions held (the DEFAULT partition not counted) */
  partitions: number;
  /** first and last UTC day with a partition, null without any */
  oldestDay: string | null;
  newestDay: string | null;
  /** bytes of the table's partitions with their indexes, DEFAULT included */
  bytes: number;
  /** rows of hours before this were dropped by retention: served from the published files only */
  droppedBefore: Date | null;
  droppedPartitions: number;
}

/** What each history table retains: `make publish-status` and the history_* metrics. */
export async function historyStatus(ctx: { db: AppContext['db']; config: AppContext['config'] }): Promise<HistoryTableStatus[]> {
  const parts = await ctx.db.many(sql('HistoryPartitions'));
  const marks = await ctx.db.many(sql('HistoryRetention'));
  return HISTORY_TABLES.map((table) => {
    const mine = parts.filter((p) => p.parent === table);
    const days = mine
      .map((p) => p.day)
      .filter((d): d is string => d !== null)
      .sort();
    const mark = marks.find((m) => m.source === table);
    return {
      table,
      retentionDays: retentionDays(ctx, table),
      partitions: days.length,
      oldestDay: days[0] ?? null,
      newestDay: days[days.length - 1] ?? null,
      bytes: mine.reduce((n, p) => n + Number(p.bytes), 0),
      droppedBefore: mark?.dropped_before ?? null,
      droppedPartitions: mark?.dropped_partitions ?? 0,
    };
  });
}
