/**
 * Admission control (lib/http/admission.ts): past the in-flight limit the partner API and TOMP
 * refuse at once with 503 + Retry-After in their own error format, instead of queueing without
 * bound; a blocked event loop refuses new requests until it recovers.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { Admission } from '../lib/http/admission.js';
import { registry } from '../lib/metrics.js';
import { useTestContext } from './support/context.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';

describe('admission control', function () {
  describe('the Admission queue', () => {
    it('admits up to the limit, queues briefly in order, refuses beyond the queue or its wait', async () => {
      const a = new Admission(1, 30, 1);
      expect(a.enter()).to.equal(true);
      const queued = a.enter();
      expect(queued).to.be.instanceOf(Promise);
      expect(a.enter(), 'the queue holds one').to.equal(false);
      a.leave(); // the slot passes to the waiter
      expect(await queued).to.equal(true);
      expect(a.running).to.equal(1);
      const timedOut = a.enter();
      expect(await timedOut, 'refused once its wait ran out').to.equal(false);
      expect(a.waiting).to.equal(0);
      a.leave();
      expect(a.running).to.equal(0);
      expect(a.refused).to.equal(2);
    });

    it('refuses while the event loop is late, and admits again once it catches up', async () => {
      const a = new Admission(100, 0, 0, 20);
      expect(a.enter()).to.equal(true); // starts the sampler
      a.leave();
      const until = performance.now() + 120;
      while (performance.now() < until); // a blocked loop, as a CPU-bound process has
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 0));
      expect(a.enter(), 'late loop').to.equal(false);
      await new Promise((r) => setTimeout(r, 80));
      expect(a.enter(), 'recovered').to.equal(true);
    });
  });

  describe('over HTTP', () => {
    const t = useTestContext({ config: { API_MAX_IN_FLIGHT: '1', API_MAX_QUEUE_MS: '0', API_MAX_EVENT_LOOP_DELAY_MS: '0' } });
    let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
    let p: PartnerFixture;
    let zone: ZoneFixture;

    before(async () => {
      server = buildApp(t.ctx).callback();
      p = await insertPartner(t.ctx.db);
      zone = await insertZone(t.ctx.db);
    });
    afterEach(() => t.ctx.gateway.reset());

    it('a request beyond the limit gets 503 + Retry-After in each family’s format; the next one is served', async () => {
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const maas = await insertMaasPartner(t.ctx.db);
      // the start holds the only slot while the gateway times out (200 ms in the test context)
      t.ctx.gateway.failNext('unlock', 'timeout');
      const holding = request(server).post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId: user, vehicleId: v.id }).then((r) => r);
      await new Promise((r) => setTimeout(r, 50));
      const partner = await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key);
      expect(partner.status).to.equal(503);
      expect(partner.headers['retry-after']).to.equal('1');
      expect(partner.body.errors[0]).to.include({ code: 'ServiceUnavailable', status: '503' });
      const tomp = await request(server).get('/edge/tomp/operator/regions').set('X-Access-Token', maas.key);
      expect(tomp.status).to.equal(503);
      expect(tomp.headers['retry-after']).to.equal('1');
      expect(tomp.body).to.include({ status: 503, type: 'ServiceUnavailable' });
      expect((await holding).status).to.be.within(500, 599);
      const after = await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key);
      expect(after.status).to.equal(200);
      const shed = await registry.getSingleMetricAsString('http_requests_shed_total');
      expect(shed).to.match(/http_requests_shed_total\{family="partner"\} [1-9]/);
      expect(shed).to.match(/http_requests_shed_total\{family="tomp"\} [1-9]/);
    });
  });
});
