/**
 * A zone's counters (zone_versions: version, gbfs_static, gbfs_status) move once per transaction
 * whatever the number of rows it changed (migration 000250, issue 41), at commit, only for the
 * changes the row triggers of 000140/000150 counted, and nothing a transaction left pending
 * outlives its rollback on a pooled connection.
 */
import { expect } from 'chai';
import type pg from 'pg';
import { useTestContext } from './support/context.js';
import { bulkVehicles, feedZone } from './support/feed-fixtures.js';

interface Counters {
  version: number;
  gbfs_static: number;
  gbfs_status: number;
}

describe('zone bumps per transaction', function () {
  this.timeout(60_000);
  const t = useTestContext();
  let zoneA: string;
  let zoneB: string;

  const counters = async (zone: string, q: pg.PoolClient | null = null): Promise<Counters> => {
    const query = `SELECT version::int, gbfs_static::int, gbfs_status::int FROM zone_versions WHERE zone_id = $1`;
    const rows = q ? (await q.query<Counters>(query, [zone])).rows : await t.ctx.db.many<Counters>(query, [zone]);
    return rows[0];
  };
  const moved = (before: Counters, after: Counters) => ({
    version: after.version - before.version,
    gbfs_static: after.gbfs_static - before.gbfs_static,
    gbfs_status: after.gbfs_status - before.gbfs_status,
  });
  /** Runs `fn` in a transaction on one connection of the pool, handed back to the pool afterwards. */
  const onOneConnection = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    const c = await t.ctx.db.pool.connect();
    try {
      return await fn(c);
    } finally {
      c.release();
    }
  };
  // a report of every listed vehicle of the zone: battery and last report, what version and gbfs_status count
  const REPORT = `UPDATE vehicles SET battery_percent = (battery_percent + 1) % 101, last_seen_at = last_seen_at + interval '1 second' WHERE zone_id = $1`;

  before(async () => {
    zoneA = await feedZone(t.ctx.db);
    zoneB = await feedZone(t.ctx.db);
    await bulkVehicles(t.ctx.db, zoneA, 2000, 'A');
    await bulkVehicles(t.ctx.db, zoneB, 50, 'B');
  });

  it('one transaction changing 2,000 vehicles of a zone, in one statement or in 40, moves each counter of it once, at commit', async () => {
    for (const statements of [1, 40]) {
      const before = await counters(zoneA);
      await onOneConnection(async (c) => {
        await c.query('BEGIN');
        if (statements === 1) await c.query(REPORT, [zoneA]);
        else
          for (let i = 0; i < statements; i++)
            await c.query(`${REPORT} AND id IN (SELECT id FROM vehicles WHERE zone_id = $1 ORDER BY code OFFSET $2 LIMIT 50)`, [zoneA, i * 50]);
        // deferred to the commit: neither the transaction nor another session sees a bump yet
        expect(await counters(zoneA, c), 'inside the transaction').to.deep.equal(before);
        expect(await counters(zoneA), 'another session, before the commit').to.deep.equal(before);
        await c.query('COMMIT');
      });
      expect(moved(before, await counters(zoneA)), `${statements} statement(s)`).to.deep.equal({ version: 1, gbfs_static: 0, gbfs_status: 1 });
    }
    expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM zone_bumps_pending`)).n, 'nothing left pending').to.equal(0);
  });

  it('a rolled-back transaction leaves nothing pending for the next one on the same pooled connection', async () => {
    const before = await counters(zoneA);
    const pid = await onOneConnection(async (c) => {
      await c.query('BEGIN');
      await c.query(REPORT, [zoneA]);
      await c.query('ROLLBACK');
      return (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    });
    expect(moved(before, await counters(zoneA))).to.deep.equal({ version: 0, gbfs_static: 0, gbfs_status: 0 });
    // the same session (the pool hands the released connection back) commits a change of zone B only
    const beforeB = await counters(zoneB);
    await onOneConnection(async (c) => {
      expect((await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid, 'same session').to.equal(pid);
      await c.query('BEGIN');
      await c.query(REPORT, [zoneB]);
      // a savepoint rolled back takes its pending zone with it
      await c.query('SAVEPOINT s');
      await c.query(REPORT, [zoneA]);
      await c.query('ROLLBACK TO SAVEPOINT s');
      await c.query('COMMIT');
    });
    expect(moved(before, await counters(zoneA)), 'zone A: nothing').to.deep.equal({ version: 0, gbfs_static: 0, gbfs_status: 0 });
    expect(moved(beforeB, await counters(zoneB)), 'zone B').to.deep.equal({ version: 1, gbfs_static: 0, gbfs_status: 1 });
    expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM zone_bumps_pending`)).n).to.equal(0);
  });

  it('bumps every zone a transaction changed, the old zone of a moved vehicle too', async () => {
    const [a, b] = [await counters(zoneA), await counters(zoneB)];
    await t.ctx.db.tx(async (tx) => {
      await tx.query(REPORT, [zoneA]);
      await tx.query(REPORT, [zoneB]);
    });
    expect(moved(a, await counters(zoneA))).to.deep.equal({ version: 1, gbfs_static: 0, gbfs_status: 1 });
    expect(moved(b, await counters(zoneB))).to.deep.equal({ version: 1, gbfs_static: 0, gbfs_status: 1 });

    const [a2, b2] = [await counters(zoneA), await counters(zoneB)];
    await t.ctx.db.query(`UPDATE vehicles SET zone_id = $2 WHERE id = (SELECT id FROM vehicles WHERE zone_id = $1 ORDER BY code LIMIT 1)`, [zoneB, zoneA]);
    expect(moved(b2, await counters(zoneB)), 'the zone it left').to.deep.equal({ version: 1, gbfs_static: 1, gbfs_status: 0 });
    expect(moved(a2, await counters(zoneA)), 'the zone it entered').to.deep.equal({ version: 1, gbfs_static: 1, gbfs_status: 0 });
  });

  it('changes the row triggers ignored bump nothing', async () => {
    const before = await counters(zoneA);
    // columns no list nor GBFS file shows
    await t.ctx.db.query(`UPDATE vehicles SET last_moved_at = last_moved_at + interval '1 second', license_plate = license_plate WHERE zone_id = $1`, [zoneA]);
    // a riding vehicle's telemetry: battery, place and last report of a vehicle that is not listed
    await t.ctx.db.query(
      `UPDATE vehicles SET status = 'riding', mds_state = 'on_trip' WHERE id IN (SELECT id FROM vehicles WHERE zone_id = $1 ORDER BY code LIMIT 10)`,
      [zoneA],
    );
    const riding = await counters(zoneA);
    expect(moved(before, riding), 'the rides starting').to.deep.equal({ version: 1, gbfs_static: 0, gbfs_status: 0 });
    await t.ctx.db.query(
      `UPDATE vehicles SET battery_percent = (battery_percent + 7) % 101, location = ST_Translate(location, 0.0001, 0), last_seen_at = now()
        WHERE zone_id = $1 AND status = 'riding'`,
      [zoneA],
    );
    // an update that changes nothing at all
    await t.ctx.db.query(`UPDATE vehicles SET code = code WHERE zone_id = $1`, [zoneA]);
    expect(moved(riding, await counters(zoneA))).to.deep.equal({ version: 0, gbfs_static: 0, gbfs_status: 0 });
  });

  it('prices, vehicle types and the zone row count as before; a zone deleted in the transaction is not bumped', async () => {
    const beforePrice = await counters(zoneB);
    await t.ctx.db.tx(async (tx) => {
      await tx.query(`INSERT INTO pricing (zone_id, vehicle_type_id, start_price, price_per_minute) VALUES ($1, 'feed-bike', 100, 20)`, [zoneB]);
      await tx.query(`UPDATE pricing SET price_per_minute = 25 WHERE zone_id = $1`, [zoneB]);
      await tx.query(`DELETE FROM pricing WHERE zone_id = $1`, [zoneB]);
    });
    expect(moved(beforePrice, await counters(zoneB)), 'a price added, changed and removed').to.deep.equal({ version: 1, gbfs_static: 1, gbfs_status: 0 });
    const before = await counters(zoneB);
    await t.ctx.db.query(`UPDATE zones SET name = name WHERE id = $1`, [zoneB]);
    expect(moved(before, await counters(zoneB)), 'the zone row').to.deep.equal({ version: 1, gbfs_static: 1, gbfs_status: 0 });
    const beforeType = await counters(zoneB);
    await t.ctx.db.query(`UPDATE vehicle_types SET name = name WHERE id = 'feed-scooter'`);
    expect(moved(beforeType, await counters(zoneB)), 'a vehicle type its vehicles have').to.deep.equal({ version: 1, gbfs_static: 1, gbfs_status: 0 });

    const gone = await feedZone(t.ctx.db);
    await t.ctx.db.tx(async (tx) => {
      await tx.query(`UPDATE zones SET name = 'renamed' WHERE id = $1`, [gone]);
      await tx.query(`DELETE FROM zones WHERE id = $1`, [gone]);
    });
    expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM zone_version_shards WHERE zone_id = $1`, [gone])).n).to.equal(0);
    expect((await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM zone_bumps_pending`)).n).to.equal(0);
  });

  it('SET CONSTRAINTS ALL IMMEDIATE bumps at the end of each statement, once per statement', async () => {
    const before = await counters(zoneA);
    await onOneConnection(async (c) => {
      await c.query('BEGIN');
      await c.query('SET CONSTRAINTS ALL IMMEDIATE');
      await c.query(REPORT, [zoneA]);
      expect(moved(before, await counters(zoneA, c)), 'after the first statement').to.deep.equal({ version: 1, gbfs_static: 0, gbfs_status: 1 });
      await c.query(REPORT, [zoneA]);
      await c.query('COMMIT');
    });
    expect(moved(before, await counters(zoneA))).to.deep.equal({ version: 2, gbfs_static: 0, gbfs_status: 2 });
  });
});
