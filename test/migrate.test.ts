import { expect } from 'chai';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { migrate, migrationsCurrent, MigrationError, readMigrations, type Migration } from '../lib/core/migrate.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { emptyDatabase, type TestDatabase } from './support/db.js';

async function query<T extends pg.QueryResultRow = any>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

function edited(m: Migration, sql: string): Migration {
  return { ...m, sql, sha256: createHash('sha256').update(sql).digest('hex') };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('migrations', function () {
  this.timeout(120000);
  const migrations = readMigrations();
  const names = migrations.map((m) => `${String(m.id).padStart(6, '0')}_${m.name}`);
  const dbs: TestDatabase[] = [];
  const fresh = async () => {
    const db = await emptyDatabase();
    dbs.push(db);
    return db;
  };
  after(async () => {
    for (const db of dbs) await db.drop();
  });

  it('the folder holds numbered, uniquely named migrations in order', () => {
    expect(migrations.length).to.be.greaterThan(0);
    expect(migrations[0].id).to.equal(1);
    const ids = migrations.map((m) => m.id);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));
  });

  describe('on one empty database', () => {
    let db: TestDatabase;
    before(async () => {
      db = await fresh();
    });

    it('applies every migration: postgis and the tables exist', async () => {
      const res = await migrate(db.url, HOURLY_FEEDS, migrations);
      expect(res.applied).to.deep.equal(names);
      expect(res.current).to.equal(migrations.at(-1)!.id);
      expect(await query(db.url, `SELECT extname FROM pg_extension WHERE extname = 'postgis'`)).to.have.length(1);
      const tables = (await query(db.url, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)).map((r) => r.tablename);
      expect(tables).to.include.members([
        'zones',
        'areas',
        'vehicles',
        'partners',
        'api_keys',
        'feed_clients',
        'rate_limit_counters',
        'users',
        'rentals',
        'events',
        'telemetry',
        'trips',
        'feed_publications',
        'gbfs_snapshots',
        'schema_migrations',
      ]);
      const recorded = await query(db.url, 'SELECT id, name, sha256 FROM schema_migrations ORDER BY id');
      expect(recorded).to.deep.equal(migrations.map((m) => ({ id: m.id, name: m.name, sha256: m.sha256 })));
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      try {
        expect(await migrationsCurrent({ many: async (sql: string) => (await pool.query(sql)).rows }, HOURLY_FEEDS, migrations)).to.equal(true);
      } finally {
        await pool.end();
      }
    });

    it('applies nothing when run again', async () => {
      const res = await migrate(db.url, HOURLY_FEEDS, migrations);
      expect(res.applied).to.deep.equal([]);
      expect(await query(db.url, 'SELECT count(*)::int AS n FROM schema_migrations')).to.deep.equal([{ n: migrations.length }]);
    });

    it('refuses an applied migration whose file changed, and one that disappeared', async () => {
      const changed = [edited(migrations[0], migrations[0].sql + '\n-- edited\n'), ...migrations.slice(1)];
      const err = await rejection(migrate(db.url, HOURLY_FEEDS, changed));
      expect(err).to.be.instanceOf(MigrationError);
      expect(err.message).to.match(/was edited/);
      if (migrations.length > 1) {
        expect(await rejection(migrate(db.url, HOURLY_FEEDS, migrations.slice(0, -1)))).to.be.instanceOf(MigrationError);
      }
      expect(await rejection(migrate(db.url, HOURLY_FEEDS, []))).to.be.instanceOf(MigrationError);
    });

    it('rolls a failing migration back whole and records nothing', async () => {
      const broken = edited({ id: 999999, name: 'broken', sql: '', sha256: '' }, 'CREATE TABLE half_done (x int); SELECT 1 / 0;');
      const err = await rejection(migrate(db.url, HOURLY_FEEDS, [...migrations, broken]));
      expect(err).to.be.instanceOf(MigrationError);
      expect(err.message).to.match(/999999 \(broken\) failed/);
      expect(await query(db.url, `SELECT to_regclass('half_done') AS t`)).to.deep.equal([{ t: null }]);
      expect(await query(db.url, 'SELECT id FROM schema_migrations WHERE id = 999999')).to.deep.equal([]);
      // and the database is still usable by the real set
      expect((await migrate(db.url, HOURLY_FEEDS, migrations)).applied).to.deep.equal([]);
    });
  });

  it('two concurrent runs on one empty database apply each migration once', async () => {
    const db = await fresh();
    const results = await Promise.all([
      migrate(db.url, HOURLY_FEEDS, migrations),
      migrate(db.url, HOURLY_FEEDS, migrations),
      migrate(db.url, HOURLY_FEEDS, migrations),
    ]);
    const applied = results.flatMap((r) => r.applied);
    expect(applied).to.deep.equal(names);
    expect(results.filter((r) => r.applied.length > 0)).to.have.length(1);
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM schema_migrations')).to.deep.equal([{ n: migrations.length }]);
  });
});
