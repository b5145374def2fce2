/**
 * Time-partitioned history (migration 000101, publisher/jobs/history.ts): partitions created ahead by
 * the maintenance job, a write for a day without a partition kept in the DEFAULT partition and moved
 * into its own partition on demand, the history guard still refusing row-level rewrites, and the
 * late-data trigger still firing through the partitioned tables.
 */
import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTelemetry, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { maintainPartitions } from '../publisher/jobs/history.js';
import pg from 'pg';
import { sql } from '../lib/core/sql/typed.js';

const NOW = '2026-11-21T12:00:00Z';

describe('history: time partitions', function () {
  this.timeout(120000);
  const t = useTestContext({ now: NOW, config: { PARTITIONS_AHEAD_DAYS: '3' } });
  let zone: string;
  let vehicle: string;

  const partitionsOf = async (parent: string) =>
    (
      await t.ctx.db.many<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`,
        [parent],
      )
    ).map((r) => r.name);
  const homeOf = async (table: string, where: string, params: unknown[]) =>
    (await t.ctx.db.many<{ part: string }>(`SELECT tableoid::regclass::text AS part FROM ${table} WHERE ${where}`, params)).map((r) => r.part);

  before(async () => {
    zone = await feedZone(t.ctx.db);
    vehicle = (await feedVehicle(t.ctx.db, zone)).id;
  });

  it('creates the partitions of today and the configured days ahead, once', async () => {
    const first = await maintainPartitions(t.ctx);
    for (const parent of ['events', 'telemetry', 'trips']) {
      const parts = await partitionsOf(parent);
      for (const d of ['20261121', '20261122', '20261123', '20261124']) expect(parts).to.include(`${parent}_p${d}`);
      expect(parts).to.include(`${parent}_default`);
    }
    expect(first.ahead).to.be.at.most(12);
    const again = await maintainPartitions(t.ctx);
    expect(again).to.deep.equal({ ahead: 0, onDemand: 0 });
  });

  it('keeps a write for a day without a partition in DEFAULT, then moves it into its own partition', async () => {
    const ts = new Date('2025-03-04T05:06:07Z');
    const id = await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts, eventTypes: ['comms_lost'], state: 'non_contactable' });
    await feedTelemetry(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts });
    const trip = await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: new Date('2025-03-04T05:00:00Z'), end: ts });
    expect(await homeOf('events', 'event_id = $1', [id])).to.deep.equal(['events_default']);
    expect(await homeOf('trips', 'trip_id = $1', [trip])).to.deep.equal(['trips_default']);

    const run = await maintainPartitions(t.ctx);
    expect(run.onDemand).to.equal(3);
    expect(await homeOf('events', 'event_id = $1', [id])).to.deep.equal(['events_p20250304']);
    expect(await homeOf('telemetry', 'device_id = $1 AND ts = $2', [vehicle, ts])).to.deep.equal(['telemetry_p20250304']);
    expect(await homeOf('trips', 'trip_id = $1', [trip])).to.deep.equal(['trips_p20250304']);
    const left = await t.ctx.db.one(
      `SELECT (SELECT count(*) FROM events_default) + (SELECT count(*) FROM telemetry_default) + (SELECT count(*) FROM trips_default) AS n`,
    );
    expect(Number(left.n)).to.equal(0);
  });

  it('still refuses UPDATE and DELETE of events and telemetry, in any partition', async () => {
    for (const sql of [
      `DELETE FROM events WHERE device_id = '${vehicle}'`,
      `UPDATE events SET battery_percent = 1 WHERE device_id = '${vehicle}'`,
      `DELETE FROM telemetry WHERE device_id = '${vehicle}'`,
      `DELETE FROM events_p20250304`,
      `DELETE FROM events_default`,
    ]) {
      // events_default is empty now: give the guard a row to refuse there too
      if (sql.includes('events_default')) {
        await t.ctx.db.query(`ALTER TABLE events DETACH PARTITION events_p20250304`);
        await t.ctx.db.query(
          `INSERT INTO events_default (device_id, zone_id, event_types, vehicle_state, ts, location)
                              VALUES ($1, $2, '{comms_lost}', 'non_contactable', '2025-03-05T00:00:00Z', ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326))`,
          [vehicle, zone],
        );
      }
      const err = await t.ctx.db.query(sql).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err, sql).to.be.instanceOf(Error);
      expect(err!.message, sql).to.match(/append-only/);
    }
  });

  it('late data still marks the published files of its hour dirty through the partitioned table', async () => {
    await t.ctx.db.query(
      `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes)
       VALUES ('mds_events', '2.0', $1, '2026-11-21T09:00', 'published', 'k', 's', 0, 0),
              ('mds_trips', '2.0', $1, '2026-11-21T09:00', 'published', 'k', 's', 0, 0)`,
      [zone],
    );
    await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: new Date('2026-11-21T09:30:00Z'), eventTypes: ['comms_lost'], state: 'non_contactable' });
    await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: new Date('2026-11-21T09:10:00Z'), end: new Date('2026-11-21T09:40:00Z') });
    const dirty = await t.ctx.db.many(`SELECT feed FROM feed_publications WHERE scope = $1 AND dirty ORDER BY feed`, [zone]);
    expect(dirty.map((r) => r.feed)).to.deep.equal(['mds_events', 'mds_trips']);
  });

  it("the publisher's hour queries read the hour's partition only, whatever the days held", async () => {
    const c = new pg.Client({ connectionString: t.database.url });
    await c.connect();
    try {
      await c.query(`SET plan_cache_mode = force_generic_plan`);
      for (const name of ['MdsTripsOfHour', 'MdsEventsOfHour', 'PubTripStats', 'PubEventStats'] as const) {
        await c.query(`PREPARE h AS ${sql(name).text}`);
        const res = await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE h('${zone}', '2026-11-22T09:00:00')`);
        await c.query('DEALLOCATE h');
        const walk = (n: any): any[] => [n, ...((n.Plans ?? []) as any[]).flatMap(walk)];
        const scanned = walk(res.rows[0]['QUERY PLAN'][0].Plan)
          .map((n) => n['Relation Name'] as string | undefined)
          .filter((r) => r && /^(events|trips)_/.test(r));
        expect(scanned, name).to.deep.equal([name.includes('Trip') ? 'trips_p20261122' : 'events_p20261122']);
      }
    } finally {
      await c.end();
    }
  });
});

describe('history: the publisher schedules the maintenance job', function () {
  this.timeout(120000);
  const t = useTestContext({ now: '2027-03-01T06:00:00Z', config: { PARTITIONS_AHEAD_DAYS: '2' } });

  it('creates the partitions ahead through its pg-boss singleton job, with two publishers running', async () => {
    const { startPublisher } = await import('../publisher/index.js');
    const a = await startPublisher(t.ctx, { cron: true, concurrency: 1, pollingIntervalSeconds: 0.5 });
    const b = await startPublisher(t.ctx, { cron: true, concurrency: 1, pollingIntervalSeconds: 0.5 });
    try {
      const want = ['events_p20270301', 'events_p20270302', 'events_p20270303', 'telemetry_p20270303', 'trips_p20270303'];
      const deadline = Date.now() + 60000;
      let have: string[] = [];
      while (Date.now() < deadline) {
        have = (await t.ctx.db.many<{ n: string }>(`SELECT relname AS n FROM pg_class WHERE relname = ANY ($1::text[])`, [want])).map((r) => r.n);
        if (have.length === want.length) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(have.sort()).to.deep.equal([...want].sort());
      const failed = await t.ctx.db.many(`SELECT output FROM pgboss.job WHERE name = 'history-maintenance' AND state = 'failed'`);
      expect(failed).to.deep.equal([]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
