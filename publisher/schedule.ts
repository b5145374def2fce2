/**
 * What is due: hours whose files were never published (closed for the configured lateness, within
 * a look-back window), hours to publish again (dirty, failed after a backoff, left pending by a
 * crash), and history older than the look-back that has no file yet (catch-up: a bounded chunk per
 * tick from a mark per zone and feed, sql/migrations/000130_feed_catchup.sql). The publisher's
 * tick (once a minute per cluster) turns them into pg-boss jobs, one per (zone, hour)
 * (lib/publication/queue.ts).
 */
import type { AppContext } from '../lib/domain/context.js';
import { sql } from '../lib/core/sql/typed.js';
import { formatHour, HOUR_MS } from '../lib/feeds/hours.js';
import { feedOf, HOURLY_FEEDS, type HourlyFeed } from '../lib/feeds/publications.js';
import { hourParam } from '../lib/feeds/mds/sources.js';
import { latestDueHour, lookbackStart } from '../lib/publication/due.js';
import type { HourJob } from '../lib/publication/queue.js';

export { latestDueHour, lookbackStart } from '../lib/publication/due.js';
export { groupByHour, type HourJob } from '../lib/publication/queue.js';

/**
 * With MDS_TELEMETRY_TRIP_DELAY_MINUTES > 0, a trip's points become publishable when its delay runs
 * out, which no write marks: each tick dirties the telemetry hours of the trips released since the
 * last tick this process ran (its first looks back an hour, so a restart loses nothing; the ticks
 * of the cluster go to whichever publisher takes the job, and a release seen twice costs one
 * republish that writes nothing).
 */
let releasedUpTo: Date | undefined;
async function releaseDelayedTelemetry(ctx: AppContext, now: Date): Promise<void> {
  const delay = ctx.config.telemetryTripDelayMinutes;
  if (delay === 0) return;
  const from = releasedUpTo && releasedUpTo < now ? releasedUpTo : new Date(now.getTime() - HOUR_MS);
  await ctx.db.query(sql('PubTelemetryReleased'), [from, now, delay]);
  releasedUpTo = now;
}

/**
 * Files a tick queues at most from each source (missing, republish): 2,500 (zone, hour) jobs of 8
 * files, a day of 100 zones in one tick. The workers drain ~17 jobs a second per publisher
 * (publisher/work.ts), so a tick's jobs are done in about its minute; at 5,000 a day of 100 zones
 * waited a second tick (BENCH=breadth: catch-up per zone 1.28× the 10-zone figure).
 */
const TICK_FILES = 20_000;

export async function dueHourJobs(ctx: AppContext, opts: { lookbackHours?: number; limit?: number; feeds?: readonly HourlyFeed[] } = {}): Promise<HourJob[]> {
  const now = ctx.clock.now();
  const feeds = opts.feeds ?? HOURLY_FEEDS;
  const limit = opts.limit ?? TICK_FILES;
  const to = latestDueHour(now, ctx.config.publishLatenessSeconds);
  const from = lookbackStart(now, ctx.config.publishLatenessSeconds, opts.lookbackHours);
  const jobs: HourJob[] = [];
  const missing = await ctx.db.many(sql('PubMissingHours'), [feeds.map((f) => f.feed), feeds.map((f) => f.version), hourParam(from), hourParam(to), limit]);
  for (const m of missing) jobs.push({ feedId: feedOf(m.feed, m.version)!.id, zone: m.zone_id, hour: formatHour(m.hour) });
  // history before the look-back: each (zone, feed) mark moves over what is published, scanning
  // four times the hours it may queue (so a stretch already published is crossed quickly), and at
  // most PUBLISH_CATCHUP_HOURS_PER_TICK hours are queued per tick, oldest first
  const perTick = ctx.config.publishCatchupHoursPerTick;
  if (perTick > 0) {
    const older = await ctx.db.many(sql('PubCatchupScan'), [
      feeds.map((f) => f.feed),
      feeds.map((f) => f.version),
      perTick * 4,
      hourParam(from),
      perTick * feeds.length,
    ]);
    for (const m of older) jobs.push({ feedId: feedOf(m.feed, m.version)!.id, zone: m.zone_id, hour: formatHour(m.hour), catchup: true });
  }
  await releaseDelayedTelemetry(ctx, now);
  const again = await ctx.db.many(sql('PubNeedsRepublish'), [now, limit]);
  for (const r of again) {
    const f = feedOf(r.feed, r.version);
    if (f && feeds.includes(f)) jobs.push({ feedId: f.id, zone: r.scope, hour: formatHour(r.hour) });
  }
  return jobs;
}
