/**
 * Races decided by Postgres, through the real HTTP stack in-process (supertest, Promise.all): many
 * starts on one vehicle, one user on many vehicles, two TOMP bookings for one vehicle, one rental
 * ended twice at once, and the idle auto-end sweep racing a partner's end. Each race checks the
 * answers (one winner, the losers a documented 4xx, never a 5xx) and the database (one running
 * rental, one trip, one trip_end event: one charge).
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { buildApp } from '../api/app.js';
import { autoEndIdleRentals } from '../publisher/jobs/rentals.js';
import { useTestContext } from './support/context.js';
import { expectError, insertPartner, insertUser, insertVehicle, insertZone, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';
import { count, expectSafe } from './support/figures.js';

const ROW = 'races';

describe('races', function () {
  this.timeout(120000);
  // These tests prove the races' outcomes (one winner, one charge), not admission control: the 200
  // requests are sent by this very process through supertest, so their arrival is spread over the
  // event loop that also answers them, which admission reads as a standing queue. The contract under
  // bursts (every request answered, none refused) is proven against a separate API process by
  // test/bursts.test.ts; here the queue's budgets (the deadline, and the overload wait it falls to
  // while a queue stands) are long enough never to decide an outcome, and the event loop is not
  // watched: a loop late under the parallel suite refuses while overloaded whatever the budgets (one
  // of the 200 starts was refused so on a slow machine, 2026-11-29)
  const t = useTestContext({
    now: '2026-11-21T10:00:00Z',
    config: { API_QUEUE_DEADLINE_MS: '10000', API_QUEUE_OVERLOAD_WAIT_MS: '10000', API_MAX_EVENT_LOOP_DELAY_MS: '0' },
  });
  let api: supertest.Agent;
  let zone: ZoneFixture;
  let partner: { id: string; key: string };

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    zone = await insertZone(t.ctx.db);
    partner = await insertPartner(t.ctx.db);
  });
  afterEach(() => t.ctx.gateway.reset());

  const start = (userId: string, vehicleId: string) => api.post('/v1/rental/start').set('X-Auth-Token', partner.key).send({ userId, vehicleId });
  const end = (rentalId: string) => api.post(`/v1/rental/${rentalId}/end`).set('X-Auth-Token', partner.key).send({});
  const one = async (sql: string, params: unknown[]) => (await t.ctx.db.one(sql, params)).n as number;

  /** One charge for a rental: one trip row, one trip_end event. */
  const expectOneCharge = async (rentalId: string) => {
    expect(await one(`SELECT count(*)::int AS n FROM trips WHERE rental_id = $1`, [rentalId]), 'trips').to.equal(1);
    expect(
      await one(`SELECT count(*)::int AS n FROM events e JOIN rentals r ON r.trip_id = ANY (e.trip_ids) WHERE r.id = $1 AND 'trip_end' = ANY (e.event_types)`, [
        rentalId,
      ]),
      'trip_end events',
    ).to.equal(1);
  };

  it('200 simultaneous starts on one vehicle by different users: exactly one running rental', async () => {
    const vehicle = await insertVehicle(t.ctx.db, zone);
    const users = await Promise.all(Array.from({ length: 200 }, () => insertUser(t.ctx.db, partner.id)));
    count(ROW, 'races');
    const answers = await Promise.all(users.map((u) => start(u, vehicle.id)));
    for (const res of answers) expectSafe(ROW, res, 'start on one vehicle');
    const won = answers.filter((r) => r.status === 200);
    expect(
      won,
      answers
        .filter((r) => r.status !== 200)
        .slice(0, 3)
        .map((r) => r.text)
        .join('\n'),
    ).to.have.length(1);
    for (const res of answers.filter((r) => r.status !== 200)) {
      expect(['VehicleNotAvailable', 'RentalAlreadyExists'], res.text).to.include(res.body.errors[0].code);
    }
    expect(await one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1 AND state = 'RUNNING'`, [vehicle.id])).to.equal(1);
    expect(await one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1`, [vehicle.id])).to.equal(1);
    expect(await one(`SELECT count(*)::int AS n FROM events WHERE device_id = $1 AND 'trip_start' = ANY (event_types)`, [vehicle.id])).to.equal(1);
    await end(won[0].body.data[0].id);
  });

  it('one user starting on 50 vehicles at once: exactly one running rental', async () => {
    const vehicles = await Promise.all(Array.from({ length: 50 }, (_, i) => insertVehicle(t.ctx.db, zone, { eastM: i })));
    const user = await insertUser(t.ctx.db, partner.id);
    count(ROW, 'races');
    const answers = await Promise.all(vehicles.map((v) => start(user, v.id)));
    for (const res of answers) expectSafe(ROW, res, 'one user, many vehicles');
    const won = answers.filter((r) => r.status === 200);
    expect(won).to.have.length(1);
    for (const res of answers.filter((r) => r.status !== 200)) expectError(res, 400, 'RentalAlreadyExists');
    expect(await one(`SELECT count(*)::int AS n FROM rentals WHERE user_id = $1`, [user])).to.equal(1);
    // the losers' vehicles are still ready (no half-started rental left a vehicle unlocked or riding)
    expect(await one(`SELECT count(*)::int AS n FROM vehicles WHERE id = ANY ($1) AND status = 'ready'`, [vehicles.map((v) => v.id)])).to.equal(49);
    await end(won[0].body.data[0].id);
  });

  it('with injected unlock and lock failures: no half-started rental, a failed end is retried once', async () => {
    const vehicle = await insertVehicle(t.ctx.db, zone);
    const users = await Promise.all(Array.from({ length: 20 }, () => insertUser(t.ctx.db, partner.id)));
    t.ctx.gateway.failNext('unlock', 'unreachable', 3);
    count(ROW, 'faults', 3);
    count(ROW, 'races');
    const answers = await Promise.all(users.map((u) => start(u, vehicle.id)));
    for (const res of answers) {
      // a vehicle that does not answer is a documented 500 (FailedToUpdateVehicle / FailedToUnlockVehicle); anything else a 4xx
      if (res.status >= 500) expect(['FailedToUpdateVehicle', 'FailedToUnlockVehicle']).to.include(expectError(res, 500, res.body.errors?.[0]?.code).code);
      else expectSafe(ROW, res, 'start with failing unlocks');
    }
    const won = answers.filter((r) => r.status === 200);
    expect(won.length).to.be.at.most(1);
    expect(await one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1 AND state = 'RUNNING'`, [vehicle.id])).to.equal(won.length);
    if (won.length === 0) return;
    const id = won[0].body.data[0].id as string;
    t.ctx.gateway.failNext('lock', 'refused', 1);
    count(ROW, 'faults');
    count(ROW, 'races');
    const ends = await Promise.all([end(id), end(id)]);
    const statuses = ends.map((r) => r.status).sort();
    // the lock that failed leaves the rental running (500 FailedToEndRental) or the other end won
    for (const res of ends) if (res.status >= 500) expectError(res, 500, 'FailedToEndRental');
    if (!statuses.includes(200)) expect((await end(id)).status).to.equal(200);
    await expectOneCharge(id);
  });

  it('two TOMP bookings for one vehicle: one 201, one 406 (ten rounds)', async () => {
    const tz = await insertTompZone(t.ctx.db);
    const maas = await insertMaasPartner(t.ctx.db);
    for (let round = 0; round < 10; round++) {
      const v = await insertTompVehicle(t.ctx.db, tz);
      count(ROW, 'races');
      const answers = await Promise.all([0, 1].map(() => api.post('/edge/tomp/bookings/one-stop').set('X-Access-Token', maas.key).send(oneStopBody(v.id, v))));
      for (const res of answers) expectSafe(ROW, res, 'two bookings');
      expect(answers.map((r) => r.status).sort(), answers.map((r) => r.text).join('\n')).to.deep.equal([201, 406]);
      expect(answers.find((r) => r.status === 406)!.body.status).to.equal(406);
      expect(await one(`SELECT count(*)::int AS n FROM rentals WHERE vehicle_id = $1`, [v.id])).to.equal(1);
    }
  });

  it('ending the same rental several times at once: one end, the rest RentalAlreadyEnded, one charge (ten rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const v = await insertVehicle(t.ctx.db, zone);
      const user = await insertUser(t.ctx.db, partner.id);
      const started = await start(user, v.id);
      expect(started.status, started.text).to.equal(200);
      const id = started.body.data[0].id as string;
      count(ROW, 'races');
      const answers = await Promise.all([0, 1, 2].map(() => end(id)));
      for (const res of answers) expectSafe(ROW, res, 'double end');
      expect(
        answers.filter((r) => r.status === 200),
        answers.map((r) => r.text).join('\n'),
      ).to.have.length(1);
      for (const res of answers.filter((r) => r.status !== 200)) expectError(res, 400, 'RentalAlreadyEnded');
      await expectOneCharge(id);
      // no end holds the row lock across the lock command: each end that passed its check may lock
      // the vehicle (an idempotent command), one of them ends the rental
      expect(t.ctx.gateway.calls.filter((c) => c.command === 'lock' && c.vehicleId === v.id)).to.have.length.within(1, 3);
    }
  });

  it('the idle auto-end sweep racing a partner end: one end, one charge (ten rounds)', async () => {
    const t0 = t.ctx.clock.now();
    try {
      for (let round = 0; round < 10; round++) {
        t.ctx.clock.set(t0);
        const v = await insertVehicle(t.ctx.db, zone);
        const user = await insertUser(t.ctx.db, partner.id);
        const started = await start(user, v.id);
        expect(started.status, started.text).to.equal(200);
        const id = started.body.data[0].id as string;
        // ten minutes and more without movement: the sweep wants to end it
        await t.ctx.db.query(`UPDATE vehicles SET last_moved_at = $2 WHERE id = $1`, [v.id, new Date(t0.getTime() - 60_000)]);
        t.ctx.clock.set(new Date(t0.getTime() + 11 * 60_000));
        count(ROW, 'races');
        const [swept, res] = await Promise.all([autoEndIdleRentals(t.ctx), end(id)]);
        expectSafe(ROW, res, 'auto end vs partner end');
        const state = (await t.ctx.db.one(`SELECT state FROM rentals WHERE id = $1`, [id])).state as string;
        if (res.status === 200) {
          expect(state).to.equal('ENDED');
        } else {
          expectError(res, 400, 'RentalAlreadyEnded');
          expect(state).to.equal('ENDED_WITH_NO_CHARGE');
          expect(swept).to.be.at.least(1);
        }
        await expectOneCharge(id);
      }
    } finally {
      t.ctx.clock.set(t0);
    }
  });
});
