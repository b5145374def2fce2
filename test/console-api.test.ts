/**
 * The console's API (api/console/router.ts): an ops key opens it (X-Access-Token, X-Auth-Token or
 * Bearer), nothing else does (401 in the feeds' error format), the publishing figures are
 * publish-status's own, a republish is queued for the publishers and answered at once with what was
 * queued, and the credentials listing never carries a secret.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { createFeedClient, createKey } from '../ops/admin/credentials.js';
import { importZone } from '../ops/admin/zones.js';
import { formatHour, floorHour } from '../lib/feeds/hours.js';
import { publicationStatus } from '../lib/publication/status.js';
import { HOUR_QUEUE, RepublishQueuedSchema } from '../lib/publication/queue.js';
import { compile } from '../lib/core/validate.js';
import { startPublisher } from '../publisher/index.js';
import { registerDbCollectors } from '../lib/core/metrics.js';
import { useTestContext } from './support/context.js';

describe('console API: ops key and figures', () => {
  const t = useTestContext();
  let ops: string;
  let partner: string;

  before(async () => {
    ops = (await createKey(t.ctx.db, 'Operations', 'ops')).key;
    partner = (await createKey(t.ctx.db, 'Acme Rides', 'partner')).key;
    await createFeedClient(t.ctx.db, 'city-console', 'city', null);
  });

  it('refuses without an ops key: 401 in the feeds error format; a key of another API is a 403 that names it', async () => {
    const app = request(buildApp(t.ctx).callback());
    for (const headers of [{ 'X-Access-Token': partner }, { Authorization: `Bearer ${partner}` }] as Record<string, string>[]) {
      const res = await app.get('/console/api/credentials').set(headers);
      expect(res.status, JSON.stringify(headers)).to.equal(403);
      expect(res.body.error_description).to.contain('the partner rental API');
    }
    for (const headers of [{}, { Authorization: 'Bearer nope-nope-nope' }] as Record<string, string>[]) {
      const res = await app.get('/console/api/credentials').set(headers);
      expect(res.status, JSON.stringify(headers)).to.equal(401);
      expect(res.headers['www-authenticate']).to.equal('Bearer realm="console"');
      expect(res.body).to.have.all.keys('error', 'error_description', 'error_details');
      expect(res.body.error).to.equal('invalid_token');
    }
  });

  it('accepts the ops key as X-Access-Token, X-Auth-Token or bearer token', async () => {
    const app = request(buildApp(t.ctx).callback());
    for (const headers of [{ 'X-Access-Token': ops }, { 'X-Auth-Token': ops }, { Authorization: `Bearer ${ops}` }] as Record<string, string>[]) {
      expect((await app.get('/console/api/credentials').set(headers)).status, JSON.stringify(headers)).to.equal(200);
    }
    const missing = await app.get('/console/api/nothing').set('X-Access-Token', ops);
    expect(missing.status).to.equal(404);
    expect(missing.body.error).to.equal('not_found');
  });

  it('lists partners, keys and feed clients with scope, zones and last use, never a secret', async () => {
    const res = await request(buildApp(t.ctx).callback()).get('/console/api/credentials').set('X-Access-Token', ops);
    expect(res.body.partners.map((p: any) => p.name)).to.include.members(['Operations', 'Acme Rides']);
    const opsKey = res.body.keys.find((k: any) => k.partner === 'Operations');
    expect(opsKey.scope).to.equal('ops');
    expect(opsKey.last_used_at).to.be.a('string');
    expect(res.body.feed_clients.find((c: any) => c.client_id === 'city-console')).to.include({ role: 'city', zones: null });
    expect(res.text).not.to.match(/key_hash|secret_hash/);
    expect(res.text).not.to.contain(ops);
    expect(res.text).not.to.contain(partner);
  });

  it('creates a feed client’s API key (shown once), lists its prefix, and revokes it; refuses what does not exist', async () => {
    const app = request(buildApp(t.ctx).callback());
    const made = await app.post('/console/api/feed-clients/city-console/keys').set('X-Access-Token', ops).send({ label: 'city dashboard' });
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    expect(made.headers['cache-control']).to.equal('no-store');
    expect(made.body).to.include({ client_id: 'city-console', label: 'city dashboard' });
    expect(made.body.key).to.match(/^fk_[A-Za-z0-9_-]{43}$/);
    // the key opens the feeds at once, as the client's tokens do
    const zone = await t.ctx.db.maybeOne<{ id: string }>('SELECT id FROM zones ORDER BY id LIMIT 1');
    if (zone) expect((await app.get(`/v1/partner-apis/mds/${zone.id}/vehicles`).set('X-Access-Token', made.body.key)).status).to.equal(200);
    const listed = await app.get('/console/api/credentials').set('X-Access-Token', ops);
    const row = listed.body.feed_keys.find((k: any) => k.id === made.body.id);
    expect(row).to.include({ client_id: 'city-console', key_prefix: made.body.key.slice(0, 8), label: 'city dashboard', revoked_at: null });
    expect(listed.text).not.to.contain(made.body.key);
    expect(listed.text).not.to.match(/key_hash/);

    expect(
      (await app.delete(`/console/api/feed-clients/other-client/keys/${made.body.id}`).set('X-Access-Token', ops)).status,
      'another client’s row',
    ).to.equal(404);
    const revoked = await app.delete(`/console/api/feed-clients/city-console/keys/${made.body.id}`).set('X-Access-Token', ops);
    expect(revoked.status, JSON.stringify(revoked.body)).to.equal(200);
    expect(revoked.body).to.deep.equal({ id: made.body.id, client_id: 'city-console', revoked: true });
    expect((await app.delete(`/console/api/feed-clients/city-console/keys/${made.body.id}`).set('X-Access-Token', ops)).status, 'already revoked').to.equal(
      404,
    );
    expect((await app.delete('/console/api/feed-clients/city-console/keys/not-a-uuid').set('X-Access-Token', ops)).body.error).to.equal('bad_param');
    const none = await app.post('/console/api/feed-clients/no-such-client/keys').set('X-Access-Token', ops).send({});
    expect(none.status).to.equal(404);
    expect(none.body.error).to.equal('not_found');
    expect((await app.post('/console/api/feed-clients/city-console/keys').set('X-Access-Token', ops).send({ label: 7 })).status).to.equal(400);
    expect((await app.post('/console/api/feed-clients/city-console/keys').set('X-Access-Token', partner).send({})).status, 'not an ops key').to.equal(403);
  });

  it('publishing answers publish-status figures, and 400 bad_param for a malformed hour', async () => {
    const app = request(buildApp(t.ctx).callback());
    const res = await app.get('/console/api/publishing').set('X-Access-Token', ops);
    expect(res.status).to.equal(200);
    const s = await publicationStatus(t.ctx, { zones: 'all' });
    expect(res.body.feeds).to.deep.equal(s.feeds);
    expect(res.body.rows).to.deep.equal(s.rows);
    expect(res.body.totals).to.deep.equal(s.totals);
    const bad = await app.get('/console/api/publishing?from=yesterday').set('X-Access-Token', ops);
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.equal('bad_param');
    const unknown = await app.get('/console/api/publishing?zone=atlantis').set('X-Access-Token', ops);
    expect(unknown.status).to.equal(400);
    expect(unknown.body.error_description).to.contain('atlantis');
  });

  it('republish: queues one forced job per hour and answers 202 at once with what it queued; a publisher then rewrites the files', async function () {
    this.timeout(60000);
    const square = {
      type: 'Polygon',
      coordinates: [
        [
          [13.3, 52.4],
          [13.5, 52.4],
          [13.5, 52.6],
          [13.3, 52.6],
          [13.3, 52.4],
        ],
      ],
    };
    await importZone(t.ctx.db, t.ctx.clock, {
      type: 'FeatureCollection',
      features: [
        {
          type: 'Feature',
          geometry: square,
          properties: {
            kind: 'zone',
            id: 'consoleville',
            name: 'C',
            city: 'C',
            country: 'DE',
            timezone: 'Europe/Berlin',
            currency: 'EUR',
            vat_rate: 0.19,
            parking_mode: 'free-floating',
          },
        },
      ],
    });
    await t.ctx.db.query(`UPDATE zones SET created_at = $1::timestamptz - interval '1 day' WHERE id = 'consoleville'`, [t.ctx.clock.now()]);
    const ago = (h: number) => formatHour(floorHour(new Date(t.ctx.clock.now().getTime() - h * 3_600_000)));
    const [hour, earlier, current] = [ago(3), ago(4), ago(0)];
    const app = request(buildApp(t.ctx).callback());
    const post = (body: object) => app.post('/console/api/republish').set('X-Access-Token', ops).send(body);
    expect((await app.post('/console/api/republish').send({ zone: 'consoleville', cells: [{ feed: 'mds-2.0-trips', hour }] })).status).to.equal(401);

    // two cells of one hour are one job; a prefix names both files of a version; an open hour is skipped
    const cells = [
      { feed: 'mds-2.0-trips', hour },
      { feed: 'mds-1.2', hour },
      { feed: 'mds-2.0-trips', hour: earlier },
      { feed: 'mds-2.0-events', hour: current },
    ];
    const res = await post({ zone: 'consoleville', cells });
    expect(res.status, res.text).to.equal(202);
    expect(res.headers['cache-control']).to.equal('no-store');
    const valid = compile(RepublishQueuedSchema);
    expect(valid(res.body), JSON.stringify(valid.errors)).to.equal(true);
    expect(res.body.jobs.map((j: any) => [j.hour, j.feeds])).to.deep.equal([
      [earlier, ['mds-2.0-trips']],
      [hour, ['mds-2.0-trips', 'mds-1.2-trips', 'mds-1.2-status_changes']],
    ]);
    expect(res.body.jobs.every((j: any) => typeof j.id === 'string')).to.equal(true);
    expect(res.body.skipped).to.deep.equal([{ feed: 'mds-2.0-events', hour: current, reason: 'the hour has not closed yet' }]);
    const queued = await t.ctx.db.many(`SELECT id::text, data FROM pgboss.job WHERE name = $1 AND state = 'created' ORDER BY data->>'hour'`, [HOUR_QUEUE]);
    expect(queued.map((j) => j.id)).to.deep.equal(res.body.jobs.map((j: any) => j.id));
    expect(queued[1].data).to.deep.equal({ zone: 'consoleville', hour, feedIds: ['mds-2.0-trips', 'mds-1.2-trips', 'mds-1.2-status_changes'], force: true });
    // nothing was published inside the request
    expect(
      (await publicationStatus(t.ctx, { zones: ['consoleville'], from: new Date(`${hour}:00:00Z`), to: new Date(`${hour}:00:00Z`) })).rows[0].states[
        'mds-2.0-trips'
      ],
    ).to.equal('missing');

    // the same republish again while it waits queues nothing more
    const again = await post({
      zone: 'consoleville',
      cells: [
        { feed: 'mds-1.2', hour },
        { feed: 'mds-2.0-trips', hour },
      ],
    });
    expect(again.status).to.equal(202);
    expect(again.body.jobs).to.deep.equal([{ hour, feeds: ['mds-2.0-trips', 'mds-1.2-trips', 'mds-1.2-status_changes'], id: null }]);

    const publisher = await startPublisher(t.ctx, { cron: false, concurrency: 1, pollingIntervalSeconds: 0.5 });
    try {
      const deadline = Date.now() + 45000;
      let left = 1;
      while (left && Date.now() < deadline) {
        left = (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state <> 'completed'`, [HOUR_QUEUE])).n;
        if (left) await new Promise((r) => setTimeout(r, 200));
      }
      expect(left).to.equal(0);
    } finally {
      await publisher.stop();
    }
    const status = await publicationStatus(t.ctx, { zones: ['consoleville'], from: new Date(`${earlier}:00:00Z`), to: new Date(`${hour}:00:00Z`) });
    expect(status.rows.map((r) => r.states['mds-2.0-trips'])).to.deep.equal(['published', 'published']);
    expect(status.rows[1].states['mds-1.2-status_changes']).to.equal('published');
    expect(status.rows[1].states['mds-2.0-events']).to.equal('missing');
  });

  it('republish refuses a malformed body, an unknown zone or feed with 400, before queueing anything', async () => {
    const hour = formatHour(floorHour(new Date(t.ctx.clock.now().getTime() - 3 * 3_600_000)));
    const app = request(buildApp(t.ctx).callback());
    const before = (await t.ctx.db.one(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1`, [HOUR_QUEUE])).n;
    for (const body of [
      {},
      { zone: 'consoleville', cells: [] },
      { zone: 'consoleville', cells: [{ feed: 'mds-2.0-trips', hour: 'soon' }] },
      { zone: 'atlantis', cells: [{ feed: 'mds-2.0-trips', hour }] },
      { zone: 'consoleville', cells: [{ feed: 'mds-9.9-trips', hour }] },
    ]) {
      const bad = await app.post('/console/api/republish').set('X-Access-Token', ops).send(body);
      expect(bad.status, JSON.stringify(body)).to.equal(400);
      expect(bad.body.error).to.equal('bad_param');
    }
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1`, [HOUR_QUEUE])).n).to.equal(before);
  });
});

describe('console API: health from the metrics registry', () => {
  const t = useTestContext();

  it('reports rentals running, requests per family, queue depth as /metrics does', async () => {
    registerDbCollectors(t.ctx.db);
    const ops = (await createKey(t.ctx.db, 'Operations', 'ops')).key;
    const app = request(buildApp(t.ctx).callback());
    await app.get('/v1/user/id/not-a-uuid');
    const res = await app.get('/console/api/health').set('Authorization', `Bearer ${ops}`);
    expect(res.status).to.equal(200);
    expect(res.body.rentals_running).to.equal((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE state = 'RUNNING'`)).n);
    expect(res.body.families.partner.requests).to.be.greaterThan(0);
    expect(res.body).to.have.all.keys('at', 'rentals_running', 'families', 'publish_lag_seconds', 'queue_depth', 'store_errors');
    expect((await app.get('/console/api/health')).status).to.equal(401);
  });
});

describe('console API: fleet map', () => {
  const t = useTestContext();

  it('answers a zone boundary, its areas and every vehicle with its running rental', async () => {
    const { seedDemo } = await import('../ops/seed/index.js');
    await seedDemo(t.ctx);
    const app = request(buildApp(t.ctx).callback());
    const res = await app.get('/console/api/fleet?zone=copenhagen').set('X-Access-Token', 'demo-ops-key');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.ttl).to.equal(30);
    expect(res.body.boundary.type).to.equal('MultiPolygon');
    expect(res.body.areas.features.some((f: any) => f.properties.area_type === 'parking-spot')).to.equal(true);
    const db = await t.ctx.db.many(`SELECT code FROM vehicles WHERE zone_id = 'copenhagen' ORDER BY code`);
    expect(res.body.vehicles.map((v: any) => v.code)).to.deep.equal(db.map((v) => v.code));
    expect(res.body.vehicles[0]).to.include.keys('battery_percent', 'status', 'lat', 'lon', 'rental_id');
    expect((await app.get('/console/api/fleet?zone=atlantis').set('X-Access-Token', 'demo-ops-key')).status).to.equal(404);
    expect((await app.get('/console/api/fleet?zone=Bad%20Zone').set('X-Access-Token', 'demo-ops-key')).status).to.equal(400);
  });
});
