/**
 * Types every named query in sql/queries/*.sql from the database itself: its parameters and result
 * rows, as Postgres describes them on a fresh clone of the migrated template (scripts/sql-types/template.ts:
 * keyed by the migrations' hash, on TEST_DATABASE_URL's or DATABASE_URL's server, else the embedded
 * cluster), written to lib/core/sql/queries.gen.ts. The clone also gets pg-boss's schema, which pg-boss
 * creates at run time rather than a migration, so the queries that read it (/metrics) are typed by
 * the pg-boss version installed. The same clone, before pg-boss's schema, gives the dump of the live
 * schema, sql/schema.sql (scripts/sql-types/schema.ts).
 *
 *   node --import tsx scripts/sql-types.ts          rewrite lib/core/sql/queries.gen.ts and sql/schema.sql
 *   node --import tsx scripts/sql-types.ts --check  exit 1, naming each query whose committed types
 *                                                   differ from what the database says, and saying so
 *                                                   of a stale sql/schema.sql (make typecheck, make test)
 *   --file PATH                                     another module to write or check (the tests' copy)
 *   --schema-file PATH                              another schema dump to write or check (the tests' copy)
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { getConstructionPlans } from 'pg-boss';
import { ROOT } from '../lib/core/paths.js';
import { PGBOSS_SCHEMA } from '../lib/publication/queue.js';
import { readQuerySources } from '../lib/core/sql/catalog.js';
import { describeQueries, differences, render } from './sql-types/generate.js';
import { cloneDatabase } from './sql-types/template.js';
import { dumpSchema, SCHEMA_FILE } from './sql-types/schema.js';

export const GENERATED = join(ROOT, 'lib', 'core', 'sql', 'queries.gen.ts');

/** The generated module for the current migrations and queries, and the dump of the schema they make. */
export async function generate(): Promise<{ module: string; schema: string }> {
  const db = await cloneDatabase();
  try {
    const schema = await dumpSchema(db.url);
    const client = new pg.Client({ connectionString: db.url, application_name: 'sql-types' });
    await client.connect();
    try {
      await client.query(getConstructionPlans(PGBOSS_SCHEMA));
      return { module: render(await describeQueries(client, readQuerySources())), schema };
    } finally {
      await client.end();
    }
  } finally {
    await db.drop();
  }
}

async function main(args: string[]): Promise<number> {
  let check = false;
  let file = GENERATED;
  let schemaFile = SCHEMA_FILE;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--check') check = true;
    else if (args[i] === '--file' && args[i + 1]) file = args[++i]!;
    else if (args[i] === '--schema-file' && args[i + 1]) schemaFile = args[++i]!;
    else {
      console.error(`usage: scripts/sql-types.ts [--check] [--file PATH] [--schema-file PATH] (unknown: ${args[i]})`);
      return 2;
    }
  }
  const shown = relative(ROOT, file);
  const shownSchema = relative(ROOT, schemaFile);
  const generated = await generate();
  const differ = differences(existsSync(file) ? readFileSync(file, 'utf8') : '', generated.module);
  const schemaStale = (existsSync(schemaFile) ? readFileSync(schemaFile, 'utf8') : '') !== generated.schema;
  if (!check) {
    if (differ.length) writeFileSync(file, generated.module);
    if (schemaStale) writeFileSync(schemaFile, generated.schema);
    console.log(differ.length ? `${shown}: ${differ.length} entr${differ.length === 1 ? 'y' : 'ies'} updated` : `${shown} is up to date`);
    console.log(schemaStale ? `${shownSchema} rewritten` : `${shownSchema} is up to date`);
    return 0;
  }
  if (differ.length) console.error(`${shown} disagrees with the database for: ${differ.join(', ')}`);
  if (schemaStale) console.error(`${shownSchema} is not the schema the migrations make`);
  if (!differ.length && !schemaStale) return 0;
  console.error('run: make sql-types');
  return 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      console.error(`sql-types: ${err.message}`);
      process.exit(1);
    },
  );
}
