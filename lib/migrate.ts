/**
 * Forward-only migrations from `sql/migrations/NNNNNN_name.sql`. All of them run under one advisory
 * lock (several processes starting at once migrate once), each in its own transaction, and the
 * sha256 of every applied file is recorded: an edited applied migration is refused, not re-run.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { SQL_DIR } from './paths.js';

const LOCK_KEY = 7_305_001; // arbitrary, stable: the migration lock of this project

export interface Migration {
  id: number;
  name: string;
  sql: string;
  sha256: string;
}

export class MigrationError extends Error {}

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

/** Applies pending migrations; throws MigrationError if an applied one was changed or removed. */
export async function migrate(connectionString: string, migrations = readMigrations()): Promise<MigrateResult> {
  const client = new pg.Client({ connectionString, application_name: 'migrate' });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
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
    return { applied, current: migrations.at(-1)?.id ?? 0 };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/** True when every migration in the folder is applied with the same hash (readiness check). */
export async function migrationsCurrent(db: { many: (q: string) => Promise<any[]> }, migrations = readMigrations()): Promise<boolean> {
  const rows = await db.many('SELECT id, sha256 FROM schema_migrations ORDER BY id');
  return rows.length === migrations.length && migrations.every((m, i) => rows[i].id === m.id && rows[i].sha256 === m.sha256);
}
