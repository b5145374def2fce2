/**
 * Named queries typed from the database: `sql('PartnerZone')` is the same statement as
 * `q('PartnerZone')`, carrying the parameter tuple and result row that scripts/sql-types.ts read
 * from Postgres into queries.gen.ts. The runner's typed overloads (lib/core/db.ts) take it, so
 * `db.many(sql('PartnerZones'), [zones])` checks its parameters and returns typed rows, and a
 * renamed column fails the type check where its rows are read.
 */
import { q, type NamedQuery } from './catalog.js';
import type { Queries } from './queries.gen.js';

export type { Queries } from './queries.gen.js';

/** The name of a query in sql/queries/*.sql. */
export type QueryName = keyof Queries;

// Phantom: the types ride on the query object for the compiler only; at run time it is the plain
// NamedQuery that q() returns.
declare const paramsOf: unique symbol;
declare const rowOf: unique symbol;

/** A named query with the parameters it takes (`P`, a tuple) and the row it returns (`R`). */
export interface TypedQuery<P extends readonly unknown[], R> extends NamedQuery {
  readonly [paramsOf]: P;
  readonly [rowOf]: R;
}

/** A NamedQuery that carries no types: what the runner's untyped overloads accept, so that a typed query never falls through to them. */
export type UntypedQuery = NamedQuery & { readonly [paramsOf]?: never };

/** The parameter tuple of query `N`. */
export type ParamsOf<N extends QueryName> = Queries[N]['params'];

/** The result row of query `N`. */
export type RowOf<N extends QueryName> = Queries[N]['row'];

/** The typed query of name `N`. */
export type QueryOf<N extends QueryName> = TypedQuery<ParamsOf<N>, RowOf<N>>;

/** The arguments after a typed query: its parameter tuple, which may be left out when it is empty. */
export type ParamsArg<P extends readonly unknown[]> = P extends readonly [] ? [params?: readonly []] : [params: Readonly<P>];

/** The named query `name`, typed. Throws at first use if it does not exist, like q(). */
export function sql<N extends QueryName>(name: N): QueryOf<N> {
  return q(name) as QueryOf<N>;
}
