/**
 * Admission control (api/kit/admission.ts): bursts wait in a bounded queue and are served; only a
 * request that would wait past its budget is refused, at once, with 503 + Retry-After in its
 * family's format; a queue that stands longer than the burst allowance (overload) shortens the
 * budget, and a late event loop under overload refuses new requests until it recovers.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { Admission, AdmissionRefused } from '../api/kit/admission.js';
import type { AdmissionLimits } from '../lib/core/config.js';
import { registry } from '../lib/core/metrics.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { useTestContext } from './support/context.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const limits = (l: Partial<AdmissionLimits>): AdmissionLimits => ({
  maxInFlight: 1,
  deadlineMs: 2000,
  overloadWaitMs: 250,
  burstMs: 1000,
  maxLagMs: 0,
  maxQueue: 10_000,
  ...l,
});
/** Resolves to the outcome of one run of `work` under `a`, and how long until it was known. */
async function outcome(a: Admission, work: () => Promise<unknown>): Promise<{ ok: boolean; ms: number; retryAfter?: number }> {
  const t0 = performance.now();
  try {
    await a.run(async () => {
      await work();
    });
    return { ok: true, ms: performance.now() - t0 };
  } catch (err) {
    if (!(err instanceof AdmissionRefused)) throw err;
    return { ok: false, ms: performance.now() - t0, retryAfter: err.retryAfterSeconds };
  }
}

describe('admission control', function () {
  describe('the Admission queue', () => {
    it('queues a burst far beyond the slots and serves all of it in arrival order', async () => {
      const a = new Admission(limits({ maxInFlight: 2 }));
      const order: number[] = [];
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          outcome(a, async () => {
            order.push(i);
            await sleep(2);
          }),
        ),
      );
      expect(
        results.every((r) => r.ok),
        'every request of the burst is served',
      ).to.equal(true);
      expect(order).to.deep.equal([...order].sort((x, y) => x - y));
      expect(a.refused).to.equal(0);
      expect(a.running + a.waiting).to.equal(0);
    });

    it('refuses at once, with a Retry-After, what would wait past the deadline; serves the rest within it', async () => {
      const a = new Admission(limits({ maxInFlight: 1, deadlineMs: 200 }));
      // teach it how long a slot is held: ~20 ms, more when the parallel suite makes timers late (a
      // slot of 40 ms admits half as many: 4 in one run of the whole suite)
      const taught = performance.now();
      for (let i = 0; i < 60; i++) await outcome(a, () => sleep(20));
      const slotMs = (performance.now() - taught) / 60;
      // a refusal decided on arrival comes before any slot of the burst is done (a 20 ms bound here
      // failed at 51 ms in a fresh-clone run: the parallel suite's load, not a late refusal)
      let done = 0;
      const doneAtRefusal: number[] = [];
      const results = await Promise.all(
        Array.from({ length: 40 }, () =>
          outcome(a, async () => {
            await sleep(20);
            done++;
          }).then((r) => {
            if (!r.ok) doneAtRefusal.push(done);
            return r;
          }),
        ),
      );
      const served = results.filter((r) => r.ok);
      const refused = results.filter((r) => !r.ok);
      expect(served.length, 'about deadline / slot time are queued').to.be.within(Math.min(5, Math.floor(200 / slotMs / 2)), 15);
      expect(refused.length).to.equal(40 - served.length);
      // refused on arrival, or (the one other path) by the waiter's own timer at its deadline when the
      // machine ran the queued slots slower than it had learned (seen once under the parallel suite:
      // the last waiter refused at 200 ms, after 6 slots)
      const atDeadline = refused.filter((r) => r.ms >= 200 - 5);
      expect(refused.length - atDeadline.length, 'most refusals are decided on arrival').to.be.at.least(40 - 15 - 3);
      expect(doneAtRefusal.filter((d) => d > 0).length, 'a refusal after arrival is one at the deadline').to.be.at.most(atDeadline.length);
      for (const r of refused) expect(r.retryAfter).to.equal(1);
      // the deadline bounds the wait for a slot, which the waiter's own timer enforces; the slot's
      // 20 ms sleep itself took 180 ms more in a fresh-clone run under the parallel suite's load
      for (const r of served) expect(r.ms, 'served within the deadline (+ the slot itself and timer lateness)').to.be.below(200 + 250);
    });

    it('a queue that stands is overload: the budget falls to the short one as it lasts, and is whole again once it drains', async () => {
      const a = new Admission(limits({ maxInFlight: 1, deadlineMs: 5000, overloadWaitMs: 30, burstMs: 60 }));
      for (let i = 0; i < 20; i++) await outcome(a, () => sleep(10));
      // a standing queue: 20 waiters of ~10 ms each keep it busy for ~200 ms
      let served = 0;
      const burst = Array.from({ length: 20 }, () => outcome(a, () => sleep(10)).then((r) => (served++, r)));
      expect(a.overloaded, 'a fresh queue is a burst').to.equal(false);
      expect(a.budgetMs()).to.be.above(4000);
      await sleep(100);
      expect(a.budgetMs(), 'the queue has stood for longer than burstMs').to.equal(30);
      expect(a.overloaded, 'the queue has stood for longer than burstMs').to.equal(true);
      const servedBefore = served;
      const late = await outcome(a, () => sleep(10));
      expect(late.ok, 'its predicted wait is past the overload budget').to.equal(false);
      // refused at once, not after waiting in the queue: nothing of the burst was served meanwhile
      // (a count, not a time: a loaded machine stalls the loop, and then no timer fires either)
      expect(served - servedBefore, 'burst waiters served while the late one was refused').to.equal(0);
      expect(
        (await Promise.all(burst)).every((r) => r.ok),
        'what the burst queued is still served',
      ).to.equal(true);
      expect(a.overloaded, 'drained').to.equal(false);
      const again = await Promise.all(Array.from({ length: 10 }, () => outcome(a, () => sleep(10))));
      expect(
        again.every((r) => r.ok),
        'the next burst gets the whole deadline again',
      ).to.equal(true);
    });

    it('a waiter still waiting at its deadline is refused then (a slot held far longer than predicted)', async () => {
      const a = new Admission(limits({ maxInFlight: 1, deadlineMs: 80 }));
      const holder = outcome(a, () => sleep(300));
      const waiter = await outcome(a, () => Promise.resolve());
      expect(waiter.ok).to.equal(false);
      expect(waiter.ms).to.be.within(70, 200);
      expect((await holder).ok).to.equal(true);
      expect(a.running + a.waiting).to.equal(0);
    });

    it('under overload, a loop late at every sample refuses new requests until it catches up; one stall is not overload', async () => {
      const a = new Admission(limits({ maxInFlight: 100, burstMs: 0, overloadWaitMs: 1000, maxLagMs: 20 }));
      expect((await outcome(a, () => Promise.resolve())).ok).to.equal(true); // starts the sampler
      const block = (ms: number) => {
        const until = performance.now() + ms;
        while (performance.now() < until);
      };
      // one stall (a major GC, the core taken away): over when the sample that saw it is read
      block(150);
      await new Promise((r) => setImmediate(r));
      expect(a.overloaded, 'one stall').to.equal(false);
      expect((await outcome(a, () => Promise.resolve())).ok, 'after one stall').to.equal(true);
      // a loop late at every sample, as a CPU-bound process's is: each turn blocks past the sampling
      // interval, and the request comes right after the turn whose sample saw it (setImmediate runs in
      // the same turn of the loop as the timers; a sleep(0) could let a punctual sample in between)
      for (let i = 0; i < 12; i++) {
        block(60);
        await new Promise((r) => setTimeout(r, 0));
      }
      block(60);
      for (let i = 0; i < 1000 && !a.overloaded; i++) await new Promise((r) => setImmediate(r));
      expect((await outcome(a, () => Promise.resolve())).ok, 'late loop, standing pressure').to.equal(false);
      // recovers once a sample finds the loop punctual again; on a machine the parallel suite loads,
      // a 25 ms sample can itself be 20 ms late now and then, so the recovery is awaited, not timed
      let recovered = false;
      for (let i = 0; i < 40 && !recovered; i++) {
        await sleep(50);
        recovered = (await outcome(a, () => Promise.resolve())).ok;
      }
      expect(recovered, 'recovered').to.equal(true);
    });
  });

  describe('over HTTP', () => {
    // one slot and no wait at all: any request while the slot is held would wait, so it is refused
    // (the event loop is not watched: on a loaded machine its lag alone would exceed a 1 ms budget)
    const t = useTestContext({ config: { API_MAX_IN_FLIGHT: '1', API_QUEUE_DEADLINE_MS: '1', API_MAX_EVENT_LOOP_DELAY_MS: '0' } });
    let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
    const gateway = new SimulatedGateway({ delayMs: 1500, timeoutMs: 5000 });
    let p: PartnerFixture;
    let zone: ZoneFixture;

    before(async () => {
      // the vehicle takes 1.5 s to unlock, a wait that holds no slot (lib/core/outside.ts)
      server = buildApp({ ...t.ctx, gateway }).callback();
      p = await insertPartner(t.ctx.db);
      zone = await insertZone(t.ctx.db);
    });

    it('a request that would wait past its budget gets a fast 503 + Retry-After in each family’s format; the next one is served; a wait on a vehicle holds no slot', async () => {
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const maas = await insertMaasPartner(t.ctx.db);
      // the start holds the only slot while it waits for the vehicle's row lock, which the test holds
      const blocker = await t.ctx.db.pool.connect();
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM vehicles WHERE id = $1 FOR UPDATE', [v.id]);
      let held = true;
      const holding = request(server)
        .post('/v1/rental/start')
        .set('X-Auth-Token', p.key)
        .send({ userId: user, vehicleId: v.id })
        .then((r) => {
          held = false;
          return r;
        });
      const waitingForLock = async () =>
        (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))
          .n > 0;
      for (const end = performance.now() + 5000; !(await waitingForLock()) && performance.now() < end;) await sleep(5);
      // refused without waiting: the answer comes while the slot is still held (a timed bound here
      // failed under the parallel suite's load: 101 ms against 100)
      const partner = await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key);
      expect(held, 'refused without waiting for the slot').to.equal(true);
      expect(partner.status).to.equal(503);
      expect(Number(partner.headers['retry-after'])).to.be.at.least(1);
      expect(partner.body.errors[0]).to.include({ code: 'ServiceUnavailable', status: '503' });
      const tomp = await request(server).get('/edge/tomp/operator/regions').set('X-Access-Token', maas.key);
      expect(held, 'refused without waiting for the slot').to.equal(true);
      expect(tomp.status).to.equal(503);
      expect(Number(tomp.headers['retry-after'])).to.be.at.least(1);
      expect(tomp.body).to.include({ status: 503, type: 'ServiceUnavailable' });
      // an unknown key is refused by authentication, never by admission: it takes no slot
      expect((await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', 'nope')).status).to.equal(401);
      await blocker.query('COMMIT');
      blocker.release();
      // the start goes on, and while its vehicle takes 1.5 s to unlock it holds no slot: a list is served
      for (const end = performance.now() + 5000; !gateway.calls.some((c) => c.command === 'unlock' && c.vehicleId === v.id) && performance.now() < end;)
        await sleep(5);
      const during = await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key);
      expect(held, 'served while the vehicle answers').to.equal(true);
      expect(during.status).to.equal(200);
      expect((await holding).status).to.equal(200);
      const after = await request(server).get(`/v1/vehicles?zoneID=${zone.id}`).set('X-Auth-Token', p.key);
      expect(after.status).to.equal(200);
      const shed = await registry.getSingleMetricAsString('http_requests_shed_total');
      expect(shed).to.match(/http_requests_shed_total\{family="partner"\} [1-9]/);
      expect(shed).to.match(/http_requests_shed_total\{family="tomp"\} [1-9]/);
    });
  });
});
