/**
 * The vehicle ingest (ingest/, bin/ingest.ts) against the real Mosquitto and Postgres: reports
 * published to a vehicle's topics reach the vehicle's current state, its telemetry history and the
 * partner API; a redelivery is stored once; a late report goes to history only; every kind of bad
 * input is counted by reason without stopping the stream; the MDS events a vehicle's own change
 * implies are recorded; two ingest processes split the stream; and an ingest process SIGKILLed
 * mid-stream loses nothing once its successor (the same INGEST_ID) resumes the broker session.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import mqtt, { type MqttClient } from 'mqtt';
import type { Counter } from 'prom-client';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { ROOT } from '../lib/core/paths.js';
import { metrics } from '../lib/core/metrics.js';
import { stateTopic, telemetryTopic, QOS } from '../lib/domain/vehicles/protocol.js';
import { startIngest, type Ingest } from '../ingest/index.js';
import { useTestContext } from './support/context.js';
import { entry } from './support/entries.js';
import { waitFor } from './support/faults.js';
import { startBroker, type TestBroker } from './support/mqtt.js';
import { insertPartner, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';

const counter = async (c: Counter, labels: Record<string, string>) =>
  (await c.get()).values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((s, v) => s + v.value, 0);

describe('the vehicle ingest (real Mosquitto, real Postgres)', function () {
  this.timeout(60_000);
  const t = useTestContext();
  let broker: TestBroker;
  let publisher: MqttClient;
  let zone: ZoneFixture;
  let p: PartnerFixture;
  const ingests: Ingest[] = [];
  const children: ChildProcess[] = [];

  const run = async (id: string) => {
    const i = startIngest(t.ctx, { url: broker.url, ...broker.platform, id, batchMs: 20 });
    ingests.push(i);
    await i.ready;
    return i;
  };
  const publish = (topic: string, body: unknown) => publisher.publishAsync(topic, typeof body === 'string' ? body : JSON.stringify(body), { qos: QOS });
  const telemetryCount = async (vehicleId: string) =>
    (await t.ctx.db.one<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1', [vehicleId])).n;

  before(async () => {
    broker = await startBroker();
    // the platform's identity may write every vehicle's topics: it stands in for many vehicles here
    // (test/vehicle-broker.test.ts proves what a vehicle's own identity may do)
    publisher = await mqtt.connectAsync(broker.url, { protocolVersion: 5, ...broker.platform, clientId: 'test-vehicles', reconnectPeriod: 0 });
    zone = await insertZone(t.ctx.db);
    p = await insertPartner(t.ctx.db);
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    for (const i of ingests) await i.stop().catch(() => undefined);
    await publisher?.endAsync(true);
    await broker?.close();
  });

  describe('one ingest process', () => {
    let ingest: Ingest;
    before(async () => {
      ingest = await run('one');
    });
    after(() => ingest.stop());

    it('stores a position as the vehicle’s current state and history, and the partner API shows it', async () => {
      const v = await insertVehicle(t.ctx.db, zone, { battery: 80 });
      // after the vehicle row's last_seen_at (its insert): a report older than what the platform
      // knows of the vehicle goes to history only (the next test)
      const ts = Date.now() + 1000;
      await publish(telemetryTopic(v.id), { ts, lat: zone.lat + 0.001, lng: zone.lng + 0.001, battery_percent: 77, speed_kph: 12 });
      await waitFor('the position stored', async () => (await telemetryCount(v.id)) === 1);
      const row = await t.ctx.db.one<{ battery_percent: number; lat: number; seen: Date; moved: Date }>(
        'SELECT battery_percent, ST_Y(location) AS lat, last_seen_at AS seen, last_moved_at AS moved FROM vehicles WHERE id = $1',
        [v.id],
      );
      expect(row.battery_percent).to.equal(77);
      expect(row.lat).to.be.closeTo(zone.lat + 0.001, 1e-9);
      expect(row.seen.getTime()).to.equal(ts);
      expect(row.moved.getTime(), 'it moved ~130 m').to.equal(ts);
      const res = await request(buildApp(t.ctx).callback()).get(`/v1/vehicles/id/${v.id}`).set('X-Auth-Token', p.key);
      expect(res.status).to.equal(200);
      expect(res.body, JSON.stringify(res.body)).to.have.nested.property('data[0].attributes.batteryLevel', 77);
    });

    it('stores a redelivered report once, and a late one in history only', async () => {
      const v = await insertVehicle(t.ctx.db, zone);
      const ts = Date.now() + 1000;
      const report = { ts, lat: zone.lat, lng: zone.lng + 0.002, battery_percent: 70 };
      const before = await counter(metrics.ingestReports, { channel: 'telemetry', outcome: 'duplicate' });
      await publish(telemetryTopic(v.id), report);
      await publish(telemetryTopic(v.id), report);
      await waitFor('both handled', async () => (await counter(metrics.ingestReports, { channel: 'telemetry', outcome: 'duplicate' })) > before);
      expect(await telemetryCount(v.id)).to.equal(1);
      // a report taken before the current one: history, not the current state
      await publish(telemetryTopic(v.id), { ts: ts - 60_000, lat: zone.lat + 0.01, lng: zone.lng, battery_percent: 90 });
      await waitFor('the late report stored', async () => (await telemetryCount(v.id)) === 2);
      const row = await t.ctx.db.one<{ battery_percent: number; seen: Date }>('SELECT battery_percent, last_seen_at AS seen FROM vehicles WHERE id = $1', [
        v.id,
      ]);
      expect(row).to.deep.equal({ battery_percent: 70, seen: new Date(ts) });
    });

    it('a report that arrives late marks the published hour it falls in dirty, as late data is', async () => {
      const v = await insertVehicle(t.ctx.db, zone);
      // an hour of this zone published two hours ago: its telemetry-sourced files (hourly-feed catalogue)
      const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000);
      await t.ctx.db.query(
        `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes, published_at)
         SELECT c.feed, c.version, $1, $2::timestamptz AT TIME ZONE 'UTC', 'published', 'k', 's', 0, 0, now()
           FROM hourly_feeds c WHERE c.source = 'telemetry'`,
        [zone.id, hour],
      );
      const dirty = async () => (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM feed_publications WHERE scope = $1 AND dirty`, [zone.id])).n;
      expect(await dirty()).to.equal(0);
      await publish(telemetryTopic(v.id), { ts: hour.getTime() + 20 * 60_000, lat: zone.lat, lng: zone.lng, battery_percent: 64 });
      await waitFor('the late report stored', async () => (await telemetryCount(v.id)) === 1);
      const published = (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM feed_publications WHERE scope = $1`, [zone.id])).n;
      expect(published, 'the catalogue has telemetry-sourced files').to.be.greaterThan(0);
      expect(await dirty()).to.equal(published);
    });

    it('counts every kind of bad input by reason, drops it and goes on with the stream', async () => {
      const v = await insertVehicle(t.ctx.db, zone);
      const unknown = '00000000-0000-4000-8000-000000000001';
      const now = Date.now();
      const bad: Array<[string, string, unknown]> = [
        ['malformed_json', telemetryTopic(v.id), '{"ts": 1,'],
        ['schema', telemetryTopic(v.id), { ts: now, lat: 91, lng: 13, battery_percent: 50 }],
        ['schema', telemetryTopic(v.id), { ts: now, lat: 52, lng: 13, battery_percent: 101 }],
        ['schema', stateTopic(v.id), { ts: now, locked: 'yes' }],
        ['impossible_position', telemetryTopic(v.id), { ts: now, lat: 0, lng: 0, battery_percent: 50 }],
        ['future', telemetryTopic(v.id), { ts: now + 3_600_000, lat: 52, lng: 13, battery_percent: 50 }],
        ['too_old', telemetryTopic(v.id), { ts: now - 30 * 86_400_000, lat: 52, lng: 13, battery_percent: 50 }],
        ['unknown_vehicle', telemetryTopic(unknown), { ts: now, lat: 52, lng: 13, battery_percent: 50 }],
        ['topic', `vehicles/not-a-uuid/telemetry`, { ts: now, lat: 52, lng: 13, battery_percent: 50 }],
      ];
      const before = new Map<string, number>();
      for (const [reason] of bad) before.set(reason, await counter(metrics.ingestRejected, { reason }));
      for (const [, topic, body] of bad) await publish(topic, body);
      // the stream goes on: a good report after the bad ones is stored
      await publish(telemetryTopic(v.id), { ts: now, lat: zone.lat, lng: zone.lng, battery_percent: 60 });
      await waitFor('the good report stored', async () => (await telemetryCount(v.id)) === 1);
      await waitFor(
        'the unknown vehicle counted',
        async () => (await counter(metrics.ingestRejected, { reason: 'unknown_vehicle' })) > before.get('unknown_vehicle')!,
      );
      const expected = new Map<string, number>();
      for (const [reason] of bad) expected.set(reason, (expected.get(reason) ?? 0) + 1);
      for (const [reason, n] of expected) expect(await counter(metrics.ingestRejected, { reason }), reason).to.equal(before.get(reason)! + n);
      const stored = await t.ctx.db.one<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1::uuid', [unknown]);
      expect(stored.n).to.equal(0);
    });

    it('with its own credentials a vehicle’s reports are stored, and what it publishes as another vehicle never reaches the database', async () => {
      const a = await insertVehicle(t.ctx.db, zone);
      const b = await insertVehicle(t.ctx.db, zone);
      await broker.addVehicle(a.id, `pw-${a.id}`);
      const va = await mqtt.connectAsync(broker.url, { protocolVersion: 5, username: a.id, password: `pw-${a.id}`, reconnectPeriod: 0 });
      try {
        const ts = Date.now() + 500;
        // as B: the broker refuses it (PUBACK 135, not authorised)
        const refused = await va
          .publishAsync(telemetryTopic(b.id), JSON.stringify({ ts, lat: zone.lat, lng: zone.lng, battery_percent: 11 }), { qos: QOS })
          .then(
            (packet) => (packet as { reasonCode?: number } | undefined)?.reasonCode,
            (err: { code?: number }) => err.code,
          );
        expect(refused).to.equal(135);
        await va.publishAsync(telemetryTopic(a.id), JSON.stringify({ ts, lat: zone.lat, lng: zone.lng, battery_percent: 42 }), { qos: QOS });
        await waitFor('A’s own report stored', async () => (await telemetryCount(a.id)) === 1);
        expect(await telemetryCount(b.id), 'nothing of B came from A').to.equal(0);
      } finally {
        await va.endAsync(true);
      }
    });

    it('refuses a vehicle’s flood beyond its rate, keeps its first reports and the others’', async () => {
      const v = await insertVehicle(t.ctx.db, zone);
      const other = await insertVehicle(t.ctx.db, zone);
      const before = await counter(metrics.ingestRejected, { reason: 'flood' });
      const limit = t.ctx.config.ingest.maxReportsPerMinute;
      const now = Date.now() - 10_000;
      await Promise.all(
        Array.from({ length: limit + 20 }, (_, i) => publish(telemetryTopic(v.id), { ts: now + i, lat: zone.lat, lng: zone.lng, battery_percent: 60 })),
      );
      await publish(telemetryTopic(other.id), { ts: now, lat: zone.lat, lng: zone.lng, battery_percent: 60 });
      await waitFor('the other vehicle stored', async () => (await telemetryCount(other.id)) === 1);
      await waitFor('the flood counted', async () => (await counter(metrics.ingestRejected, { reason: 'flood' })) >= before + 20);
      expect(await telemetryCount(v.id)).to.be.within(limit, limit + 1);
    });

    it('applies state reports and records the MDS events they imply: battery low and charged, a fault and its repair', async () => {
      const v = await insertVehicle(t.ctx.db, zone, { battery: 60 });
      const state = async () =>
        t.ctx.db.one<{ mds_state: string; status: string; locked: boolean; faults: string[] }>(
          'SELECT mds_state, status, locked, faults FROM vehicles WHERE id = $1',
          [v.id],
        );
      const lastEvent = async () =>
        (await t.ctx.db.maybeOne<{ event_types: string[] }>('SELECT event_types FROM events WHERE device_id = $1 ORDER BY ts DESC LIMIT 1', [v.id]))
          ?.event_types;
      const base = Date.now() + 100;
      // unlocked by hand (a vendor's service app): the lock follows the vehicle
      await publish(stateTopic(v.id), { ts: base, locked: false, faults: [] });
      await waitFor('unlocked', async () => !(await state()).locked);
      // a fault takes it out of service; its repair brings it back
      await publish(stateTopic(v.id), { ts: base + 1000, locked: true, faults: ['brake_sensor'] });
      await waitFor('maintenance', async () => (await state()).mds_state === 'non_operational');
      expect(await lastEvent()).to.deep.equal(['maintenance']);
      expect((await state()).status).to.equal('unavailable');
      await publish(stateTopic(v.id), { ts: base + 2000, locked: true, faults: [] });
      await waitFor('back after the repair', async () => (await state()).mds_state === 'available');
      expect(await state()).to.include({ status: 'ready' });
      // below the zone's minimum (15 %) the vehicle reports battery_low; charged, it is back
      await publish(telemetryTopic(v.id), { ts: base + 3000, lat: zone.lat, lng: zone.lng, battery_percent: 9 });
      await waitFor('battery low', async () => (await state()).mds_state === 'non_operational');
      expect(await lastEvent()).to.deep.equal(['battery_low']);
      await publish(telemetryTopic(v.id), { ts: base + 4000, lat: zone.lat, lng: zone.lng, battery_percent: 95 });
      await waitFor('charged', async () => (await state()).mds_state === 'available');
      expect(await lastEvent()).to.deep.equal(['battery_charged']);
      // an older state report changes nothing
      await publish(stateTopic(v.id), { ts: base + 500, locked: false, faults: ['old'] });
      await publish(stateTopic(v.id), { ts: base + 5000, locked: true, faults: [] });
      await waitFor('the newest state applied', async () => {
        const r = await t.ctx.db.one<{ at: Date }>('SELECT state_reported_at AS at FROM vehicles WHERE id = $1', [v.id]);
        return r.at.getTime() === base + 5000;
      });
      expect(await state()).to.deep.include({ locked: true, faults: [] });
    });
  });

  it('two ingest processes split the stream, and store every report once', async () => {
    const [a, b] = [await run('split-a'), await run('split-b')];
    const vehicles = await Promise.all(Array.from({ length: 20 }, () => insertVehicle(t.ctx.db, zone)));
    const base = Date.now() - 60_000;
    await Promise.all(
      vehicles.flatMap((v, i) =>
        Array.from({ length: 20 }, (_, k) => publish(telemetryTopic(v.id), { ts: base + k * 100 + i, lat: zone.lat, lng: zone.lng, battery_percent: 50 })),
      ),
    );
    const ids = vehicles.map((v) => v.id);
    await waitFor(
      'all 400 stored',
      async () => (await t.ctx.db.one<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = ANY ($1::uuid[])', [ids])).n === 400,
    );
    expect(a.totals.received + b.totals.received).to.equal(400);
    expect(a.totals.received, 'a took part').to.be.greaterThan(50);
    expect(b.totals.received, 'b took part').to.be.greaterThan(50);
    await a.stop();
    await b.stop();
  });

  it('an ingest process SIGKILLed mid-stream loses nothing: its successor resumes the session', async function () {
    this.timeout(120_000);
    const vehicles = await Promise.all(Array.from({ length: 50 }, () => insertVehicle(t.ctx.db, zone)));
    const ids = vehicles.map((v) => v.id);
    const stored = async () => (await t.ctx.db.one<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = ANY ($1::uuid[])', [ids])).n;
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: t.database.url,
      MQTT_URL: broker.url,
      MQTT_USERNAME: broker.platform.username,
      MQTT_PASSWORD: broker.platform.password,
      INGEST_ID: 'killed',
      INGEST_BATCH_MAX: '100',
      INGEST_METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    };
    const spawnIngest = () => {
      const proc: ChildProcess = spawn(process.execPath, [entry('ingest')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(proc);
      let out = '';
      proc.stdout!.on('data', (d) => (out += String(d)));
      proc.stderr!.on('data', (d) => (out += String(d)));
      return { proc, running: () => waitFor('the ingest running', () => out.includes('ingest running'), 20_000), out: () => out };
    };
    const first = spawnIngest();
    await first.running();
    // 5,000 reports as fast as the broker takes them
    const total = 5000;
    const base = Date.now() - 600_000;
    const sending = (async () => {
      for (let k = 0; k < total / ids.length; k++) {
        // one report every 2 s of each vehicle's time (a riding vehicle reports every 10 s)
        await Promise.all(ids.map((id, i) => publish(telemetryTopic(id), { ts: base + k * 2000 + i, lat: zone.lat, lng: zone.lng, battery_percent: 50 })));
      }
    })();
    await waitFor('the first batches stored', async () => (await stored()) >= 500, 30_000, 20);
    first.proc.kill('SIGKILL');
    const killedAt = await stored();
    await sending;
    expect(killedAt, 'killed mid-stream').to.be.lessThan(total);
    const second = spawnIngest();
    await second.running();
    await waitFor('every report stored', async () => (await stored()) >= total, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${killedAt} before the kill, ${total} sent; the successor said:\n${second.out().slice(-3000)}`);
    });
    // and none twice (the unique index would refuse it; the count says so too)
    await new Promise((r) => setTimeout(r, 500));
    expect(await stored()).to.equal(total);
    second.proc.kill('SIGTERM');
    await new Promise((r) => second.proc.once('exit', r));
  });
});
