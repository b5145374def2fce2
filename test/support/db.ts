/**
 * Test databases: one migrated template per set of migrations, built once per machine, and a fresh
 * clone of it for every test file (`CREATE DATABASE … TEMPLATE`, a file copy: milliseconds, not a
 * schema rebuild). Real Postgres + PostGIS, never a mock.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { readMigrations, migrate } from '../../lib/migrate.js';
import { ROOT } from '../../lib/paths.js';
import { HOURLY_FEEDS } from '../../lib/feeds/publications.js';
import { join } from 'node:path';

let cachedAdmin: string | undefined;

/** URL of a database on the test server with the right to create databases. */
export function serverUrl(): string {
  if (cachedAdmin) return cachedAdmin;
  const explicit = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  cachedAdmin = explicit ?? execFileSync(join(ROOT, 'scripts', 'pg.sh'), ['ensure'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return cachedAdmin;
}

export function urlFor(database: string): string {
  const u = new URL(serverUrl());
  u.pathname = `/${database}`;
  return u.toString();
}

export function templateName(): string {
  const h = createHash('sha256');
  for (const m of readMigrations()) h.update(m.sha256);
  // the runner also syncs hourly_feeds from HOURLY_FEEDS (lib/migrate.ts): a changed catalogue needs its own template
  h.update(JSON.stringify(HOURLY_FEEDS));
  return `platform_tpl_${h.digest('hex').slice(0, 12)}`;
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: urlFor('postgres') });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Creates the migrated template database if this set of migrations has none yet. */
export async function ensureTemplate(): Promise<string> {
  const name = templateName();
  await withAdmin(async (c) => {
    await c.query('SELECT pg_advisory_lock(7305002)');
    try {
      const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [name]);
      if (rowCount) return;
      await c.query(`DROP DATABASE IF EXISTS "${name}"`);
      await c.query(`CREATE DATABASE "${name}"`);
      await migrate(urlFor(name));
      await c.query(`ALTER DATABASE "${name}" WITH is_template = true ALLOW_CONNECTIONS = false`);
    } finally {
      await c.query('SELECT pg_advisory_unlock(7305002)');
    }
  });
  return name;
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh database cloned from the migrated template. */
export async function cloneDatabase(): Promise<TestDatabase> {
  const template = await ensureTemplate();
  const name = `platform_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return {
    name,
    url: urlFor(name),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

/** An empty database (no migrations), for the migration tests. */
export async function emptyDatabase(): Promise<TestDatabase> {
  const name = `platform_empty_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}"`));
  return {
    name,
    url: urlFor(name),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

/**
 * Drops the databases that test runs which have ended left behind (a failed file keeps its own for
 * inspection, test/support/context.ts): `platform_test_{pid}_…` of a pid that no longer runs. A
 * run still going on the same cluster keeps its databases.
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
  for (const name of gone) await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  return gone;
}
