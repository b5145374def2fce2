/**
 * publishHourSet with its Prometheus figures: time per file set, failures per feed. One place, used
 * by the queue worker and by backfill alike.
 */
import type { AppContext } from '../lib/domain/context.js';
import type { HourlyFeed } from '../lib/feeds/publications.js';
import { metrics } from '../lib/core/metrics.js';
import { publishHourSet, type HourFileResult } from './publish.js';

export async function publishSetWithMetrics(
  ctx: AppContext,
  zoneId: string,
  hour: Date,
  feeds: readonly HourlyFeed[],
  opts: { force?: boolean } = {},
): Promise<HourFileResult[]> {
  const started = performance.now();
  const results = await publishHourSet(ctx, zoneId, hour, { feeds, ...opts });
  const seconds = (performance.now() - started) / 1000;
  for (const f of feeds) {
    const r = results.find((x) => x.feed === f.id);
    metrics.publishDuration.observe({ feed: f.feed, version: f.version }, seconds / feeds.length);
    if (!r || r.outcome === 'failed') metrics.publishFailures.inc({ feed: f.feed, version: f.version });
  }
  return results;
}
