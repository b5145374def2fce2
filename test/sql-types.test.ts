/**
 * Typed SQL: the generated lib/core/sql/queries.gen.ts agrees with the migrated template (the check
 * `make typecheck` runs), and the generator follows the database: a renamed column, a dropped NOT
 * NULL or a changed type changes the generated types or stops the generator naming the query.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pg from 'pg';
import type { Queryable } from '../lib/core/db.js';
import { q } from '../lib/core/sql/catalog.js';
import { ROOT } from '../lib/core/paths.js';
import { readQuerySources, type QuerySource } from '../lib/core/sql/catalog.js';
import { describeQueries, differences, renderEntry, type QueryTypes } from '../scripts/sql-types/generate.js';
import { outerJoins, preservedReferences, provenNonNull } from '../scripts/sql-types/nullability.js';
import { sql, type ParamsOf, type RowOf } from '../lib/core/sql/typed.js';
import { cloneDatabase, type TestDatabase } from './support/db.js';

const CLI = join(ROOT, 'scripts', 'sql-types.ts');
const GENERATED = join(ROOT, 'lib', 'core', 'sql', 'queries.gen.ts');

function runCli(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env: process.env, encoding: 'utf8', timeout: 120000 });
}

const source = (name: string, text: string): QuerySource => ({ name, file: 'test.sql', text });

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

// compile-time checks, run by `tsc --noEmit`: a query's types come from the generated module
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
// and a query given as text yields rows of unknown columns, never `any`, unless its caller names a type
const _textRowOf = (db: Queryable) => db.one('SELECT 1 AS n');
type TextRow = Awaited<ReturnType<typeof _textRowOf>>;
const typeChecks: [
  Equal<RowOf<'PartnerUserExists'>, { exists: boolean }>,
  Equal<ParamsOf<'PartnerUserExists'>, [string | null, string | null]>,
  Equal<TextRow, Record<string, unknown>>,
] = [true, true, true];

describe('typed SQL (scripts/sql-types.ts, lib/core/sql)', function () {
  this.timeout(120000);

  describe('the committed types', () => {
    it('agree with the migrated template: --check exits 0', () => {
      const run = runCli(['--check']);
      expect(run.stderr, run.stderr).to.equal('');
      expect(run.status).to.equal(0);
    });

    it('--check exits 1 naming the query whose committed entry differs from the database', () => {
      const dir = mkdtempSync(join(tmpdir(), 'sql-types-'));
      try {
        const stale = join(dir, 'queries.gen.ts');
        const committed = readFileSync(GENERATED, 'utf8');
        // what a column renamed in the SQL but not regenerated looks like
        const edited = committed.replace(/( {2}PartnerUserExists: \{\n[\s\S]*?) {6}exists: boolean;/, '$1      user_exists: boolean;');
        expect(edited).to.not.equal(committed);
        writeFileSync(stale, edited);
        const run = runCli(['--check', '--file', stale]);
        expect(run.status).to.equal(1);
        expect(run.stderr).to.contain('disagrees with the database for: PartnerUserExists\n');
        expect(readFileSync(stale, 'utf8'), '--check does not write').to.equal(edited);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('--check exits 1 when sql/schema.sql is not the schema the migrations make, and never writes it', () => {
      const dir = mkdtempSync(join(tmpdir(), 'sql-schema-'));
      try {
        const stale = join(dir, 'schema.sql');
        const committed = readFileSync(join(ROOT, 'sql', 'schema.sql'), 'utf8');
        // the live body of a trigger function, as the dump shows it: the last migration's
        expect(committed).to.match(/CREATE FUNCTION public\.mark_trip_hours_dirty\(\) RETURNS trigger/);
        const edited = committed.replace('CREATE FUNCTION public.mark_trip_hours_dirty()', 'CREATE FUNCTION public.mark_trip_hours_dirtier()');
        writeFileSync(stale, edited);
        const run = runCli(['--check', '--schema-file', stale]);
        expect(run.status).to.equal(1);
        expect(run.stderr).to.contain('sql/schema.sql is not the schema the migrations make'.replace('sql/schema.sql', relative(ROOT, stale)));
        expect(readFileSync(stale, 'utf8'), '--check does not write').to.equal(edited);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('sql(name) is the same statement q(name) sends, typed from the generated module', () => {
      expect(typeChecks).to.deep.equal([true, true, true]);
      expect(sql('PartnerUserExists')).to.equal(q('PartnerUserExists'));
      // @ts-expect-error a name that is no query in sql/queries is a type error
      expect(() => sql('NoSuchQuery')).to.throw('no query named NoSuchQuery');
    });
  });

  describe('on a database', () => {
    let db: TestDatabase;
    let client: pg.Client;
    const describeOne = async (name: string, text: string): Promise<QueryTypes> => (await describeQueries(client, [source(name, text)]))[0];
    const committedSource = (name: string) => readQuerySources().find((s) => s.name === name)!;

    before(async () => {
      db = await cloneDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.query(`
        CREATE TYPE probe_mood AS ENUM ('calm', 'busy');
        CREATE TABLE probe (
          id uuid PRIMARY KEY, n int4 NOT NULL, big int8, amount numeric(10, 2), ok bool NOT NULL,
          doc jsonb, at timestamptz NOT NULL, tags text[] NOT NULL, raw bytea, mood probe_mood NOT NULL,
          kind text NOT NULL CHECK (kind IN ('a', 'b''c')), note text);
        CREATE TABLE probe_child (id uuid PRIMARY KEY, probe_id uuid NOT NULL REFERENCES probe, label text NOT NULL);`);
    });
    after(async () => {
      await client?.end();
      await db?.drop();
    });

    it('a renamed column stops the generator, naming the query that reads it', async () => {
      await client.query('BEGIN');
      try {
        await client.query('ALTER TABLE users RENAME COLUMN external_id TO partner_user_id');
        const err = await rejection(describeQueries(client, [committedSource('PartnerUserGet')]));
        expect(err.message).to.match(/^PartnerUserGet \(sql\/queries\/partner\.sql\): column "external_id" does not exist/);
      } finally {
        await client.query('ROLLBACK');
      }
    });

    it('a renamed, retyped or nullable column changes the generated row', async () => {
      const star = 'SELECT * FROM users WHERE id = $1';
      const before = renderEntry(await describeOne('UserRow', star));
      expect(before).to.contain('      external_id: string | null;\n').and.contain('      created_at: Date;\n');
      await client.query('BEGIN');
      try {
        await client.query('ALTER TABLE users RENAME COLUMN external_id TO partner_user_id');
        const renamed = renderEntry(await describeOne('UserRow', star));
        expect(renamed).to.contain('      partner_user_id: string | null;\n').and.not.contain('external_id');
        expect(differences(before, renamed)).to.deep.equal(['UserRow']);
        await client.query('ALTER TABLE users ALTER COLUMN created_at DROP NOT NULL');
        expect(renderEntry(await describeOne('UserRow', star))).to.contain('      created_at: Date | null;\n');
        await client.query('ALTER TABLE users ALTER COLUMN created_at TYPE text');
        expect(renderEntry(await describeOne('UserRow', star))).to.contain('      created_at: string | null;\n');
      } finally {
        await client.query('ROLLBACK');
      }
    });

    it('types parameters and columns as node-postgres exchanges them under lib/core/db.ts type parsers', async () => {
      const t = await describeOne(
        'Probe',
        'SELECT id, n, big, amount, ok, doc, at, tags, raw, mood, kind, note FROM probe WHERE id = $1 AND big = $2 AND amount > $3 AND doc @> $4 AND at < $5 AND tags && $6 AND raw = $7 AND mood = $8 AND ok = $9',
      );
      expect(t.params).to.deep.equal([
        'string',
        'number | bigint | string',
        'number | bigint | string',
        'JsonParam',
        'Date | string',
        'readonly (string | null)[]',
        'Buffer',
        "'calm' | 'busy'",
        'boolean',
      ]);
      const row = Object.fromEntries(t.row.map((c) => [c.name, `${c.type}${c.nullable ? ' | null' : ''}`]));
      expect(row).to.deep.equal({
        id: 'string',
        n: 'number',
        // lib/core/db.ts parses int8 and numeric as numbers
        big: 'number | null',
        amount: 'number | null',
        ok: 'boolean',
        doc: 'Json | null',
        at: 'Date',
        tags: 'string[]',
        raw: 'Buffer | null',
        mood: "'calm' | 'busy'",
        // a CHECK listing the values: their union
        kind: "'a' | 'b\\'c'",
        note: 'string | null',
      });
    });

    it('nulls the columns an outer join can null and proves what it can of computed ones', async () => {
      const t = await describeOne(
        'ProbeJoin',
        `-- not null: asserted
         SELECT p.id, c.label, count(c.id)::int AS children, EXISTS (SELECT 1 FROM probe) AS found, coalesce(max(c.label), '') AS last,
                max(c.label) AS maybe_last, upper(p.kind) AS asserted, p.kind || 'x' AS computed
           FROM probe p LEFT JOIN probe_child c ON c.probe_id = p.id GROUP BY p.id, c.label`,
      );
      const nullable = Object.fromEntries(t.row.map((c) => [c.name, c.nullable]));
      expect(nullable).to.deep.equal({ id: false, label: true, children: false, found: false, last: false, maybe_last: true, asserted: false, computed: true });
      // a table on both sides of a LEFT join: only the preserved side's alias.column keeps NOT NULL
      const both = await describeOne('ProbeBoth', 'SELECT p.n, o.n AS other_n FROM probe p LEFT JOIN probe o ON o.id = p.id');
      expect(both.row.map((c) => c.nullable)).to.deep.equal([false, true]);
      const right = await describeOne('ProbeRight', 'SELECT p.n FROM probe_child c RIGHT JOIN probe p ON p.id = c.probe_id');
      expect(right.row[0].nullable).to.equal(true);
    });

    it('refuses a not-null annotation naming no column, and two result columns of one name', async () => {
      const annotated = await rejection(describeOne('ProbeBadNote', '-- not null: nope\nSELECT n FROM probe'));
      expect(annotated.message).to.equal('ProbeBadNote (sql/queries/test.sql): "-- not null: nope" names no result column');
      const twice = await rejection(describeOne('ProbeTwice', 'SELECT p.id, c.id FROM probe p JOIN probe_child c ON c.probe_id = p.id'));
      expect(twice.message).to.contain('two result columns named id');
      const statement = await describeOne('ProbeDelete', 'DELETE FROM probe WHERE id = $1');
      expect(renderEntry(statement)).to.contain('    row: NoRow;\n');
    });
  });

  describe('nullability rules on the text', () => {
    it('finds the relations on the right of a LEFT join, through subqueries and CTEs', () => {
      const sqlText = `WITH recent (id, zone_id) AS (SELECT id, zone_id FROM rentals WHERE ended_at IS NULL)
        SELECT z.id FROM zones z
          LEFT JOIN LATERAL (SELECT v.id FROM vehicles v JOIN pricing p USING (zone_id)) v ON true
          LEFT OUTER JOIN recent r ON r.zone_id = z.id
          LEFT JOIN public.areas a ON a.zone_id = z.id -- LEFT JOIN users in a comment
          LEFT JOIN ONLY events e ON e.zone_id = z.id
         WHERE z.name <> 'LEFT JOIN partners'`;
      const { all, relations } = outerJoins(sqlText);
      expect(all).to.equal(false);
      expect([...relations]).to.include.members(['vehicles', 'pricing', 'recent', 'rentals', 'areas', 'events']);
      expect([...relations]).to.not.include.members(['zones', 'users', 'partners']);
      expect(outerJoins('SELECT 1 FROM a FULL JOIN b ON true').all).to.equal(true);
      expect(outerJoins('SELECT a, b, count(*) FROM t GROUP BY ROLLUP (a, b)').all).to.equal(true);
    });

    it('proves only the listed never-null forms, in the outermost list', () => {
      expect(
        provenNonNull(
          `SELECT count(*) n, count(x) FILTER (WHERE y) AS f, NOT EXISTS (SELECT 1) e, now()::date d, now()::timestamp with time zone AS tz, 'x' AS s, ARRAY(SELECT 1) arr,
        jsonb_build_object('a', $1) o, row_number() OVER (ORDER BY x) rn, coalesce(sum(x), 0)::int AS c FROM t`,
          10,
        ),
      ).to.deep.equal(new Array(10).fill(true));
      expect(
        provenNonNull('SELECT sum(x), coalesce(a, b), count(*) + 1, $1::int, CASE WHEN a THEN 1 ELSE 2 END, now()::timestamp AT TIME ZONE z FROM t', 6),
      ).to.deep.equal(new Array(6).fill(false));
      expect(provenNonNull('SELECT count(*) FROM a UNION ALL SELECT count(*) FROM b', 1)).to.deep.equal([false]);
      // a scalar subquery of one count always has its row; with groups, a limit, a window or another value it may have none
      const counts = 'SELECT (SELECT count(*)::int FROM v WHERE v.z = z.id) AS n, (SELECT count(DISTINCT u) c FROM t)::int FROM z';
      expect(provenNonNull(counts, 2)).to.deep.equal([true, true]);
      expect(
        provenNonNull(
          'SELECT (SELECT count(*) FROM t GROUP BY a), (SELECT count(*) FROM t LIMIT $1), (SELECT count(*) OVER () FROM t), (SELECT max(x) FROM t), (SELECT 1 FROM t), (SELECT count(*) FROM a UNION SELECT 1), (SELECT count(*) FROM t) + 1 FROM z',
          7,
        ),
      ).to.deep.equal(new Array(7).fill(false));
      expect(provenNonNull('UPDATE t SET a = (SELECT count(*) FROM u) RETURNING id, count_ok, 1 AS one', 3)).to.deep.equal([false, false, true]);
      expect(
        preservedReferences('SELECT v.id, s.id AS sid FROM vehicles v JOIN types t ON true LEFT JOIN (SELECT id FROM vehicles) s ON s.id = v.id', 2),
      ).to.deep.equal([true, false]);
    });
  });
});
