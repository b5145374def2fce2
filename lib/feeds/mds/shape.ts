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
 *
 * A declaration is typed against its source row (`shape<R>()`, R a generated row type, rows.ts): a
 * member names one of R's columns of the right kind, and the shape records, for the compiler only,
 * what it needs of a row (`Shape<P>`: each column it reads and the type it reads it as, non-null
 * unless the member says what null becomes), nested records included. Where rows meet a shape
 * (`mapperOf<R, T>`, a records query over a typed source in sources.ts) the row type must satisfy
 * that need, so a column renamed, retyped or made nullable in the SQL fails the type check there.
 */
import type { Provider } from './rows.js';

/** One member of a record: how its value comes from the row (and the provider). */
export type Member =
  | { kind: 'uuid' | 'text' | 'int' | 'float' | 'strings' | 'uuids' | 'one_or_null'; col: string; orEmpty?: boolean }
  | { kind: 'vocab'; col: string; map: Readonly<Record<string, string>>; other: string }
  | { kind: 'const'; value: null | string | number | boolean | readonly unknown[] }
  | { kind: 'provider' }
  | { kind: 'object'; shape: Shape }
  | { kind: 'optional'; member: Member & { col: string } };

// Phantom: what a member or shape needs of a row rides on it for the compiler only. A function of
// the row makes it contravariant: a row with more columns, or narrower types, satisfies it.
declare const needs: unique symbol;
interface Needs<P> {
  readonly [needs]?: (row: P) => void;
}

/** A member that needs `P` of a row. */
export type Typed<P> = Member & Needs<P>;

/**
 * Members in output order, needing `P` of a source row. `Shape` alone (P = never) is any shape:
 * what the renderings take.
 */
export type Shape<P = never> = Readonly<Record<string, Member>> & Needs<P>;

type Col<R> = Extract<keyof R, string>;
/** R's columns whose values, null aside, are of type V. */
type ColOf<R, V> = { [K in Col<R>]: NonNullable<R[K]> extends V ? K : never }[Col<R>];
/** A row with column C of type V. */
type Has<C extends string, V> = { readonly [K in C]: V };
/**
 * What a declaration (or a nested record's members, or a shape) needs of a row: the intersection of
 * its members' needs and its own, inferred from the union of their row functions (a contravariant
 * position).
 */
type NeedsOf<M> =
  | { [K in Extract<keyof M, string>]-?: M[K] extends Needs<infer P> ? (row: P) => void : never }[Extract<keyof M, string>]
  | (M extends Needs<infer P> ? (row: P) => void : never) extends (row: infer P) => void
  ? P
  : never;

/**
 * The member constructors, typed so that a column must be one of the row's, of the member's kind.
 * Plain function members (not methods): a declaration destructures them, so none may depend on
 * `this`.
 */
export interface Members<R> {
  /** a uuid column, as a JSON string */
  uuid: <C extends ColOf<R, string>>(col: C) => Typed<Has<C, string>>;
  /** a text column, as a JSON string */
  text: <C extends ColOf<R, string>>(col: C) => Typed<Has<C, string>>;
  /** an integer column (int4, int8), as a JSON number */
  int: <C extends ColOf<R, number>>(col: C) => Typed<Has<C, number>>;
  /** a double precision column, as a JSON number */
  float: <C extends ColOf<R, number>>(col: C) => Typed<Has<C, number>>;
  /** a text[] column as a JSON array; null as null, or `orEmpty`: as [] */
  strings: <C extends ColOf<R, readonly string[]>>(col: C, opts?: { orEmpty?: boolean }) => Typed<Has<C, readonly string[] | null>>;
  /**
   * a uuid[] column as a JSON array of strings, like `strings`: Postgres prints a uuid without
   * to_json, for which nothing needs escaping
   */
  uuids: <C extends ColOf<R, readonly string[]>>(col: C, opts?: { orEmpty?: boolean }) => Typed<Has<C, readonly string[] | null>>;
  /** an array of the column's one value, or null when the column is null */
  oneOrNull: <C extends Col<R>>(col: C) => Typed<Has<C, unknown>>;
  /** a column's value through a vocabulary table; `other` for any value not in it (null too) */
  vocab: <C extends ColOf<R, string>>(col: C, map: Readonly<Record<string, string>>, other: string) => Typed<Has<C, string | null>>;
  /** the same value for every record */
  constant: (value: null | string | number | boolean | readonly unknown[]) => Typed<unknown>;
  /** our provider id (Provider.providerId) */
  provider: () => Typed<unknown>;
  /** a nested record from the same row: a shape, or its members written in place */
  object: <M extends Record<string, Member>>(members: M) => Typed<NeedsOf<M>>;
  /** a column member left out of the record when the column is null */
  optional: <P>(member: Typed<P>) => Typed<{ readonly [K in keyof P]: P[K] | null }>;
}

const COLUMN = /^[a-z_][a-z0-9_]*$/;

function col(name: string): string {
  if (!COLUMN.test(name)) throw new Error(`record shape: bad column name ${name}`);
  return name;
}

// the constructors at run time: the types above are the compiler's (a column is a string here)
const MEMBERS: { [K in keyof Members<unknown>]: (...args: never[]) => Member } = {
  uuid: (c: string) => ({ kind: 'uuid', col: col(c) }),
  text: (c: string) => ({ kind: 'text', col: col(c) }),
  int: (c: string) => ({ kind: 'int', col: col(c) }),
  float: (c: string) => ({ kind: 'float', col: col(c) }),
  strings: (c: string, opts?: { orEmpty?: boolean }) => ({ kind: 'strings', col: col(c), orEmpty: opts?.orEmpty ?? false }),
  uuids: (c: string, opts?: { orEmpty?: boolean }) => ({ kind: 'uuids', col: col(c), orEmpty: opts?.orEmpty ?? false }),
  oneOrNull: (c: string) => ({ kind: 'one_or_null', col: col(c) }),
  vocab: (c: string, map: Readonly<Record<string, string>>, other: string) => ({ kind: 'vocab', col: col(c), map, other }),
  constant: (value: null | string | number | boolean | readonly unknown[]) => ({ kind: 'const', value }),
  provider: () => ({ kind: 'provider' }),
  object: (members: Shape) => ({ kind: 'object', shape: members }),
  optional: (member: Member) => {
    if (!('col' in member)) throw new Error('record shape: only a column member can be optional');
    return { kind: 'optional', member };
  },
};

/** Declares the shape of a record over source rows of type R; the shape needs of a row what its members read. */
export function shape<R>(): <M extends Record<string, Member>>(declare: (m: Members<R>) => M) => Shape<NeedsOf<M>> {
  return (declare) => {
    const s: Record<string, Member> = declare(MEMBERS as unknown as Members<R>);
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
    case 'uuids':
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

/** The JS mapper of a shape: row and provider → the record object. Rows of type R must satisfy what the shape needs. */
export function mapperOf<R, T>(s: Shape<R>): (row: R, p: Provider) => T {
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
    case 'uuids':
      // to_json only for an array holding a null (JSON null there): the uuid[] cast makes any other
      // element safe to print between quotes as it is
      return [
        `CASE WHEN ${c} IS NULL THEN ${m.orEmpty ? "'[]'" : "'null'"} WHEN cardinality(${c}) = 0 THEN '[]'` +
          ` WHEN array_position(${c}, NULL) IS NULL THEN '["' || array_to_string(${c}::uuid[], '","') || '"]' ELSE to_json(${c})::text END`,
      ];
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
