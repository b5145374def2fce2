/**
 * Which result columns of a statement can be null. Postgres describes a column's type but not
 * whether it can be null, so the generator decides it by these rules, in this order:
 *
 * 1. `-- not null: a, b` in the query's section asserts columns a and b are never null (for what the
 *    rules below cannot prove; a name that is not a result column is an error, so it cannot rot).
 * 2. A column read straight from a table (RowDescription names its table and column) is non-null
 *    when that table column is NOT NULL (a view's columns never are), unless the statement can null
 *    it: a RIGHT or FULL join or grouping sets (ROLLUP, CUBE) anywhere null every table column; a
 *    LEFT join nulls the columns of every table named on its right side, inside a subquery or CTE
 *    there too. RowDescription names the table, not the alias, so a table used on both sides is
 *    nulled on both, except for an outermost select item written `alias.column` whose alias is a
 *    plain table of the outermost FROM outside any LEFT join's right side: that one keeps its NOT
 *    NULL.
 * 3. A computed column is non-null only when its expression in the outermost select list (or
 *    RETURNING list) is one of: count(…), [NOT] EXISTS (…), a literal, now()/current_timestamp and
 *    the like, ARRAY(…)/ARRAY[…], json[b]_build_object/array(…), row_number()/rank()/dense_rank(),
 *    or COALESCE(…) whose arguments include one of these; each possibly cast (`::type`); and a scalar
 *    subquery `(SELECT count(…) FROM …)` with no GROUP BY, HAVING, LIMIT, OFFSET or set operation (an
 *    aggregate without groups always gives its one row). Everything else computed (aggregates over
 *    no rows, CASE, function results, UNION branches) is nullable.
 */

type Tok = { kind: 'ident' | 'quoted' | 'number' | 'string' | 'param' | 'op' | 'punct'; text: string };

/** SQL tokens without comments; keywords and unquoted identifiers lower-cased. */
function tokenize(sql: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i];
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && next === '-') {
      while (i < n && sql[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      let depth = 0;
      do {
        if (sql.startsWith('/*', i)) depth++;
        else if (sql.startsWith('*/', i)) depth--;
        else {
          i++;
          continue;
        }
        i += 2;
      } while (depth > 0 && i < n);
    } else if (c === "'" || ((c === 'E' || c === 'e') && next === "'")) {
      const escapes = c !== "'";
      let j = escapes ? i + 2 : i + 1;
      while (j < n) {
        if (escapes && sql[j] === '\\') j += 2;
        else if (sql[j] === "'" && sql[j + 1] === "'") j += 2;
        else if (sql[j] === "'") break;
        else j++;
      }
      out.push({ kind: 'string', text: sql.slice(i, j + 1) });
      i = j + 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < n && !(sql[j] === '"' && sql[j + 1] !== '"')) j += sql[j] === '"' ? 2 : 1;
      out.push({ kind: 'quoted', text: sql.slice(i + 1, j).replace(/""/g, '"') });
      i = j + 1;
    } else if (c === '$' && next !== undefined && /[0-9]/.test(next)) {
      const m = /^\$[0-9]+/.exec(sql.slice(i))!;
      out.push({ kind: 'param', text: m[0] });
      i += m[0].length;
    } else if (c === '$') {
      const tag = /^\$[A-Za-z_0-9]*\$/.exec(sql.slice(i));
      if (!tag) throw new Error(`unexpected $ at ${i}`);
      const end = sql.indexOf(tag[0], i + tag[0].length);
      if (end < 0) throw new Error(`unterminated ${tag[0]} string`);
      out.push({ kind: 'string', text: sql.slice(i, end + tag[0].length) });
      i = end + tag[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z_0-9$]*/.exec(sql.slice(i))!;
      out.push({ kind: 'ident', text: m[0].toLowerCase() });
      i += m[0].length;
    } else if (/[0-9]/.test(c) || (c === '.' && next !== undefined && /[0-9]/.test(next))) {
      const m = /^(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(sql.slice(i))!;
      out.push({ kind: 'number', text: m[0] });
      i += m[0].length;
    } else if (c === ':' && next === ':') {
      out.push({ kind: 'punct', text: '::' });
      i += 2;
    } else if ('(),;[].'.includes(c)) {
      out.push({ kind: 'punct', text: c });
      i++;
    } else {
      const m = /^[+\-*/<>=~!@#%^&|`?:]+/.exec(sql.slice(i));
      const text = m ? m[0] : c;
      out.push({ kind: 'op', text });
      i += text.length;
    }
  }
  return out;
}

const isWord = (t: Tok | undefined, ...words: string[]) => t?.kind === 'ident' && words.includes(t.text);
const isPunct = (t: Tok | undefined, p: string) => t?.kind === 'punct' && t.text === p;

/** Index of the bracket closing the one at `open` (`(` or `[`). */
function closing(toks: Tok[], open: number): number {
  const o = toks[open].text;
  const c = o === '(' ? ')' : ']';
  let depth = 0;
  for (let i = open; i < toks.length; i++) {
    if (isPunct(toks[i], o)) depth++;
    else if (isPunct(toks[i], c) && --depth === 0) return i;
  }
  throw new Error('unbalanced brackets');
}

/** Names (identifiers, lower-cased unless quoted) of the CTEs a statement defines, with their bodies' token ranges. */
function ctes(toks: Tok[]): Map<string, [number, number]> {
  const found = new Map<string, [number, number]>();
  for (let i = 1; i < toks.length; i++) {
    const prev = toks[i - 1];
    if (!(toks[i].kind === 'ident' || toks[i].kind === 'quoted') || !(isWord(prev, 'with', 'recursive') || isPunct(prev, ','))) continue;
    let j = i + 1;
    // `name (col, …) AS (…)`: a column list before AS
    if (isPunct(toks[j], '(') && isWord(toks[closing(toks, j) + 1], 'as')) j = closing(toks, j) + 1;
    if (!isWord(toks[j], 'as')) continue;
    j++;
    if (isWord(toks[j], 'not')) j++;
    if (isWord(toks[j], 'materialized')) j++;
    if (!isPunct(toks[j], '(')) continue;
    found.set(toks[i].text, [j, closing(toks, j)]);
  }
  return found;
}

export interface OuterJoins {
  /** a RIGHT or FULL join, or grouping sets: every table column may be null */
  all: boolean;
  /** relation names on the right side of a LEFT join (CTEs there replaced by what they read) */
  relations: Set<string>;
}

/** The relations whose columns an outer join in the statement can null. */
export function outerJoins(sql: string): OuterJoins {
  const toks = tokenize(sql);
  const defined = ctes(toks);
  const relations = new Set<string>();
  const expanded = new Set<string>();
  const addRange = (from: number, to: number) => {
    for (let k = from; k <= to; k++) {
      const t = toks[k];
      if (t.kind === 'ident' || t.kind === 'quoted') addName(t.text);
    }
  };
  const addName = (name: string) => {
    relations.add(name);
    const body = defined.get(name);
    if (body && !expanded.has(name)) {
      expanded.add(name);
      addRange(body[0], body[1]);
    }
  };
  let all = false;
  for (let i = 0; i < toks.length; i++) {
    // grouping sets null the grouped columns in their subtotal rows, as an outer join would
    if (isWord(toks[i], 'rollup', 'cube') || (isWord(toks[i], 'grouping') && isWord(toks[i + 1], 'sets'))) all = true;
    if (!isWord(toks[i], 'left', 'right', 'full')) continue;
    let j = i + 1;
    if (isWord(toks[j], 'outer')) j++;
    if (!isWord(toks[j], 'join')) continue;
    if (!isWord(toks[i], 'left')) {
      all = true;
      continue;
    }
    j++;
    if (isWord(toks[j], 'lateral', 'only')) j++;
    if (isPunct(toks[j], '(')) {
      addRange(j, closing(toks, j));
    } else {
      // [schema.]relation: the relation's own name is what the catalogue lookup needs
      while (isPunct(toks[j + 1], '.') && toks[j + 2]) j += 2;
      if (toks[j]) addName(toks[j].text);
    }
  }
  return { all, relations };
}

const NOW = ['now', 'clock_timestamp', 'statement_timestamp', 'transaction_timestamp', 'gen_random_uuid'];
const NOW_WORDS = ['current_timestamp', 'current_date', 'localtimestamp', 'current_time', 'localtime'];
const BUILDERS = ['json_build_object', 'jsonb_build_object', 'json_build_array', 'jsonb_build_array'];
const RANKS = ['row_number', 'rank', 'dense_rank'];
/** the words after the first of a type name: double precision, character varying, timestamp with time zone */
const TYPE_WORDS = ['precision', 'varying', 'with', 'without', 'time', 'zone'];

/** If a never-null expression starts at `i` (and ends before `end`), the index after it; else -1. */
function nonNullExpr(toks: Tok[], i: number, end: number): number {
  let j = nonNullPrimary(toks, i, end);
  if (j < 0) return -1;
  // casts keep a value non-null: `::int`, `::double precision`, `::numeric(10,2)`, `::text[]`
  while (j < end && isPunct(toks[j], '::')) {
    j++;
    if (toks[j]?.kind !== 'ident' && toks[j]?.kind !== 'quoted') return -1;
    j++;
    while (j < end && isPunct(toks[j], '.') && (toks[j + 1]?.kind === 'ident' || toks[j + 1]?.kind === 'quoted')) j += 2;
    while (j < end && isWord(toks[j], ...TYPE_WORDS)) j++;
    if (j < end && isPunct(toks[j], '(')) j = closing(toks, j) + 1;
    while (j < end && isPunct(toks[j], '[') && isPunct(toks[j + 1], ']')) j += 2;
  }
  return j;
}

function nonNullPrimary(toks: Tok[], i: number, end: number): number {
  const t = toks[i];
  if (!t || i >= end) return -1;
  const call = (k: number) => (isPunct(toks[k], '(') ? closing(toks, k) + 1 : -1);
  if (t.kind === 'number' || t.kind === 'string' || isWord(t, 'true', 'false')) return i + 1;
  if (isWord(t, ...NOW_WORDS)) return i + 1;
  if (isPunct(t, '(')) {
    const close = closing(toks, i);
    if (isWord(toks[i + 1], 'select')) return countSubquery(toks, i + 1, close) ? close + 1 : -1;
    return nonNullExpr(toks, i + 1, close) === close ? close + 1 : -1;
  }
  if (isWord(t, 'not') && isWord(toks[i + 1], 'exists')) return call(i + 2);
  if (isWord(t, 'exists', ...NOW, ...BUILDERS)) return call(i + 1);
  if (isWord(t, 'array')) return isPunct(toks[i + 1], '[') ? closing(toks, i + 1) + 1 : call(i + 1);
  if (isWord(t, 'count')) {
    let j = call(i + 1);
    if (j > 0 && isWord(toks[j], 'filter')) j = call(j + 1);
    if (j > 0 && isWord(toks[j], 'over')) j = isPunct(toks[j + 1], '(') ? call(j + 1) : j + 2;
    return j;
  }
  if (isWord(t, ...RANKS) && isPunct(toks[i + 1], '(') && isPunct(toks[i + 2], ')') && isWord(toks[i + 3], 'over')) {
    return isPunct(toks[i + 4], '(') ? call(i + 4) : i + 5;
  }
  if (isWord(t, 'coalesce') && isPunct(toks[i + 1], '(')) {
    const close = closing(toks, i + 1);
    const args = splitTopLevel(toks, i + 2, close);
    return args.some(([a, b]) => nonNullExpr(toks, a, b) === b) ? close + 1 : -1;
  }
  return -1;
}

/** words that let a subquery give no row (or several): after them an aggregate's one row is not certain */
const NOT_ONE_ROW = ['group', 'having', 'limit', 'offset', 'fetch', 'union', 'intersect', 'except', 'window'];

/** True when the subquery `select … ` in [from, to) is `SELECT count(…) [AS a] FROM …` that always gives one row. */
function countSubquery(toks: Tok[], from: number, to: number): boolean {
  const top: number[] = [];
  for (let k = from; k < to; k++) {
    top.push(k);
    if (isPunct(toks[k], '(') || isPunct(toks[k], '[')) k = closing(toks, k);
  }
  if (top.some((k) => isWord(toks[k], ...NOT_ONE_ROW))) return false;
  const end = top.find((k) => k > from && isWord(toks[k], ...LIST_END)) ?? to;
  const items = splitTopLevel(toks, from + 1, end);
  if (items.length !== 1) return false;
  const [a, b] = items[0];
  // count(…) OVER (…) is a window function: one row per input row, none without input
  if (!isWord(toks[a], 'count') || toks.slice(a, b).some((x) => isWord(x, 'over'))) return false;
  const j = nonNullExpr(toks, a, b);
  return j >= 0 && onlyAlias(toks, j, b);
}

/** [start, end) ranges of the comma-separated items between `from` and `to`, at bracket depth 0. */
function splitTopLevel(toks: Tok[], from: number, to: number): Array<[number, number]> {
  const items: Array<[number, number]> = [];
  let start = from;
  for (let k = from; k < to; k++) {
    if (isPunct(toks[k], '(') || isPunct(toks[k], '[')) k = closing(toks, k);
    else if (isPunct(toks[k], ',')) {
      items.push([start, k]);
      start = k + 1;
    }
  }
  if (to > from) items.push([start, to]);
  return items;
}

const LIST_END = ['from', 'where', 'group', 'having', 'window', 'order', 'limit', 'offset', 'fetch', 'for', 'into'];
const FROM_END = ['where', 'group', 'having', 'window', 'order', 'limit', 'offset', 'fetch', 'for'];
/** words that can follow a relation where an alias could stand */
const NOT_ALIAS = ['on', 'using', 'join', 'left', 'right', 'full', 'inner', 'cross', 'natural', 'outer', 'lateral', 'tablesample', ...FROM_END];

interface SelectList {
  toks: Tok[];
  /** the list's items as [start, end) token ranges */
  items: Array<[number, number]>;
  /** where the list ends: its FROM, or the end of the statement */
  end: number;
  /** bracket-depth-0 token indexes */
  top: number[];
}

/** The outermost select or RETURNING list, or undefined under a set operation. */
function outermostList(sql: string): SelectList | undefined {
  const toks = tokenize(sql);
  const top: number[] = [];
  for (let k = 0; k < toks.length; k++) {
    top.push(k);
    if (isPunct(toks[k], '(') || isPunct(toks[k], '[')) k = closing(toks, k) - 1;
  }
  if (top.some((k) => isWord(toks[k], 'union', 'intersect', 'except'))) return undefined;
  let start = -1;
  for (const k of top) if (isWord(toks[k], 'returning')) start = k + 1;
  const returning = start >= 0;
  if (!returning) {
    for (const k of top) if (isWord(toks[k], 'select')) start = k + 1;
    if (start < 0) return undefined;
    if (isWord(toks[start], 'all')) start++;
    if (isWord(toks[start], 'distinct')) {
      start++;
      if (isWord(toks[start], 'on') && isPunct(toks[start + 1], '(')) start = closing(toks, start + 1) + 1;
    }
  }
  // a RETURNING list runs to the statement's end; a select list to its FROM, WHERE, …
  const end = returning ? toks.length : (top.find((k) => k >= start && isWord(toks[k], ...LIST_END)) ?? toks.length);
  return { toks, items: splitTopLevel(toks, start, end), end, top };
}

/** True when only nothing, `AS alias` or a bare alias follows `j` in the item ending at `b`. */
function onlyAlias(toks: Tok[], j: number, b: number): boolean {
  const rest = b - j;
  return rest === 0 || (rest === 2 && isWord(toks[j], 'as')) || (rest === 1 && (toks[j].kind === 'ident' || toks[j].kind === 'quoted'));
}

/**
 * For each of the `columns` result columns, whether its expression in the outermost select or
 * RETURNING list is provably never null (rule 3). All false when the list cannot be matched to the
 * columns one to one (`*`, a set operation).
 */
export function provenNonNull(sql: string, columns: number): boolean[] {
  const list = outermostList(sql);
  if (!list || list.items.length !== columns) return new Array<boolean>(columns).fill(false);
  return list.items.map(([a, b]) => {
    const j = nonNullExpr(list.toks, a, b);
    return j >= 0 && onlyAlias(list.toks, j, b);
  });
}

/**
 * For each of the `columns` result columns, whether it is `alias.column` of a plain table bound in
 * the outermost FROM clause outside any outer join's nullable side (rule 2's exception: such a
 * column keeps its table's NOT NULL even where the same table is also outer-joined elsewhere).
 * Relations in `ctes` are not plain tables: their columns may come from an outer join of their own.
 */
export function preservedReferences(sql: string, columns: number): boolean[] {
  const none = new Array<boolean>(columns).fill(false);
  const list = outermostList(sql);
  if (!list || list.items.length !== columns || list.end >= list.toks.length) return none;
  const { toks, top } = list;
  const defined = ctes(toks);
  const preserved = new Set<string>();
  const at = top.indexOf(list.end);
  for (let p = at; p < top.length; p++) {
    const k = top[p];
    if (isWord(toks[k], ...FROM_END) && k !== list.end) break;
    if (isWord(toks[k], 'right', 'full')) return none;
    const opens = isWord(toks[k], 'from', 'join') || isPunct(toks[k], ',');
    if (!opens) continue;
    const nullable = isWord(toks[k], 'join') && (isWord(toks[k - 1], 'left') || (isWord(toks[k - 1], 'outer') && isWord(toks[k - 2], 'left')));
    let j = k + 1;
    if (toks[j]?.kind !== 'ident' && toks[j]?.kind !== 'quoted') continue;
    if (isWord(toks[j], 'lateral', 'only')) continue;
    while (isPunct(toks[j + 1], '.') && toks[j + 2]) j += 2;
    const relation = toks[j].text;
    // a function in FROM (`unnest($1) u`) is not a table: its columns carry no NOT NULL
    if (nullable || defined.has(relation) || isPunct(toks[j + 1], '(')) continue;
    if (isWord(toks[j + 1], 'as')) j++;
    const next = toks[j + 1];
    preserved.add((next?.kind === 'ident' && !NOT_ALIAS.includes(next.text)) || next?.kind === 'quoted' ? next.text : relation);
  }
  return list.items.map(([a, b]) => {
    const t = toks[a];
    return (
      (t?.kind === 'ident' || t?.kind === 'quoted') &&
      preserved.has(t.text) &&
      isPunct(toks[a + 1], '.') &&
      (toks[a + 2]?.kind === 'ident' || toks[a + 2]?.kind === 'quoted') &&
      onlyAlias(toks, a + 3, b)
    );
  });
}

/** Columns a `-- not null: a, b` line in the query's text asserts are never null. */
export function assertedNonNull(sql: string): string[] {
  const names: string[] = [];
  for (const m of sql.matchAll(/^\s*--\s*not null:\s*(.+)$/gim)) names.push(...m[1].split(/[\s,]+/).filter(Boolean));
  return names;
}
