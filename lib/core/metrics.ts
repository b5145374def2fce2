/**
 * Prometheus metrics (prom-client), one registry per process. Families increment the counters
 * named here rather than creating their own, so /metrics documents the whole platform in one place.
 */
import client from 'prom-client';
import type { Db } from './db.js';
import { replayLagBytes } from './replica.js';
import { sql } from './sql/typed.js';
import { cacheReport, CACHES } from './cache.js';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

const mk = {
  counter: (name: string, help: string, labelNames: string[] = []) => new client.Counter({ name, help, labelNames, registers: [registry] }),
  gauge: (name: string, help: string, labelNames: string[] = []) => new client.Gauge({ name, help, labelNames, registers: [registry] }),
  histogram: (name: string, help: string, labelNames: string[], buckets: number[]) =>
    new client.Histogram({ name, help, labelNames, buckets, registers: [registry] }),
};

/**
 * The series only an API process records (requests, admission, rate limits, tokens, rental starts,
 * photo decisions) or that report the API's business (rentals running): declared with each metric
 * (`api(…)` below), and left out of a publisher's /metrics (publisher/index.ts), which would serve
 * them empty or as a second copy of a gauge the API serves.
 */
const apiOnly: string[] = [];
const api = <M extends client.Metric>(m: M): M => {
  apiOnly.push((m as unknown as { name: string }).name);
  return m;
};

/**
 * The kinds of published object, one per index of publisher/publication/indexes.ts: hourly files (MDS and
 * insurance), GBFS files, monthly reports. The `kind` of the store_* series the sink counts.
 */
export const STORE_KINDS = ['hourly', 'gbfs', 'report'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export const metrics = {
  httpRequests: api(mk.counter('http_requests_total', 'HTTP requests by host, route and status', ['host', 'method', 'route', 'status'])),
  httpDuration: api(
    mk.histogram(
      'http_request_duration_seconds',
      'HTTP request latency',
      ['host', 'method', 'route', 'status'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    ),
  ),
  rentalsStarted: api(mk.counter('rentals_started_total', 'Rentals started', ['source'])),
  rentalsRunning: api(mk.gauge('rentals_running', 'Rentals running now (read from Postgres at scrape time)')),
  rentalsEnded: mk.counter('rentals_ended_total', 'Rentals ended by final state', ['state']),
  rentalStartFailures: api(mk.counter('rental_start_failures_total', 'Rental starts refused or failed by error code', ['code'])),
  photoDecisions: api(mk.counter('photo_decisions_total', 'Parking photo decisions', ['decision'])),
  tokensIssued: api(mk.counter('oauth_tokens_issued_total', 'OAuth access tokens issued', ['role'])),
  tokenFailures: api(mk.counter('oauth_token_failures_total', 'OAuth token requests refused', ['error'])),
  rateLimited: api(mk.counter('rate_limit_rejections_total', 'Requests refused by the rate limit', ['family'])),
  shed: api(mk.counter('http_requests_shed_total', 'Requests refused with 503 by admission control (api/kit/admission.ts)', ['family'])),
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
  // the vehicle ingest (ingest/): every report counted once by what became of it
  ingestReports: mk.counter(
    'ingest_reports_total',
    'Vehicle reports the ingest received, by channel (telemetry, state) and outcome (stored; duplicate: a redelivery already stored; stale: older than the state already applied; rejected: see ingest_rejected_total)',
    ['channel', 'outcome'],
  ),
  ingestRejected: mk.counter(
    'ingest_rejected_total',
    'Vehicle reports the ingest refused and dropped, by reason (topic, malformed_json, schema, impossible_position, future, too_old, flood, unknown_vehicle)',
    ['reason'],
  ),
  ingestBatchSeconds: mk.histogram(
    'ingest_batch_seconds',
    'Time to write one batch of vehicle reports (its transaction)',
    [],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  ),
  ingestBatchFailures: mk.counter(
    'ingest_batch_failures_total',
    'Batches whose transaction failed and was tried again (nothing acknowledged until it commits)',
  ),
  ingestImpliedEvents: mk.counter('ingest_implied_events_total', "MDS events the ingest derived from vehicles' own reports, by event type", ['event']),
  ingestReportAge: mk.histogram(
    'ingest_report_age_seconds',
    "From a report's ts to its commit: how far behind the vehicles the stored state is",
    [],
    [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600],
  ),
  storeErrors: mk.counter('store_errors_total', 'Object store errors by operation', ['op']),
  storeObjectsWritten: mk.counter(
    'store_objects_written_total',
    'Objects this process wrote to the object store through the publication sink (publisher/publication/sink.ts), by kind (hourly, gbfs, report)',
    ['kind'],
  ),
  storeBytesWritten: mk.counter('store_bytes_written_total', 'Bytes of the objects in store_objects_written_total as stored (gzip), by kind', ['kind']),
  storeWritesSkipped: mk.counter(
    'store_writes_skipped_total',
    'Objects the publication sink did not write because the store holds the same bytes at the same key, by kind (a GBFS file left alone because its data did not change is decided before the sink and not counted)',
    ['kind'],
  ),
  historyPartitions: mk.gauge('history_partitions', 'Daily partitions held per history table (publisher/jobs/history.ts)', ['table']),
  historyBytes: mk.gauge('history_bytes', 'Bytes of each history table, indexes included', ['table']),
  historyOldestDay: mk.gauge('history_oldest_day_seconds', 'Unix time of the oldest UTC day held per history table', ['table']),
  historyDroppedBefore: mk.gauge('history_dropped_before_seconds', 'Unix time before which a history table was dropped by retention (0 = nothing dropped)', [
    'table',
  ]),
  gbfsJobDuration: mk.histogram(
    'gbfs_job_duration_seconds',
    'Time of one GBFS job in this process, by kind (zone, scope) and the work it did (none, refresh, build, busy, assemble, failed); a zone job built in a batch: its own work and an equal share of the batch statements',
    ['kind', 'work'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
  ),
  cityPolicyReads: mk.counter(
    'city_policy_reads_total',
    "Reads of the cities' Policy and Geography documents this process made (publisher/policy/read.ts), by outcome (ok, not-modified, invalid, unreachable)",
    ['outcome'],
  ),
  cityPolicySpeedCommands: mk.counter(
    'city_policy_speed_commands_total',
    'set_speed commands this process sent for city speed rules and normal limits restored (publisher/policy/speed.ts), by outcome (acknowledged, unacknowledged)',
    ['outcome'],
  ),
  cityPolicyRules: mk.gauge('city_policy_rules', "The cities' rules per zone, by what they map to and whether they are in force (compliance view)", [
    'zone',
    'mapping',
    'in_force',
  ]),
  cityPolicyUnacknowledged: mk.gauge('city_policy_speed_unacknowledged', 'Vehicles per zone not (yet) at the speed limit a city rule or its end asks for', [
    'zone',
  ]),
  cityPolicyFleetCap: mk.gauge(
    'city_policy_alert_vehicles',
    "Per zone and rule of a city's fleet-cap or parking-time alert: the vehicles it counts (in the cap's area and states, or parked past the limit)",
    ['zone', 'policy_id', 'rule_id', 'mapping'],
  ),
  cityPolicyAlertLimit: mk.gauge(
    'city_policy_alert_limit',
    'The maximum of a fleet-cap or parking-time alert rule (its units: devices, or the rule_units of time)',
    ['zone', 'policy_id', 'rule_id', 'mapping'],
  ),
  cityPolicyReadAge: mk.gauge(
    'city_policy_last_read_age_seconds',
    "Seconds since each zone's city Policy source was last read, by the status of that read (ok, not-modified, invalid, unreachable)",
    ['zone', 'status'],
  ),
  jobsRun: mk.counter('jobs_run_total', 'pg-boss jobs this process ran, by queue and outcome (done, failed)', ['queue', 'outcome']),
  replicaLag: mk.gauge(
    'db_replica_replay_lag_bytes',
    "Bytes of the primary's WAL the streaming replica (DATABASE_REPLICA_URL) has not replayed yet (0 without one; NaN when either server does not answer)",
  ),
};

// every kind's series from the start, at 0: a rate over a process that has written nothing yet is 0, not absent
for (const kind of STORE_KINDS) for (const c of [metrics.storeObjectsWritten, metrics.storeBytesWritten, metrics.storeWritesSkipped]) c.inc({ kind }, 0);

/**
 * The named caches (lib/core/cache.ts), read from their counts at scrape time: entries and bytes
 * held now, hits, misses and evictions so far, each by `cache` (the names and what they hold:
 * CACHES), for the names this process has made a cache of.
 */
const cacheHelp = ` (cache: ${Object.keys(CACHES).join(', ')}; lib/core/cache.ts)`;
type CacheRow = ReturnType<typeof cacheReport>[number];
/** a series whose every value is set from the caches' report when it is scraped */
function fromCaches(metric: client.Counter | client.Gauge, value: (r: CacheRow) => number | undefined): void {
  const put = metric instanceof client.Gauge ? (l: { cache: string }, v: number) => metric.set(l, v) : (l: { cache: string }, v: number) => metric.inc(l, v);
  Object.assign(metric, {
    collect() {
      metric.reset();
      for (const r of cacheReport()) {
        const v = value(r);
        if (v !== undefined) put({ cache: r.name }, v);
      }
    },
  });
}
fromCaches(mk.gauge('cache_entries', `Entries held by the in-memory caches${cacheHelp}`, ['cache']), (r) => r.entries);
fromCaches(mk.gauge('cache_size_bytes', `Bytes held by the caches bounded in bytes${cacheHelp}`, ['cache']), (r) => r.bytes);
fromCaches(mk.counter('cache_hits_total', `Reads a cache answered${cacheHelp}`, ['cache']), (r) => r.hits);
fromCaches(mk.counter('cache_misses_total', `Reads a cache could not answer${cacheHelp}`, ['cache']), (r) => r.misses);
fromCaches(mk.counter('cache_evictions_total', `Entries a cache pushed out to stay within its bound${cacheHelp}`, ['cache']), (r) => r.evictions);

/** The names of the API-only series (see `api` above). */
export const API_ONLY_METRICS: readonly string[] = apiOnly;

/**
 * Has `collect` run at each scrape of `gauge`: prom-client calls a metric's `collect` before reading
 * it, but types it only as a constructor option, and these gauges exist before the database does.
 */
function onScrape(gauge: client.Gauge, collect: () => Promise<void>): void {
  Object.assign(gauge, { collect });
}

/**
 * Gauges read from Postgres at scrape time (one small query each, sql/queries/metrics.sql), so every
 * process reports the cluster-wide value: dirty hours, publish lag per feed, pg-boss queue depth and
 * failed jobs, what each history table retains (history_*), and how far the streaming replica is behind.
 */
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
      metrics.dirtyHours.set((await db.one(sql('MetricsDirtyHours'))).n);
    }),
  );
  onScrape(metrics.publishLag, () =>
    safe(async () => {
      for (const r of await db.many(sql('MetricsPublishLag'))) metrics.publishLag.set({ feed: r.feed, version: r.version }, r.lag);
    }),
  );
  // the four history gauges come from one catalogue query, shared by their collects of one scrape
  let historyScrape: Promise<void> | undefined;
  const collectHistory = () =>
    (historyScrape ??= safe(async () => {
      for (const r of await db.many(sql('MetricsHistoryTables'))) {
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
    // the primary's WAL position, then the replica's replay position against it (lib/core/replica.ts); when
    // either does not answer the lag is unknown, and its last value would hide a replica gone astray
    try {
      metrics.replicaLag.set(await replayLagBytes(db));
    } catch {
      metrics.replicaLag.set(Number.NaN);
    }
  });
  onScrape(metrics.rentalsRunning, () =>
    safe(async () => {
      metrics.rentalsRunning.set((await db.one(sql('MetricsRentalsRunning'))).n);
    }),
  );
  // the compliance view's figures (lib/domain/policy/sources.ts), one read for the five gauges of a scrape
  let policyScrape: Promise<void> | undefined;
  const policyGauges = [
    metrics.cityPolicyRules,
    metrics.cityPolicyUnacknowledged,
    metrics.cityPolicyFleetCap,
    metrics.cityPolicyAlertLimit,
    metrics.cityPolicyReadAge,
  ];
  const collectPolicy = () =>
    (policyScrape ??= safe(async () => {
      const now = new Date();
      const [sources, rules] = await Promise.all([db.many(sql('PolicyComplianceSources'), [null]), db.many(sql('PolicyComplianceRules'), [null, now])]);
      for (const g of policyGauges) g.reset();
      for (const s of sources)
        if (s.read_at) metrics.cityPolicyReadAge.set({ zone: s.zone_id, status: s.read_status ?? 'none' }, (now.getTime() - s.read_at.getTime()) / 1000);
      const counts = new Map<string, number>();
      const unacked = new Map<string, number>();
      for (const r of rules) {
        const key = `${r.zone_id}\0${r.mapping}\0${r.in_force}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        unacked.set(r.zone_id, (unacked.get(r.zone_id) ?? 0) + r.unacknowledged);
        if (r.figure !== null && r.in_force) {
          const labels = { zone: r.zone_id, policy_id: r.policy_id, rule_id: r.rule_id, mapping: r.mapping };
          metrics.cityPolicyFleetCap.set(labels, r.figure);
          if (r.maximum !== null) metrics.cityPolicyAlertLimit.set(labels, r.maximum);
        }
      }
      for (const [key, n] of counts) {
        const [zone, mapping, inForce] = key.split('\0');
        metrics.cityPolicyRules.set({ zone, mapping, in_force: inForce }, n);
      }
      for (const [zone, n] of unacked) metrics.cityPolicyUnacknowledged.set({ zone }, n);
    }).finally(() => {
      policyScrape = undefined;
    }));
  for (const g of policyGauges) onScrape(g, collectPolicy);
  onScrape(metrics.queueDepth, () =>
    safe(async () => {
      for (const r of await db.many(sql('MetricsQueueDepth'))) {
        metrics.queueDepth.set({ queue: r.name }, r.queued);
        metrics.jobFailures.set({ queue: r.name }, r.failed);
      }
    }),
  );
}
