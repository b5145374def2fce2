/**
 * Test databases: a fresh clone of the migrated template (scripts/sql-types/template.ts) for every test file,
 * real Postgres + PostGIS, never a mock; an empty one for the migration tests; and the sweep of those
 * that ended runs left behind.
 */
import { randomBytes } from 'node:crypto';
import { cloneDatabase, dropDatabase, ensureTemplate, serverUrl, urlFor, withAdmin, type ScratchDatabase } from '../../scripts/sql-types/template.js';

export { cloneDatabase, ensureTemplate, serverUrl };

export type TestDatabase = ScratchDatabase;

/** An empty database (no migrations), for the migration tests. */
export async function emptyDatabase(): Promise<TestDatabase> {
  const name = `platform_empty_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}"`));
  return { name, url: urlFor(name), drop: () => dropDatabase(name) };
}

/**
 * Drops the databases that test runs which have ended left behind (a failed file keeps its own for
 * inspection, test/support/context.ts): `platform_test_{pid}_…` of a pid that no longer runs, and
 * the replication slots of their standbys (`test_standby_{pid}_…`, test/support/replica.ts). A run
 * still going on the same cluster keeps its own.
 */
export async function dropLeftoverDatabases(): Promise<string[]> {
  const rows = await withAdmin((c) =>
    c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^platform_(test|empty)_[0-9]+_[0-9a-f]+$'`),
  );
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  };
  const gone = rows.rows.map((r) => r.datname).filter((name) => !alive(Number(name.split('_')[2])));
  for (const name of gone) await dropDatabase(name);
  // the replication slots of standbys whose test run died (test/support/replica.ts): they hold WAL
  const slots = await withAdmin((c) =>
    c.query<{ slot_name: string }>(`SELECT slot_name FROM pg_replication_slots WHERE slot_name ~ '^test_standby_[0-9]+_[0-9a-f]+$' AND NOT active`),
  );
  for (const { slot_name } of slots.rows) {
    if (alive(Number(slot_name.split('_')[2]))) continue;
    await withAdmin((c) => c.query('SELECT pg_drop_replication_slot($1)', [slot_name]));
    gone.push(slot_name);
  }
  return gone;
}
