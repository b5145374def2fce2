/**
 * make run's demo over the real vehicle path: the live simulator's rides go through the rental
 * engine and the MQTT gateway to the demo fleet (ops/sim/mqtt-fleet.ts, one connection speaking for
 * every demo vehicle with the broker's demo-fleet identity), and the vehicles' positions come back
 * through the broker and the ingest. A demo vehicle told to refuse or to stay silent
 * (`ops demo-vehicle`) shows the requirement's error rows.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../lib/core/log.js';
import { sql } from '../lib/core/sql/typed.js';
import { startRental } from '../lib/domain/rentals/engine.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import type { AppContext } from '../lib/domain/context.js';
import { startIngest, type Ingest } from '../ingest/index.js';
import { seedDemo } from '../ops/seed/index.js';
import { startLiveSimulator } from '../ops/sim/live.js';
import { MqttFleet, setDemoBehaviour } from '../ops/sim/mqtt-fleet.js';
import { useTestContext } from './support/context.js';
import { expectLegalEventHistories } from './support/fleet-fixtures.js';
import { waitFor } from './support/faults.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import { insertPartner, insertUser } from './support/partner-fixtures.js';

describe('the demo over MQTT: the live simulator, the demo fleet, the gateway and the ingest (real Mosquitto)', function () {
  this.timeout(120_000);
  // the simulator's clock runs ahead of the wall clock here (ticks advance it): the ingest takes
  // reports up to an hour ahead
  const t = useTestContext({ now: new Date(), config: { INGEST_MAX_AHEAD_MS: '3600000' } });
  let broker: TestBroker;
  let gateway: MqttGateway;
  let fleet: MqttFleet;
  let ingest: Ingest;
  let ctx: AppContext;
  let dir: string;
  let behaviourFile: string;

  // a suite of its own: its after hook stops the ingest before the context's closes the database
  describe('with the broker, the gateway, the ingest and the demo fleet', () => {
    before(async () => {
      broker = await startBroker();
      dir = mkdtempSync(join(tmpdir(), 'demo-fleet-'));
      behaviourFile = join(dir, 'demo-vehicles.json');
      await seedDemo(t.ctx, { vehiclesPerZone: 15 });
      gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'demo-test', timeoutMs: 2000, log: createLogger('silent') });
      ctx = { ...t.ctx, gateway };
      ingest = startIngest(t.ctx, { url: broker.url, ...broker.platform, id: 'demo-test', batchMs: 10 });
      await ingest.ready;
      const codes = new Map((await t.ctx.db.many(sql('SimVehicleCodes'))).map((v) => [v.id, v.code]));
      fleet = await MqttFleet.connect({ url: broker.url, ...broker.demoFleet, log: createLogger('silent'), codes, behaviourFile });
    });
    after(async () => {
      await ingest?.stop();
      await fleet?.close();
      await gateway?.close();
      await broker?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('the live simulator rides MQTT vehicles: unlocks and locks over the broker, positions through the ingest, every event legal', async () => {
      const live = startLiveSimulator(ctx, { rate: 10, seed: 3, manual: true, fleet });
      for (let i = 0; i < 60; i++) {
        await live.tick();
        t.ctx.clock.advance(1500);
      }
      await live.stop();
      const rentals = await t.ctx.db.many<{ state: string }>(`SELECT state FROM rentals WHERE source = 'simulator'`);
      expect(rentals.length, 'rides started over MQTT').to.be.greaterThan(3);
      expect(rentals.filter((r) => r.state !== 'RUNNING').length, 'rides ended over MQTT').to.be.greaterThan(1);
      // the ride reports came through the broker and the ingest, each with its trip
      await waitFor(
        'ride telemetry ingested',
        async () => (await t.ctx.db.one<{ n: number }>(`SELECT count(DISTINCT trip_id)::int AS n FROM telemetry WHERE trip_id IS NOT NULL`)).n > 1,
      );
      expect(ingest.totals.stored).to.be.greaterThan(5);
      expect(ingest.totals.rejected, 'the demo fleet sends nothing the ingest refuses').to.equal(0);
      await expectLegalEventHistories(t.ctx.db);
    });

    it('a demo vehicle told to refuse fails the start with FailedToUnlockVehicle, told to stay silent with FailedToUpdateVehicle', async () => {
      const p = await insertPartner(t.ctx.db);
      const v = await t.ctx.db.one<{ id: string; code: string }>(
        `SELECT v.id, v.code FROM vehicles v JOIN zones z ON z.id = v.zone_id
        WHERE v.zone_id = 'berlin' AND v.status = 'ready' AND v.mds_state = 'available' AND v.battery_percent >= z.min_battery_percent
          AND NOT EXISTS (SELECT 1 FROM rentals r WHERE r.vehicle_id = v.id AND r.state = 'RUNNING')
        ORDER BY v.code LIMIT 1`,
      );
      const userId = await insertUser(t.ctx.db, p.id);
      const start = () => startRental(ctx, { partnerId: p.id, userId, vehicleId: v.id, source: 'partner', userLicenseValidated: true });
      setDemoBehaviour(behaviourFile, v.code, 'refuse');
      await start().then(
        () => expect.fail('started'),
        (err: { code?: string }) => expect(err.code).to.equal('FailedToUnlockVehicle'),
      );
      setDemoBehaviour(behaviourFile, v.code, 'silent');
      await start().then(
        () => expect.fail('started'),
        (err: { code?: string }) => expect(err.code).to.equal('FailedToUpdateVehicle'),
      );
      setDemoBehaviour(behaviourFile, v.code, 'ok');
      const r = await start();
      expect(r.state).to.equal('RUNNING');
    });
  });
});
