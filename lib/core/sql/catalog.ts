/**
 * The query loader. The named queries as written: every `-- name: X` section of every `.sql` file in
 * `sql/queries/`, with the file it comes from. The runtime registry (`q`, below, which every
 * statement of lib/core/db.ts comes from) and the type generator
 * (scripts/sql-types.ts) read the same sections by the same rules, so a name the generator typed is
 * the statement the runner sends.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SQL_DIR } from '../paths.js';

export interface QuerySource {
  readonly name: string;
  /** the file's name inside `sql/queries/` */
  readonly file: string;
  /** the statement as sent to Postgres: the section after its name line, trailing `;` removed */
  readonly text: string;
}

/** Every named query in `dir`, files in name order and sections in file order; throws on a bad or repeated name. */
export function readQuerySources(dir = join(SQL_DIR, 'queries')): QuerySource[] {
  const seen = new Map<string, string>();
  const out: QuerySource[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()) {
    const src = readFileSync(join(dir, file), 'utf8');
    for (const part of src.split(/^--\s*name:\s*/m).slice(1)) {
      const nl = part.indexOf('\n');
      const name = part.slice(0, nl).trim();
      const text = part
        .slice(nl + 1)
        .trim()
        .replace(/;\s*$/, '');
      if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name)) throw new Error(`bad query name "${name}" in ${file}`);
      const before = seen.get(name);
      if (before) throw new Error(`query ${name} defined twice (${before}, ${file})`);
      seen.set(name, file);
      out.push({ name, file, text });
    }
  }
  return out;
}

/** A statement by its name: what the runner (lib/core/db.ts) prepares and sends. */
export interface NamedQuery {
  readonly name: string;
  readonly text: string;
}

let registry: Map<string, NamedQuery> | undefined;

/** The named query `name` from `sql/queries/*.sql`. Throws at first use if it does not exist. */
export function q(name: string): NamedQuery {
  registry ??= new Map(readQuerySources().map(({ name, text }) => [name, { name, text }]));
  const found = registry.get(name);
  if (!found) throw new Error(`no query named ${name} in sql/queries`);
  return found;
}
