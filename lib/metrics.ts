/**
 * Prometheus metrics (prom-client), one registry per process. Families increment the counters
 * named here rather than creating their own, so /metrics documents the whole platform in one place.
 */
import client from 'prom-client';
import type { Db } from './db.js';
import { replayLagBytes } from './replica.js';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

const mk = {
  counter: (name: string, help: string, labelNames: string[] = []) => new client.Counter({ name, help, labelNames, registers: [registry] }),
  gauge: (name: string, help: string, labelNames: string[] = []) => new client.Gauge({ name, help, labelNames, registers: [registry] }),
  histogram: (name: string, help: string, labelNames: string[], buckets: number[]) =>
    new client.Histogram({ name, help, labelNames, buckets, registers: [registry] }),
};

export const metrics = {
  httpRequests: mk.counter('http_requests_total', 'HTTP requests by host, route and status', ['host', 'method', 'route', 'status']),
  httpDuration: mk.histogram(
    'http_request_duration_seconds',
    'HTTP request latency',
    ['host', 'method', 'route', 'status'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  ),
  rentalsStarted: mk.counter('rentals_started_total', 'Rentals started', ['source']),
  rentalsRunning: mk.gauge('rentals_running', 'Rentals running now (read from Postgres at scrape time)'),
  rentalsEnded: mk.counter('rentals_ended_total', 'Rentals ended by final state', ['state']),
  rentalStartFailures: mk.counter('rental_start_failures_total', 'Rental starts refused or failed by error code', ['code']),
  photoDecisions: mk.counter('photo_decisions_total', 'Parking photo decisions', ['decision']),
  tokensIssued: mk.counter('oauth_tokens_issued_total', 'OAuth access tokens issued', ['role']),
  tokenFailures: mk.counter('oauth_token_failures_total', 'OAuth token requests refused', ['error']),
  rateLimited: mk.counter('rate_limit_rejections_total', 'Requests refused by the rate limit', ['family']),
  shed: mk.counter('http_requests_shed_total', 'Requests refused with 503 by admission control (lib/http/admission.ts)', ['family']),
  publishDuration: mk.histogram(
    'feed_publish_duration_seconds',
    'Time to publish one feed file',
    ['feed', 'version'],
    [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60],
  ),
  publishLag: mk.gauge('feed_publish_lag_seconds', 'Seconds between an hour closing and its publication (last published)', ['feed', 'version']),
  publishFailures: mk.counter('feed_publish_failures_total', 'Failed publish attempts', ['feed', 'version']),
  dirtyHours: mk.gauge('feed_dirty_hours', 'Published hours waiting for republication'),
  queueDepth: mk.gauge('jobs_queue_depth', 'Queued jobs per queue', ['queue']),
  jobFailures: mk.gauge('jobs_failed', 'Jobs in state failed per queue (pg-boss keeps them for inspection)', ['queue']),
  storeErrors: mk.counter('store_errors_total', 'Object store errors by operation', ['op']),
  historyPartitions: mk.gauge('history_partitions', 'Daily partitions held per history table (publisher/jobs/history.ts)', ['table']),
  historyBytes: mk.gauge('history_bytes', 'Bytes of each history table, indexes included', ['table']),
  historyOldestDay: mk.gauge('history_oldest_day_seconds', 'Unix time of the oldest UTC day held per history table', ['table']),
  historyDroppedBefore: mk.gauge('history_dropped_before_seconds', 'Unix time before which a history table was dropped by retention (0 = nothing dropped)', [
    'table',
  ]),
  replicaLag: mk.gauge(
    'db_replica_replay_lag_bytes',
    "Bytes of the primary's WAL the streaming replica (DATABASE_REPLICA_URL) has not replayed yet (0 without one; NaN when either server does not answer)",
  ),
};

/**
 * Gauges read from Postgres at scrape time (one small query each), so every process reports the
 * cluster-wide value: dirty hours, publish lag per feed, pg-boss queue depth and failed jobs, what
 * each history table retains (history_*), and how far the streaming replica is behind.
 */
/**
 * Has `collect` run at each scrape of `gauge`: prom-client calls a metric's `collect` before reading
 * it, but types it only as a constructor option, and these gauges exist before the database does.
 */
function onScrape(gauge: client.Gauge, collect: () => Promise<void>): void {
  Object.assign(gauge, { collect });
}

export function registerDbCollectors(db: Db): void {
  const safe = async (fn: () => Promise<void>) => {
    try {
      await fn();
    } catch {
      // a scrape during a database outage reports the last values rather than failing /metrics
    }
  };
  onScrape(metrics.dirtyHours, () =>
    safe(async () => {
      const [r] = await db.many<{ n: number }>('SELECT count(*)::int AS n FROM feed_publications WHERE dirty');
      metrics.dirtyHours.set(r?.n ?? 0);
    }),
  );
  onScrape(metrics.publishLag, () =>
    safe(async () => {
      // per file of the catalogue (hourly_feeds, synced from HOURLY_FEEDS), the latest published row:
      // a backward walk of feed_publications_hour_scope from the newest hour, not a sort of every
      // hour ever published
      const rows = await db.many<{ feed: string; version: string; lag: number }>(`SELECT f.feed, f.version, l.lag
                                    FROM hourly_feeds f
                                    JOIN LATERAL (SELECT extract(epoch FROM p.published_at - (p.hour + interval '1 hour') AT TIME ZONE 'UTC')::float8 AS lag
                                                    FROM feed_publications p
                                                   WHERE p.feed = f.feed AND p.version = f.version AND p.status = 'published' AND p.published_at IS NOT NULL
                                                   ORDER BY p.hour DESC LIMIT 1) l ON true`);
      for (const r of rows) metrics.publishLag.set({ feed: r.feed, version: r.version }, r.lag);
    }),
  );
  // the four history gauges come from one catalogue query, shared by their collects of one scrape
  let historyScrape: Promise<void> | undefined;
  const collectHistory = () =>
    (historyScrape ??= safe(async () => {
      // one catalogue query: partitions per history table with their day and size (sql/queries/history.sql)
      const rows = await db.many<{
        parent: string;
        partitions: number;
        oldest: number | null;
        bytes: number | null;
        dropped_before: number | null;
      }>(`SELECT p.relname AS parent,
                                         count(*) FILTER (WHERE c.relname ~ '_p[0-9]{8}$')::int AS partitions,
                                         extract(epoch FROM min(to_date(right(c.relname, 8), 'YYYYMMDD')) FILTER (WHERE c.relname ~ '_p[0-9]{8}$')::timestamp)::float8 AS oldest,
                                         sum(pg_total_relation_size(c.oid))::float8 AS bytes,
                                         (SELECT extract(epoch FROM dropped_before)::float8 FROM history_retention r WHERE r.source = p.relname) AS dropped_before
                                    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
                                   WHERE p.relname IN ('events', 'telemetry', 'trips') AND p.relnamespace = 'public'::regnamespace
                                   GROUP BY p.relname`);
      for (const r of rows) {
        metrics.historyPartitions.set({ table: r.parent }, r.partitions);
        metrics.historyBytes.set({ table: r.parent }, r.bytes ?? 0);
        metrics.historyOldestDay.set({ table: r.parent }, r.oldest ?? 0);
        metrics.historyDroppedBefore.set({ table: r.parent }, r.dropped_before ?? 0);
      }
    }).finally(() => {
      historyScrape = undefined;
    }));
  for (const g of [metrics.historyPartitions, metrics.historyBytes, metrics.historyOldestDay, metrics.historyDroppedBefore]) onScrape(g, collectHistory);
  onScrape(metrics.replicaLag, async () => {
    // the primary's WAL position, then the replica's replay position against it (lib/replica.ts); when
    // either does not answer the lag is unknown, and its last value would hide a replica gone astray
    try {
      metrics.replicaLag.set(await replayLagBytes(db));
    } catch {
      metrics.replicaLag.set(Number.NaN);
    }
  });
  onScrape(metrics.rentalsRunning, () =>
    safe(async () => {
      const [r] = await db.many<{ n: number }>(`SELECT count(*)::int AS n FROM rentals WHERE state = 'RUNNING'`);
      metrics.rentalsRunning.set(r?.n ?? 0);
    }),
  );
  onScrape(metrics.queueDepth, () =>
    safe(async () => {
      const rows = await db.many<{
        name: string;
        queued: number;
        failed: number;
      }>(`SELECT name, count(*) FILTER (WHERE state IN ('created', 'retry'))::int AS queued,
                                         count(*) FILTER (WHERE state = 'failed')::int AS failed
                                    FROM pgboss.job GROUP BY name`);
      for (const r of rows) {
        metrics.queueDepth.set({ queue: r.name }, r.queued);
        metrics.jobFailures.set({ queue: r.name }, r.failed);
      }
    }),
  );
}
