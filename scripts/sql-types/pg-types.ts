/**
 * Postgres type OIDs to TypeScript types, for the generated query types.
 *
 * A result column is typed as what node-postgres hands back at run time, and that is decided by
 * the type parsers registered when lib/core/db.ts is loaded (it reads int8 and numeric as numbers). So
 * rather than a second table that could disagree with those parsers, each parsed type is typed by
 * running its registered parser on a sample value and naming what comes out; a type without a
 * parser arrives as its text form, a string (enum: the union of its labels). Parameters are typed
 * by what node-postgres can serialize into each type's input syntax. A text column read straight
 * from a table whose CHECK constraint lists its values is typed as the union of those values.
 */
import pg from 'pg';
// the runtime's type parsers: the result types follow exactly the parsers this module registers
import '../../lib/core/db.js';

export interface PgTypeInfo {
  oid: number;
  name: string;
  /** pg_type.typtype: b base, e enum, d domain, c composite, r range, m multirange, p pseudo */
  kind: string;
  /** pg_type.typcategory: A array, B boolean, D date/time, N numeric, S string, U user, … */
  category: string;
  /** element type of an array type, else 0 */
  elem: number;
  enumLabels: string[];
}

/** pg_type rows (and enum labels) of `oids` and of their array elements. */
export async function loadTypeInfo(client: pg.Client, oids: Iterable<number>): Promise<Map<number, PgTypeInfo>> {
  const info = new Map<number, PgTypeInfo>();
  let wanted = [...new Set(oids)];
  while (wanted.length) {
    const { rows } = await client.query<{ oid: number; typname: string; typtype: string; typcategory: string; typelem: number; labels: string[] | null }>(
      `SELECT t.oid::int AS oid, t.typname::text AS typname, t.typtype::text AS typtype, t.typcategory::text AS typcategory, t.typelem::int AS typelem,
              (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) AS labels
         FROM pg_type t WHERE t.oid = ANY ($1::oid[])`,
      [wanted],
    );
    for (const r of rows)
      info.set(r.oid, { oid: r.oid, name: r.typname, kind: r.typtype, category: r.typcategory, elem: r.typelem, enumLabels: r.labels ?? [] });
    const missing = wanted.filter((o) => !info.has(o));
    if (missing.length) throw new Error(`type oid(s) ${missing.join(', ')} not in pg_type`);
    wanted = rows.map((r) => r.typelem).filter((e) => e !== 0 && !info.has(e));
  }
  return info;
}

const JSON_TYPES = new Set([114, 3802]);
const JSON_ARRAY_TYPES = new Set([199, 3807]);
const INTERVAL = 1186;
const INTERVAL_ARRAY = 1187;

/**
 * A value in each type node-postgres (pg-types) parses by default, and the two lib/core/db.ts adds: the
 * parser's result on it names the type. A parsed type missing here stops the generator rather than
 * being guessed.
 */
const SAMPLES: Record<number, string> = {
  16: 't',
  17: '\\x00',
  20: '1',
  21: '1',
  23: '1',
  26: '1',
  600: '(1,2)',
  651: '{10.0.0.0/8}',
  700: '1.5',
  701: '1.5',
  718: '<(1,2),3>',
  791: '{$1.00}',
  1000: '{t}',
  1001: '{"\\\\x00"}',
  1005: '{1}',
  1007: '{1}',
  1008: '{a}',
  1009: '{a}',
  1014: '{a}',
  1015: '{a}',
  1016: '{1}',
  1017: '{"(1,2)"}',
  1021: '{1.5}',
  1022: '{1.5}',
  1028: '{1}',
  1040: '{08:00:2b:01:02:03}',
  1041: '{127.0.0.1}',
  1082: '2024-01-02',
  1114: '2024-01-02 03:04:05',
  1115: '{"2024-01-02 03:04:05"}',
  1182: '{2024-01-02}',
  1183: '{01:02:03}',
  1184: '2024-01-02 03:04:05+00',
  1185: '{"2024-01-02 03:04:05+00"}',
  1231: '{1.5}',
  1270: '{01:02:03+00}',
  1700: '1.5',
  2951: '{00000000-0000-0000-0000-000000000000}',
  3907: '{"[1,2)"}',
};

/** The text-format parser node-postgres runs on values of type `oid`. */
const parserOf = (oid: number) => pg.types.getTypeParser(oid, 'text') as (text: string) => unknown;

// no type has OID 0, so this is node-postgres' "no parser": the text as it came
const NO_PARSER = parserOf(0);

/** The TS type of a JS value a type parser produced. */
function typeOfValue(v: unknown, oid: number): string {
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'bigint') return typeof v;
  if (v instanceof Date) return 'Date';
  if (Buffer.isBuffer(v)) return 'Buffer';
  if (Array.isArray(v)) {
    const elem = typeOfValue(v[0], oid);
    return /[|&]/.test(elem) ? `(${elem})[]` : `${elem}[]`;
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    if (keys.every((k) => typeof (v as Record<string, unknown>)[k] === 'number')) return `{ ${keys.map((k) => `${k}: number`).join('; ')} }`;
  }
  throw new Error(`type oid ${oid}: cannot name the type of its parsed value ${JSON.stringify(v)}`);
}

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The TS type of a result column of type `oid` as node-postgres returns it. Array elements are
 * typed non-null: Postgres has no NOT NULL for elements, and an element type widened by `| null`
 * everywhere would say nothing the project's arrays (built from typed values, filtered aggregates)
 * ever hold.
 */
export function outputType(oid: number, types: Map<number, PgTypeInfo>): string {
  const parse = parserOf(oid);
  if (parse === NO_PARSER) {
    const t = types.get(oid);
    return t?.kind === 'e' && t.enumLabels.length ? labelUnion(t.enumLabels) : 'string';
  }
  if (JSON_TYPES.has(oid)) return 'Json';
  if (JSON_ARRAY_TYPES.has(oid)) return 'Json[]';
  if (oid === INTERVAL) return 'PgInterval';
  if (oid === INTERVAL_ARRAY) return 'PgInterval[]';
  const sample = SAMPLES[oid];
  if (sample === undefined) {
    throw new Error(
      `node-postgres parses type ${types.get(oid)?.name ?? oid} (oid ${oid}) but scripts/sql-types/pg-types.ts has no sample of it to name its type: add one`,
    );
  }
  return typeOfValue(parse(sample), oid);
}

/**
 * The values a single-column CHECK constraint allows, when it is a list of text literals: Postgres
 * shows `col IN ('a', 'b')` as `CHECK ((col = ANY (ARRAY['a'::text, 'b'::text])))` and `col = 'a'`
 * as `CHECK ((col = 'a'::text))`. Anything else (ranges, patterns, functions) allows more than a
 * union can say: undefined.
 */
export function checkedLabels(constraintDef: string): string[] | undefined {
  const literal = String.raw`'((?:[^']|'')*)'::(?:text|character varying|bpchar)`;
  const list = new RegExp(String.raw`^CHECK \(\((?:"[^"]+"|\w+) = ANY \(ARRAY\[(${literal}(?:, ${literal})*)\]\)\)\)$`).exec(constraintDef);
  const one = new RegExp(String.raw`^CHECK \(\((?:"[^"]+"|\w+) = ${literal}\)\)$`).exec(constraintDef);
  const items = list?.[1] ?? (one ? `'${one[1]}'::text` : undefined);
  if (items === undefined) return undefined;
  return [...items.matchAll(new RegExp(literal, 'g'))].map((m) => m[1].replace(/''/g, "'"));
}

/** The TS union of `labels`. */
export const labelUnion = (labels: readonly string[]) => labels.map(quote).join(' | ');

const NUMBER_INPUT = new Set(['int2', 'int4', 'float4', 'float8', 'oid']);
const TIME_INPUT = new Set(['timestamptz', 'timestamp', 'date']);

/**
 * The TS type a parameter of type `oid` accepts (without its `| null`): what node-postgres
 * serializes into that type's input syntax. Elements of an array parameter may be null.
 */
export function inputType(oid: number, types: Map<number, PgTypeInfo>): string {
  const t = types.get(oid);
  if (!t) throw new Error(`type oid ${oid} not loaded`);
  if (t.category === 'A' && t.elem) return `readonly (${inputType(t.elem, types)} | null)[]`;
  if (JSON_TYPES.has(oid)) return 'JsonParam';
  if (t.name === 'bytea') return 'Buffer';
  if (t.kind === 'e' && t.enumLabels.length) return labelUnion(t.enumLabels);
  if (t.category === 'B') return 'boolean';
  if (NUMBER_INPUT.has(t.name)) return 'number';
  // exact decimals and 64-bit integers: a number when it fits, else the digits
  if (t.name === 'int8' || t.name === 'numeric') return 'number | bigint | string';
  if (TIME_INPUT.has(t.name)) return 'Date | string';
  // text, uuid, reg* names, geometry (WKT/EWKB), time, interval, …: the type's text form
  return 'string';
}
