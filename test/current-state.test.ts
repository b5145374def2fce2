/**
 * vehicle_current_state (migration 000105) stays equal to the last event and the last telemetry of
 * every vehicle, as /vehicles/status must report them, while rentals start and end concurrently
 * through the partner API and telemetry arrives out of order, one row or a batch at a time.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertPartner, insertUser, insertVehicle, insertZone } from './support/partner-fixtures.js';

describe('vehicle current state', function () {
  this.timeout(60_000);
  const t = useTestContext();

  /** Rows where the kept state differs from the history's last event / telemetry. */
  async function drift(): Promise<unknown[]> {
    return t.ctx.db.many(
      `WITH e AS (SELECT DISTINCT ON (device_id) device_id, event_id, ts FROM events ORDER BY device_id, ts DESC, event_id DESC),
            m AS (SELECT DISTINCT ON (device_id) device_id, telemetry_id, ts FROM telemetry ORDER BY device_id, ts DESC, telemetry_id DESC)
       SELECT v.id, c.event_id AS kept_event, e.event_id AS last_event, c.telemetry_id AS kept_telemetry, m.telemetry_id AS last_telemetry
         FROM vehicles v
         LEFT JOIN vehicle_current_state c ON c.device_id = v.id
         LEFT JOIN e ON e.device_id = v.id
         LEFT JOIN m ON m.device_id = v.id
        WHERE c.event_id IS DISTINCT FROM e.event_id OR c.telemetry_id IS DISTINCT FROM m.telemetry_id
           OR c.event_ts IS DISTINCT FROM e.ts OR c.telemetry_ts IS DISTINCT FROM m.ts`,
    );
  }

  it('equals the last event and telemetry per vehicle under concurrent rentals and out-of-order telemetry', async () => {
    const app = request(buildApp(t.ctx).callback());
    const zone = await insertZone(t.ctx.db, { unlockDistanceM: 5000 });
    const partner = await insertPartner(t.ctx.db);
    const vehicles = await Promise.all(Array.from({ length: 12 }, (_, i) => insertVehicle(t.ctx.db, zone, { eastM: i * 10 })));
    const users = await Promise.all(vehicles.map(() => insertUser(t.ctx.db, partner.id)));
    const telemetry = (device: string, minutesAgo: number) =>
      t.ctx.db.query(
        `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent) VALUES ($1, $2, now() - $3::float8 * interval '1 minute', ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 50)`,
        [device, zone.id, minutesAgo],
      );
    for (let round = 0; round < 3; round++) {
      // every vehicle rented at once, then returned at once (the clock moves in between, so that
      // each trip_end is later than its trip_start), while telemetry lands in random order
      const work: Promise<unknown>[] = [];
      const rentals = await Promise.all(
        vehicles.map(async (v, i) => {
          work.push(telemetry(v.id, Math.random() * 30));
          const s = await app.post('/v1/rental/start').set('X-Auth-Token', partner.key).send({ userId: users[i], vehicleId: v.id });
          expect(s.status, JSON.stringify(s.body)).to.equal(200);
          return s.body.data[0].id as string;
        }),
      );
      t.ctx.clock.advance(1000);
      rentals.forEach((id, i) => {
        work.push(
          app
            .post(`/v1/rental/${id}/end`)
            .set('X-Auth-Token', partner.key)
            .send({})
            .then((e) => expect(e.status, JSON.stringify(e.body)).to.equal(200)),
        );
        work.push(telemetry(vehicles[i].id, Math.random() * 30));
      });
      // and one batch statement for every vehicle, older and newer points mixed
      work.push(
        t.ctx.db.query(
          `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent)
           SELECT v, $2, now() - random() * interval '40 minutes', ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326), 40
             FROM unnest($1::uuid[]) v CROSS JOIN generate_series(1, 3)`,
          [vehicles.map((v) => v.id), zone.id],
        ),
      );
      await Promise.all(work);
      t.ctx.clock.advance(1000);
      expect(await drift(), `round ${round}`).to.deep.equal([]);
    }
    const kept = await t.ctx.db.many(`SELECT vehicle_state FROM vehicle_current_state WHERE device_id = ANY ($1::uuid[])`, [vehicles.map((v) => v.id)]);
    expect(kept.map((k) => k.vehicle_state)).to.deep.equal(vehicles.map(() => 'available'));
  });

  it('an older event arriving late does not roll the state back', async () => {
    const zone = await insertZone(t.ctx.db);
    const v = await insertVehicle(t.ctx.db, zone);
    const ins = (state: string, types: string[], at: string) =>
      t.ctx.db.query(
        `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location) VALUES ($1, $2, $3, $4, $5, ST_SetSRID(ST_MakePoint(13.405, 52.52), 4326))`,
        [v.id, zone.id, types, state, at],
      );
    await ins('non_operational', ['battery_low'], '2026-11-21T10:00:00Z');
    await ins('available', ['service_start'], '2026-11-21T09:00:00Z'); // late, older
    const kept = await t.ctx.db.one(`SELECT vehicle_state FROM vehicle_current_state WHERE device_id = $1`, [v.id]);
    expect(kept.vehicle_state).to.equal('non_operational');
    expect(await drift()).to.deep.equal([]);
  });
});
