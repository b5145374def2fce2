/**
 * The one outage rule (api/kit/outage.ts) in every API family: a statement cancelled by its
 * timeout (here: a real one, waiting for a table another transaction holds locked) is a 503 with
 * Retry-After in the family's own error format, never a 500; the OAuth token endpoint answers
 * RFC 6749's temporarily_unavailable.
 */
import { expect } from 'chai';
import pg from 'pg';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import type { AppContext } from '../lib/domain/context.js';
import { Db } from '../lib/core/db.js';
import { TOMP_PREFIX } from '../api/tomp/router.js';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../api/kit/outage.js';
import { seedDemo } from '../ops/seed/index.js';
import { useTestContext } from './support/context.js';
import { tokenFor } from './support/feed-auth.js';

describe('outage rule: a statement timeout is a 503 with Retry-After in every family', function () {
  this.timeout(60_000);
  const t = useTestContext();
  let ctx: AppContext;
  let locker: pg.Client;
  let app: ReturnType<typeof request>;
  let city: string;

  before(async () => {
    await seedDemo(t.ctx, { vehiclesPerZone: 5 });
    city = `Bearer ${await tokenFor(t.ctx, 'outage-city', 'city')}`;
    // the app's own pool with a short statement timeout; another connection holds the tables
    ctx = { ...t.ctx, db: new Db(t.database.url, t.ctx.log, { max: 5, statementTimeoutMs: 300 }) };
    app = request(buildApp(ctx).callback());
    // warm the caches that read before the locked tables (keys, zones of the feeds)
    await app.get('/v1/vehicles?zoneID=berlin').set('X-Auth-Token', 'demo-partner-key');
    await app.get('/v1/partner-apis/mds/berlin/vehicles').set('Authorization', city);
    locker = new pg.Client({ connectionString: t.database.url });
    // the test database may be dropped first (useTestContext's hook), ending this connection
    locker.on('error', () => undefined);
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE vehicles, zones, zone_versions, feed_clients IN ACCESS EXCLUSIVE MODE');
  });

  after(async () => {
    await locker?.query('ROLLBACK').catch(() => undefined);
    await locker?.end();
    await ctx?.db.close();
  });

  const retryAfter = (res: request.Response) => expect(res.headers['retry-after']).to.equal(String(OUTAGE_RETRY_AFTER_SECONDS));

  it('partner API: 503 ServiceUnavailable (JSON:API errors)', async () => {
    const res = await app.get('/v1/vehicles?zoneID=berlin').set('X-Auth-Token', 'demo-partner-key');
    expect(res.status, res.text).to.equal(503);
    retryAfter(res);
    expect(res.body.errors[0]).to.include({ status: '503', code: 'ServiceUnavailable' });
  });

  it('TOMP: 503 in its error format', async () => {
    const res = await app
      .get(`${TOMP_PREFIX}/operator/regions`)
      .set('X-Access-Token', 'demo-maas-key')
      .set('Accept-Language', 'en')
      .set('Api', 'TOMP')
      .set('Api-Version', '1.6.1');
    expect(res.status, res.text).to.equal(503);
    retryAfter(res);
    expect(res.body).to.include({ status: 503 }).and.to.have.property('detail');
  });

  it('feeds (MDS 2.0): 503 service_unavailable', async () => {
    const res = await app.get('/v1/partner-apis/mds/berlin/vehicles').set('Authorization', city);
    expect(res.status, res.text).to.equal(503);
    retryAfter(res);
    expect(res.body.error).to.equal('service_unavailable');
  });

  it('OAuth token endpoint: 503 temporarily_unavailable', async () => {
    const res = await app.post('/v1/partner-apis/token').auth('demo-city', 'demo-city-secret').type('form').send({ grant_type: 'client_credentials' });
    expect(res.status, res.text).to.equal(503);
    retryAfter(res);
    expect(res.body.error).to.equal('temporarily_unavailable');
  });
});
