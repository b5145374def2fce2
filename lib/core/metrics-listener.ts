/**
 * The Prometheus metrics listener of a process, shared by both: the API's on
 * METRICS_HOST:METRICS_PORT (api/app.ts buildMetricsApp, in its request envelope) and a publisher's
 * on METRICS_HOST:PUBLISHER_METRICS_PORT (bin/publisher.ts, bin/run.ts's publisher child), loopback
 * by default. GET /metrics answers the process's registry (lib/core/metrics.ts, or a view of it) in the
 * text exposition format; any other path is 404. Each process scrapes its own figures: prom-client
 * keeps one registry per process.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import client, { type Registry } from 'prom-client';
import type { Logger } from './log.js';

/** The handler of GET /metrics: `registry` now, its database gauges read at this scrape. */
export function serveMetrics(registry: Registry): Koa.Middleware {
  return async (koa) => {
    koa.type = registry.contentType;
    koa.body = await registry.metrics();
  };
}

/** The routes of a metrics listener: GET /metrics, nothing else. */
function metricsRoutes(registry: Registry): Koa.Middleware {
  const router = new Router();
  router.get('/metrics', serveMetrics(registry));
  return router.routes() as Koa.Middleware;
}

/**
 * A metrics listener's app: `outer` (the API's request envelope) around metricsRoutes. An error no
 * middleware answered (a scrape that failed) is Koa's bare 500 and one line on `log`.
 */
export function buildMetricsListener(registry: Registry, log: Logger, outer: readonly Koa.Middleware[] = []): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.on('error', (err: Error) => log.error({ err: err.message }, 'metrics scrape failed'));
  for (const m of outer) app.use(m);
  app.use(metricsRoutes(registry));
  return app;
}

/**
 * A registry that serves every metric of `source` but those named in `without`: the same metric
 * objects (their values and scrape-time collects are shared), a narrower /metrics. A name `source`
 * does not hold is a mistake that fails at once, not a metric silently served.
 */
export function registryWithout(source: Registry, without: readonly string[]): Registry {
  for (const name of without) if (!source.getSingleMetric(name)) throw new Error(`registryWithout: no metric named ${name}`);
  const view = new client.Registry();
  for (const { name } of source.getMetricsAsArray()) {
    if (!without.includes(name)) view.registerMetric(source.getSingleMetric(name)!);
  }
  return view;
}

/** The /metrics URL of a listening metrics server: its address and the port it got (a free one when configured 0). */
export function metricsUrl(server: Server): string {
  const { address, port, family } = server.address() as AddressInfo;
  return `http://${family === 'IPv6' ? `[${address}]` : address}:${port}/metrics`;
}
