/**
 * The migrated template: one database per set of migrations (and hourly-feed catalogue), migrated
 * once per server, and fresh clones of it (`CREATE DATABASE … TEMPLATE`, a file copy: milliseconds,
 * not a schema rebuild). The type generator (scripts/sql-types.ts) describes the named queries on a
 * clone; the tests (test/support/db.ts) run each file in one. The server is TEST_DATABASE_URL's or
 * DATABASE_URL's, else the embedded cluster (scripts/pg.sh).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { HOURLY_FEEDS } from '../../lib/feeds/publications.js';
import { migrate, readMigrations } from '../../lib/core/migrate.js';
import { ROOT } from '../../lib/core/paths.js';

/** Serialises template builds across processes on one server (two test runs, the generator beside them). */
const TEMPLATE_LOCK = 7305002;

let cachedAdmin: string | undefined;

/** URL of a database on the template's server with the right to create databases. */
export function serverUrl(): string {
  if (cachedAdmin) return cachedAdmin;
  const explicit = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  cachedAdmin = explicit ?? execFileSync(join(ROOT, 'scripts', 'pg.sh'), ['ensure'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return cachedAdmin;
}

/** URL of `database` on the template's server. */
export function urlFor(database: string): string {
  const u = new URL(serverUrl());
  u.pathname = `/${database}`;
  return u.toString();
}

/** The template's name: a hash of the migrations and of the hourly-feed catalogue. */
function templateName(): string {
  const h = createHash('sha256');
  for (const m of readMigrations()) h.update(m.sha256);
  // the runner also syncs hourly_feeds from HOURLY_FEEDS (lib/core/migrate.ts): a changed catalogue needs its own template
  h.update(JSON.stringify(HOURLY_FEEDS));
  return `platform_tpl_${h.digest('hex').slice(0, 12)}`;
}

/** Runs `fn` on a connection to the server's `postgres` database (CREATE and DROP DATABASE). */
export async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: urlFor('postgres') });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Creates the migrated template database if this set of migrations has none yet; its name. */
export async function ensureTemplate(): Promise<string> {
  const name = templateName();
  await withAdmin(async (c) => {
    await c.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [name]);
      if (rowCount) return;
      await c.query(`DROP DATABASE IF EXISTS "${name}"`);
      await c.query(`CREATE DATABASE "${name}"`);
      await migrate(urlFor(name), HOURLY_FEEDS);
      await c.query(`ALTER DATABASE "${name}" WITH is_template = true ALLOW_CONNECTIONS = false`);
    } finally {
      await c.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
  return name;
}

/** A database of its own on the template's server, dropped by the one who made it. */
export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh database cloned from the migrated template, named `platform_test_{pid}_…` so that one
 * left behind by a process that has ended is found and dropped (test/support/db.ts).
 */
export async function cloneDatabase(): Promise<ScratchDatabase> {
  const template = await ensureTemplate();
  const name = `platform_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return { name, url: urlFor(name), drop: () => dropDatabase(name) };
}

/** Drops `name` on the template's server, ending its sessions. */
export function dropDatabase(name: string): Promise<void> {
  return withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined);
}
