import { expect } from 'chai';
import request from 'supertest';
import { useTestContext } from './support/context.js';
import { buildApp, buildLegacyApp, buildMetricsApp } from '../api/app.js';
import { testConfig } from '../lib/core/config.js';
import { registerDbCollectors } from '../lib/core/metrics.js';

describe('health, readiness and metrics', () => {
  const t = useTestContext();

  it('/healthz answers while the process lives; /readyz checks database, migrations and store', async () => {
    const app = buildApp(t.ctx).callback();
    expect((await request(app).get('/healthz')).body).to.deep.equal({ status: 'ok' });
    const ready = await request(app).get('/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body.checks).to.deep.equal({ database: 'ok', migrations: 'ok', store: 'ok' });
  });

  it('/readyz is 503 when the store is unreachable', async () => {
    const broken = { ...t.ctx, store: { ...t.ctx.store, check: () => Promise.reject(new Error('down')) } };
    const res = await request(buildApp(broken).callback()).get('/readyz');
    expect(res.status).to.equal(503);
    expect(res.body.checks.store).to.equal('unreachable');
  });

  it('/metrics exposes request counts by route pattern, platform counters and database gauges', async () => {
    registerDbCollectors(t.ctx.db);
    await t.ctx.db.query(`INSERT INTO zones (id, name, city, country, timezone, currency, vat_rate, parking_mode, boundary)
      VALUES ('mz', 'M', 'M', 'DE', 'Europe/Berlin', 'EUR', 0.19, 'free-floating', ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 1,0 0)))', 4326))`);
    await t.ctx.db.query(`INSERT INTO feed_publications (feed, version, scope, hour, object_key, sha256, record_count, dirty)
      VALUES ('mds_trips', '2.0', 'mz', '2026-01-01T00:00:00', 'k', 's', 0, true)`);
    const app = buildApp(t.ctx).callback();
    await request(app).get('/v1/user/id/not-a-uuid');
    const res = await request(buildMetricsApp(t.ctx).callback()).get('/metrics');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/text\/plain/);
    for (const name of [
      'http_requests_total',
      'http_request_duration_seconds',
      'rentals_started_total',
      'rentals_ended_total',
      'photo_decisions_total',
      'oauth_tokens_issued_total',
      'oauth_token_failures_total',
      'rate_limit_rejections_total',
      'feed_publish_duration_seconds',
      'feed_publish_lag_seconds',
      'feed_dirty_hours',
      'jobs_queue_depth',
      'store_errors_total',
    ]) {
      expect(res.text, name).to.contain(`# TYPE ${name}`);
    }
    expect(res.text).to.match(/feed_dirty_hours 1\b/);
    // ids never become label values: the route pattern does
    expect(res.text).not.to.contain('not-a-uuid');
  });

  it('/metrics is not public: 404 on the public hosts without METRICS_TOKEN, 401 without its bearer with it', async () => {
    const main = request(buildApp(t.ctx).callback());
    for (const path of ['/metrics', '/metrics/', '/METRICS']) expect((await main.get(path)).status, path).to.equal(404);
    expect((await main.get('/metrics').set('Authorization', 'Bearer anything')).status).to.equal(404);
    expect((await request(buildLegacyApp(t.ctx).callback()).get('/metrics')).status).to.be.oneOf([404, 406]);
    // the metrics listener serves them; it binds METRICS_HOST, loopback unless configured otherwise
    expect(t.ctx.config.metrics.host).to.equal('127.0.0.1');
    expect((await request(buildMetricsApp(t.ctx).callback()).get('/metrics')).status).to.equal(200);
    expect((await request(buildMetricsApp(t.ctx).callback()).get('/healthz')).status).to.equal(404);

    const token = 'metrics-token-0123456789';
    const guarded = request(
      buildApp({ ...t.ctx, config: testConfig({ ...process.env, DATABASE_URL: t.ctx.config.databaseUrl, METRICS_TOKEN: token }) }).callback(),
    );
    const none = await guarded.get('/metrics');
    expect(none.status).to.equal(401);
    expect(none.headers['www-authenticate']).to.equal('Bearer realm="metrics"');
    expect(none.text).not.to.contain('http_requests_total');
    for (const auth of [`Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, token, `Basic ${token}`]) {
      expect((await guarded.get('/metrics').set('Authorization', auth)).status, auth).to.equal(401);
    }
    const ok = await guarded.get('/metrics').set('Authorization', `Bearer ${token}`);
    expect(ok.status).to.equal(200);
    expect(ok.text).to.contain('# TYPE http_requests_total');
  });
});
