/**
 * Record shapes declared once, rendered twice: a declaration says, member by member and in output
 * order, which source-row column (rows.ts) feeds which record member and how. From it come
 *
 *   - `mapperOf(shape)`: the JS mapper (row → record object), what the publisher's hourly files and
 *     every other caller use;
 *   - `recordSql(shape, …)`: a Postgres expression that builds the same record as compact JSON text
 *     from the same columns, for the realtime lists that stream many records (api/feeds/realtime.ts):
 *     the database hands one text column per record to the driver instead of ~20 typed columns, and
 *     the text goes into the response as is (no row objects, no JSON.stringify).
 *
 * The two renderings agree byte for byte with `JSON.stringify(mapper(row))` (test/mappers-sql.test.ts):
 * same members in the same order, optional members left out when null, numbers printed as
 * JavaScript prints them (Postgres prints 1e-05 and -0 where JavaScript prints 0.00001 and 0).
 *
 *   const EVENT = shape<EventRow>()(({ uuid, text, int }) => ({ event_id: uuid('event_id'), vehicle_state: text('vehicle_state'), timestamp: int('ts_ms') }));
 */
import type { Provider } from './rows.js';

/** One member of a record: how its value comes from the row (and the provider). */
export type Member =
  | { kind: 'uuid' | 'text' | 'int' | 'float' | 'strings' | 'one_or_null'; col: string; orEmpty?: boolean }
  | { kind: 'vocab'; col: string; map: Readonly<Record<string, string>>; other: string }
  | { kind: 'const'; value: null | string | number | boolean | readonly unknown[] }
  | { kind: 'provider' }
  | { kind: 'object'; shape: Shape }
  | { kind: 'optional'; member: Member & { col: string } };

/** Members in output order. */
export type Shape = Readonly<Record<string, Member>>;

type Col<R> = Extract<keyof R, string>;

/**
 * The member constructors, typed so that a column name must be one of the row's. Plain function
 * members (not methods): a declaration destructures them, so none may depend on `this`.
 */
export interface Members<R> {
  /** a uuid column, as a JSON string */
  uuid: (col: Col<R>) => Member;
  /** a text column, as a JSON string */
  text: (col: Col<R>) => Member;
  /** an integer column (int4, int8), as a JSON number */
  int: (col: Col<R>) => Member;
  /** a double precision column, as a JSON number */
  float: (col: Col<R>) => Member;
  /** a text[] column as a JSON array; `orEmpty`: [] when the column is null */
  strings: (col: Col<R>, opts?: { orEmpty?: boolean }) => Member;
  /** an array of the column's one value, or null when the column is null */
  oneOrNull: (col: Col<R>) => Member;
  /** a column's value through a vocabulary table; `other` for any value not in it */
  vocab: (col: Col<R>, map: Readonly<Record<string, string>>, other: string) => Member;
  /** the same value for every record */
  constant: (value: null | string | number | boolean | readonly unknown[]) => Member;
  /** our provider id (Provider.providerId) */
  provider: () => Member;
  /** a nested record */
  object: (shape: Shape) => Member;
  /** a column member left out of the record when the column is null */
  optional: (member: Member) => Member;
}

const COLUMN = /^[a-z_][a-z0-9_]*$/;

function col(name: string): string {
  if (!COLUMN.test(name)) throw new Error(`record shape: bad column name ${name}`);
  return name;
}

const MEMBERS: Members<Record<string, unknown>> = {
  uuid: (c) => ({ kind: 'uuid', col: col(c) }),
  text: (c) => ({ kind: 'text', col: col(c) }),
  int: (c) => ({ kind: 'int', col: col(c) }),
  float: (c) => ({ kind: 'float', col: col(c) }),
  strings: (c, opts) => ({ kind: 'strings', col: col(c), orEmpty: opts?.orEmpty ?? false }),
  oneOrNull: (c) => ({ kind: 'one_or_null', col: col(c) }),
  vocab: (c, map, other) => ({ kind: 'vocab', col: col(c), map, other }),
  constant: (value) => ({ kind: 'const', value }),
  provider: () => ({ kind: 'provider' }),
  object: (shape) => ({ kind: 'object', shape }),
  optional: (member) => {
    if (!('col' in member)) throw new Error('record shape: only a column member can be optional');
    return { kind: 'optional', member };
  },
};

/** Declares the shape of a record over source rows of type R. */
export function shape<R>(): (declare: (m: Members<R>) => Record<string, Member>) => Shape {
  return (declare) => {
    const s = declare(MEMBERS as unknown as Members<R>);
    const first = Object.values(s)[0];
    // the SQL rendering writes each later member with its leading comma
    if (!first || first.kind === 'optional') throw new Error('record shape: the first member must be present in every record');
    return Object.freeze(s);
  };
}

// ---------------------------------------------------------------------------------------------
// JS rendering
// ---------------------------------------------------------------------------------------------

type Row = Record<string, unknown>;
type Getter = (row: Row, p: Provider) => unknown;

function getter(m: Member): Getter {
  switch (m.kind) {
    case 'uuid':
    case 'text':
      return (row) => row[m.col] ?? null;
    case 'int':
    case 'float':
      return (row) => (row[m.col] === null || row[m.col] === undefined ? null : Number(row[m.col]));
    case 'strings':
      return m.orEmpty ? (row) => row[m.col] ?? [] : (row) => row[m.col] ?? null;
    case 'one_or_null':
      return (row) => (row[m.col] === null || row[m.col] === undefined ? null : [row[m.col]]);
    case 'vocab':
      return (row) => {
        const v = row[m.col] as string;
        return Object.hasOwn(m.map, v) ? m.map[v] : m.other;
      };
    case 'const': {
      const v = m.value;
      // a fresh array per record: callers may add to a record they got
      if (Array.isArray(v)) {
        const list: readonly unknown[] = v;
        return () => [...list];
      }
      return () => v;
    }
    case 'provider':
      return (_row, p) => p.providerId;
    case 'object': {
      const build = builder(m.shape);
      return (row, p) => build(row, p);
    }
    case 'optional':
      return getter(m.member);
  }
}

function builder(s: Shape): (row: Row, p: Provider) => Record<string, unknown> {
  const keys = Object.keys(s);
  const gets = Object.values(s).map(getter);
  const optional = Object.values(s).map((m) => m.kind === 'optional');
  const n = keys.length;
  return (row, p) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const v = gets[i](row, p);
      if (optional[i] && (v === null || v === undefined)) continue;
      out[keys[i]] = v;
    }
    return out;
  };
}

/** The JS mapper of a shape: row and provider → the record object. */
export function mapperOf<R, T>(s: Shape): (row: R, p: Provider) => T {
  return builder(s) as unknown as (row: R, p: Provider) => T;
}

// ---------------------------------------------------------------------------------------------
// SQL rendering
// ---------------------------------------------------------------------------------------------

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * A double as JavaScript prints it. Postgres 15 prints the same shortest digits, but in exponent
 * form below 1e-4 and from 1e15 (JavaScript: below 1e-6 and from 1e21), with a two-digit exponent
 * (1e-07, JavaScript 1e-7), and prints -0 and NaN / Infinity where JSON.stringify writes 0 and null.
 * The first branch is every coordinate but those within 11 m of the equator or the prime meridian.
 */
function floatSql(x: string): string {
  return (
    `CASE WHEN abs(${x}) >= 1e-4 AND abs(${x}) < 1e15 THEN ${x}::text WHEN ${x} = 0 THEN '0'` +
    ` WHEN abs(${x}) >= 1e-6 AND abs(${x}) < 1e21 THEN ${x}::text::numeric::text` +
    ` WHEN ${x} IN ('NaN', 'Infinity', '-Infinity') THEN 'null' ELSE replace(${x}::text, 'e-0', 'e-') END`
  );
}

/** An expression of JSON text for a member's value, never SQL NULL (JSON null instead). */
function valueSql(m: Member, alias: string, providerJson: string): string[] {
  const c = 'col' in m ? `${alias}.${m.col}` : '';
  switch (m.kind) {
    case 'uuid':
      return [`COALESCE('"' || ${c}::text || '"', 'null')`];
    case 'text':
      return [`COALESCE(to_json(${c}::text)::text, 'null')`];
    case 'int':
      return [`COALESCE(${c}::text, 'null')`];
    case 'float':
      return [`COALESCE(${floatSql(c)}, 'null')`];
    case 'strings':
      return [`COALESCE(to_json(${c})::text, ${m.orEmpty ? "'[]'" : "'null'"})`];
    case 'one_or_null':
      return [`COALESCE('[' || to_json(${c})::text || ']', 'null')`];
    case 'vocab':
      return [
        `CASE ${c}::text ${Object.entries(m.map)
          .map(([k, v]) => `WHEN ${lit(k)} THEN ${lit(JSON.stringify(v))}`)
          .join(' ')} ELSE ${lit(JSON.stringify(m.other))} END`,
      ];
    case 'const':
      return [lit(JSON.stringify(m.value))];
    case 'provider':
      return [providerJson];
    case 'object':
      return objectParts(m.shape, alias, providerJson);
    case 'optional':
      return valueSql(m.member, alias, providerJson);
  }
}

/** The parts of an object's JSON text: string literals and expressions, to be joined with ||. */
function objectParts(s: Shape, alias: string, providerJson: string): string[] {
  const parts: string[] = [];
  Object.entries(s).forEach(([key, m], i) => {
    const name = `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    if (m.kind === 'optional') {
      parts.push(`CASE WHEN ${alias}.${m.member.col} IS NULL THEN '' ELSE ${lit(name)} || ${valueSql(m.member, alias, providerJson).join(' || ')} END`);
    } else {
      parts.push(lit(name), ...valueSql(m, alias, providerJson));
    }
  });
  parts.push(lit('}'));
  return parts;
}

/**
 * The record of `s` as a Postgres expression of compact JSON text over the columns of `alias`;
 * `providerJson` is an SQL expression of the provider id as JSON text (a parameter carrying
 * `JSON.stringify(providerId)`). Adjacent literals are merged, so a record costs one concatenation
 * per value.
 */
export function recordSql(s: Shape, alias: string, providerJson: string): string {
  const merged: string[] = [];
  for (const part of objectParts(s, alias, providerJson)) {
    const prev = merged[merged.length - 1];
    if (prev !== undefined && prev.startsWith("'") && part.startsWith("'") && isLiteral(prev) && isLiteral(part))
      merged[merged.length - 1] = lit(unlit(prev) + unlit(part));
    else merged.push(part);
  }
  return merged.join(' || ');
}

const isLiteral = (s: string) => /^'(?:[^']|'')*'$/.test(s);
const unlit = (s: string) => s.slice(1, -1).replace(/''/g, "'");
