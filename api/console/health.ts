/**
 * The console's Health figures, read from the prom-client registry that /metrics exports
 * (lib/core/metrics.ts), so the page and a Prometheus scrape show the same numbers: rentals running,
 * requests and 5xx errors per API family (totals; the page turns two readings into rates), publish
 * lag per feed, queue depth per queue and store errors per operation.
 */
import { registry } from '../../lib/core/metrics.js';

/** The API family of a request by its host and route pattern (the http_requests_total labels). */
function familyOf(host: string, route: string): string {
  if (host === 'legacy') return 'legacy';
  if (route.startsWith('/v1/partner-apis') || route.startsWith('/gbfs')) return 'feeds';
  if (route.startsWith('/edge/tomp')) return 'tomp';
  if (route.startsWith('/console')) return 'console';
  if (/^\/v[12]\//.test(route)) return 'partner';
  return 'ops';
}

export interface HealthFigures {
  at: number;
  rentals_running: number;
  families: Record<string, { requests: number; errors: number }>;
  publish_lag_seconds: Array<{ feed: string; version: string; seconds: number }>;
  queue_depth: Array<{ queue: string; queued: number }>;
  store_errors: Array<{ op: string; errors: number }>;
}

export async function healthFigures(): Promise<HealthFigures> {
  const byName = new Map(
    (await registry.getMetricsAsJSON()).map((m) => [m.name, m.values as Array<{ value: number; labels: Record<string, string | number> }>]),
  );
  const values = (name: string) => byName.get(name) ?? [];
  const families: HealthFigures['families'] = {};
  for (const v of values('http_requests_total')) {
    const f = (families[familyOf(String(v.labels.host ?? ''), String(v.labels.route ?? ''))] ??= { requests: 0, errors: 0 });
    f.requests += v.value;
    if (Number(v.labels.status) >= 500) f.errors += v.value;
  }
  return {
    at: Date.now(),
    rentals_running: values('rentals_running')[0]?.value ?? 0,
    families,
    publish_lag_seconds: values('feed_publish_lag_seconds').map((v) => ({ feed: String(v.labels.feed), version: String(v.labels.version), seconds: v.value })),
    queue_depth: values('jobs_queue_depth').map((v) => ({ queue: String(v.labels.queue), queued: v.value })),
    store_errors: values('store_errors_total').map((v) => ({ op: String(v.labels.op), errors: v.value })),
  };
}
