/**
 * Forward-only migrations from `sql/migrations/NNNNNN_name.sql`. All of them run under one advisory
 * lock (several processes starting at once migrate once), each in its own transaction, and the
 * sha256 of every applied file is recorded: an edited applied migration is refused, not re-run.
 *
 * The hourly-feed catalogue is declared once, in HOURLY_FEEDS (lib/feeds/publications.ts), and every
 * caller passes it in (the runner sits below the feeds). Under the same lock, after the migrations,
 * the runner makes the table hourly_feeds equal to it (migration 000160), so the triggers and sweeps
 * that join the table follow the declaration without a migration per feed. It is a step of the
 * runner rather than of a migration because a migration is applied once and hash-checked, while the
 * declaration changes with the code.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { SQL_DIR } from './paths.js';

const LOCK_KEY = 7_305_001; // arbitrary, stable: the migration lock of this project
/** The session setting through which migration 000160 reads the catalogue before its first sync. */
const CATALOGUE_SETTING = 'platform.hourly_feeds';

export interface Migration {
  id: number;
  name: string;
  sql: string;
  sha256: string;
}

export class MigrationError extends Error {}

/** One row of the hourly-feed catalogue as the table hourly_feeds holds it (an entry of HOURLY_FEEDS has these and more). */
export interface CatalogueRow {
  readonly id: string;
  readonly feed: string;
  readonly version: string;
  readonly source: string;
  readonly segment: string;
  readonly family: string;
}

export function readMigrations(dir = join(SQL_DIR, 'migrations')): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{6}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => {
      const sql = readFileSync(join(dir, f), 'utf8');
      return { id: Number(f.slice(0, 6)), name: f.slice(7, -4), sql, sha256: createHash('sha256').update(sql).digest('hex') };
    });
}

export interface MigrateResult {
  applied: string[];
  current: number;
}

/** The catalogue's rows as hourly_feeds stores them, by id in code-point order (COLLATE "C" in SQL). */
function catalogueRows(feeds: readonly CatalogueRow[]): CatalogueRow[] {
  return feeds
    .map(({ id, feed, version, source, segment, family }) => ({ id, feed, version, source, segment, family }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Applies pending migrations, then syncs hourly_feeds with `feeds` (HOURLY_FEEDS); throws MigrationError if an
 * applied migration was changed or removed, or if the sync fails (a feed removed from the
 * declaration that still has publications).
 */
export async function migrate(connectionString: string, feeds: readonly CatalogueRow[], migrations = readMigrations()): Promise<MigrateResult> {
  const client = new pg.Client({ connectionString, application_name: 'migrate' });
  await client.connect();
  const declared = JSON.stringify(catalogueRows(feeds));
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query('SELECT set_config($1, $2, false)', [CATALOGUE_SETTING, declared]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY, name text NOT NULL, sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ id: number; name: string; sha256: string }>('SELECT id, name, sha256 FROM schema_migrations ORDER BY id');
    const byId = new Map(migrations.map((m) => [m.id, m]));
    for (const r of rows) {
      const m = byId.get(r.id);
      if (!m) throw new MigrationError(`applied migration ${r.id} (${r.name}) is missing from sql/migrations`);
      if (m.sha256 !== r.sha256) throw new MigrationError(`applied migration ${r.id} (${r.name}) was edited after it was applied; add a new migration instead`);
    }
    const done = new Set(rows.map((r) => r.id));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (id, name, sha256) VALUES ($1, $2, $3)', [m.id, m.name, m.sha256]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new MigrationError(`migration ${m.id} (${m.name}) failed: ${(err as Error).message}`);
      }
      applied.push(`${String(m.id).padStart(6, '0')}_${m.name}`);
    }
    // a database migrated only up to a set that predates the catalogue has no table to sync
    const { rows: sync } = await client.query<{ present: boolean }>(`SELECT to_regprocedure('sync_hourly_feeds(jsonb)') IS NOT NULL AS present`);
    if (sync[0]?.present) {
      try {
        await client.query('SELECT sync_hourly_feeds($1::jsonb)', [declared]);
      } catch (err) {
        throw new MigrationError(`hourly feed catalogue (HOURLY_FEEDS) could not be synced to hourly_feeds: ${(err as Error).message}`);
      }
    }
    return { applied, current: migrations.at(-1)?.id ?? 0 };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/**
 * True when every migration in the folder is applied with the same hash and hourly_feeds holds
 * `feeds`, this process's HOURLY_FEEDS (readiness check): a process whose catalogue the database lacks would fail
 * on the foreign key of feed_publications at its first publication of the new feed.
 */
export async function migrationsCurrent(
  db: { many: (q: string) => Promise<Record<string, unknown>[]> },
  feeds: readonly CatalogueRow[],
  migrations = readMigrations(),
): Promise<boolean> {
  const rows = await db.many('SELECT id, sha256 FROM schema_migrations ORDER BY id');
  if (rows.length !== migrations.length || !migrations.every((m, i) => rows[i].id === m.id && rows[i].sha256 === m.sha256)) return false;
  const [table] = await db.many(`SELECT to_regclass('hourly_feeds') IS NOT NULL AS present`);
  if (!table?.present) return true;
  const held = await db.many('SELECT id, feed, version, source, segment, family FROM hourly_feeds ORDER BY id COLLATE "C"');
  return JSON.stringify(held) === JSON.stringify(catalogueRows(feeds));
}
