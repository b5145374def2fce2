/**
 * From pg-boss 10 to 12 (migration 000240, lib/publication/queue.ts ensureQueues): pg-boss 12 cannot
 * migrate the schema pg-boss 10 left, so the migration keeps the republishes still waiting and drops
 * that schema; the first pg-boss 12 installs its own and the queue's owner sends them again. The old
 * schema here is the part of pg-boss 10's (schema version 24) that the migration reads: its version
 * table and its job table (pg-boss 10 src/plans.js, createTableVersion and createTableJob).
 */
import { expect } from 'chai';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { migrate, readMigrations } from '../lib/core/migrate.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { ensureQueues, HOUR_QUEUE, HOUR_QUEUE_OPTIONS, PGBOSS_SCHEMA } from '../lib/publication/queue.js';
import { emptyDatabase, type TestDatabase } from './support/db.js';

const PGBOSS_10 = `
  CREATE SCHEMA pgboss;
  CREATE TYPE pgboss.job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
  CREATE TABLE pgboss.version (version int PRIMARY KEY, maintained_on timestamptz, cron_on timestamptz, monitored_on timestamptz);
  INSERT INTO pgboss.version (version) VALUES (24);
  CREATE TABLE pgboss.job (
    id uuid NOT NULL DEFAULT gen_random_uuid(), name text NOT NULL, priority integer NOT NULL DEFAULT 0, data jsonb,
    state pgboss.job_state NOT NULL DEFAULT 'created', singleton_key text, created_on timestamptz NOT NULL DEFAULT now()
  );`;

describe('pg-boss 10 → 12: the republishes an operator queued survive the upgrade', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let client: pg.Client;
  const republish = { zone: 'berlin', hour: '2026-11-30T10', feedIds: ['mds-2.0-trips'], force: true };

  before(async () => {
    database = await emptyDatabase();
    await migrate(
      database.url,
      HOURLY_FEEDS,
      readMigrations().filter((m) => m.id < 240),
    );
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(PGBOSS_10);
    const job = `INSERT INTO pgboss.job (name, data, state) VALUES ($1, $2, $3)`;
    await client.query(job, [HOUR_QUEUE, republish, 'created']);
    // what the clocks derive again, and what ran already: not carried over
    await client.query(job, [HOUR_QUEUE, { zone: 'berlin', hour: '2026-11-30T11', feedIds: ['mds-2.0-trips'] }, 'created']);
    await client.query(job, [HOUR_QUEUE, { ...republish, hour: '2026-11-30T09' }, 'completed']);
  });
  after(async () => {
    await client?.end();
    await database?.drop();
  });

  it('the migration keeps the waiting republish and drops the old schema; ensureQueues sends it to pg-boss 12 once', async () => {
    // 000240 and whatever came after it (the database was migrated up to 000230)
    expect((await migrate(database.url, HOURLY_FEEDS)).applied[0]).to.equal('000240_pgboss_12');
    expect((await client.query(`SELECT to_regnamespace('pgboss') IS NULL AS gone`)).rows[0].gone).to.equal(true);
    expect((await client.query(`SELECT queue, data FROM pgboss_carryover`)).rows).to.deep.equal([{ queue: HOUR_QUEUE, data: republish }]);

    const db = new Db(database.url, createLogger('silent'));
    const boss = new PgBoss({ connectionString: database.url, schema: PGBOSS_SCHEMA, supervise: false, schedule: false });
    boss.on('error', () => undefined);
    try {
      await boss.start();
      await ensureQueues(db, boss, [HOUR_QUEUE_OPTIONS]);
      await ensureQueues(db, boss, [HOUR_QUEUE_OPTIONS]);
      const jobs = await client.query(`SELECT data, state FROM pgboss.job WHERE name = $1`, [HOUR_QUEUE]);
      expect(jobs.rows).to.deep.equal([{ data: republish, state: 'created' }]);
      expect((await client.query(`SELECT count(*)::int AS n FROM pgboss_carryover`)).rows[0].n).to.equal(0);
    } finally {
      await boss.stop({ graceful: false });
      await db.pool.end();
    }
  });

  it('on a database pg-boss never ran on, the migration changes nothing of pg-boss', async () => {
    const fresh = await emptyDatabase();
    try {
      await migrate(fresh.url, HOURLY_FEEDS);
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      try {
        expect((await c.query(`SELECT to_regnamespace('pgboss') IS NULL AS none, (SELECT count(*)::int FROM pgboss_carryover) AS kept`)).rows[0]).to.deep.equal(
          {
            none: true,
            kept: 0,
          },
        );
      } finally {
        await c.end();
      }
    } finally {
      await fresh.drop();
    }
  });
});
