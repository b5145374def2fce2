/**
 * MDS 2.0 monthly reports: after a UTC month closes, one CSV per zone (lib/publication/keys.ts
 * reportKey) with the all_riders trip and rider counts per vehicle type, for the zone and each of
 * its areas (geographies), written again when late trips change them. Published like every object
 * (publisher/publication/sink.ts): stored gzip, indexed in feed_reports, under the report's lock.
 *
 * The MDS privacy rule applies to every count: a value from 1 to 10 is written as -1. A report whose
 * stored bytes are unchanged is not written again. A month some of whose trips retention already
 * dropped is never recomputed (ReportsDue leaves it out): its stored report is the archive.
 */
import type { AppContext } from '../lib/domain/context.js';
import { type Queryable } from '../lib/core/db.js';
import { sql } from '../lib/core/sql/typed.js';
import { mdsVehicleType } from '../lib/feeds/mds/records.js';
import { gzipBytes } from './publication/bytes.js';
import { REPORT_INDEX } from './publication/indexes.js';
import { REPORT_CONTENT_TYPE, reportKey } from '../lib/publication/keys.js';
import { withPublicationLock } from './publication/lock.js';
import { PublicationSink, type StoreOutcome } from './publication/sink.js';
import { uuidV5 } from '../lib/core/uuid.js';

export const REPORT_HEADER = 'provider_id,start_date,duration,special_group_type,geography_id,vehicle_type,trip_count,rider_count';

/** Months a run writes at most (oldest first), so that a zone with years of history catches up in steps. */
const MONTHS_PER_RUN = 12;

/** MDS reports: counts from 1 to 10 are withheld (-1); 0 and more than 10 are written as they are. */
function privateCount(n: number): number {
  return n >= 1 && n <= 10 ? -1 : n;
}

/** The stable geography id of a zone as a whole (its areas keep their own UUIDs). */
export function zoneGeographyId(providerId: string, zoneId: string): string {
  return uuidV5(`zone:${zoneId}`, providerId);
}

/** The CSV of one zone and month. */
async function reportCsv(ctx: Pick<AppContext, 'config'>, db: Queryable, zoneId: string, month: string): Promise<{ csv: string; rows: number }> {
  const counts = await db.many(sql('ReportCounts'), [zoneId, `${month}-01T00:00:00`]);
  const zoneGeo = zoneGeographyId(ctx.config.providerId, zoneId);
  const lines = [REPORT_HEADER];
  for (const c of counts) {
    lines.push(
      [
        ctx.config.providerId,
        `${month}-01`,
        'P1M',
        'all_riders',
        c.area_id ?? zoneGeo,
        mdsVehicleType(c.form_factor),
        privateCount(c.trip_count),
        privateCount(c.rider_count),
      ].join(','),
    );
  }
  return { csv: lines.join('\n') + '\n', rows: counts.length };
}

export type ReportOutcome = StoreOutcome;

/**
 * Writes the report of one zone and month (when its stored bytes changed); one writer at a time.
 * Claim, counts and index row share one transaction: a failure leaves the report dirty for the
 * next sweep.
 */
async function publishReport(ctx: AppContext, zoneId: string, month: string): Promise<ReportOutcome> {
  const key = reportKey(zoneId, month);
  const sink = new PublicationSink(ctx.store, REPORT_INDEX);
  return withPublicationLock(ctx, [key], (held) =>
    held.tx(async (tx) => {
      const prev = await tx.maybeOne(sql('ReportClaim'), [zoneId, `${month}-01`]);
      const { csv, rows } = await reportCsv(ctx, tx, zoneId, month);
      const stored = await sink.put(prev, { key, stored: gzipBytes(csv), contentType: REPORT_CONTENT_TYPE }, (o) =>
        o.outcome === 'written' ? [{ zone: zoneId, month, key: o.key, sha256: o.sha256, bytes: o.bytes, rows }] : [],
      );
      await sink.flush(tx, ctx.clock.now());
      return stored.outcome;
    }),
  );
}

/** The publisher's sweep: the reports of closed months that are missing or dirty. */
export async function publishDueReports(ctx: AppContext): Promise<{ written: number; unchanged: number }> {
  const now = ctx.clock.now();
  const lastClosed = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  const due = await ctx.db.many(sql('ReportsDue'), [lastClosed.toISOString().slice(0, 19), MONTHS_PER_RUN]);
  const out = { written: 0, unchanged: 0 };
  for (const d of due) {
    const r = await publishReport(ctx, d.zone_id, d.month);
    out[r]++;
  }
  if (due.length) ctx.log.info({ ...out }, 'monthly reports published');
  return out;
}
