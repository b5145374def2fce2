/**
 * TypeScript shapes of the values node-postgres exchanges with Postgres, as the generated query
 * types (queries.gen.ts) name them.
 */

/** A parsed json/jsonb value: what the database holds has no declared shape, so callers narrow it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * What a json/jsonb parameter accepts. node-postgres JSON-encodes an object but sends a JS array as
 * a Postgres array literal (`{…}`), which is not JSON: an array must be passed JSON.stringify'd.
 */
export type JsonParam = string | number | boolean | { readonly [key: string]: unknown };

/**
 * An interval as node-postgres parses it (postgres-interval): only the non-zero parts are present.
 * Exported for queries.gen.ts, which imports it once a query returns an interval (none does yet).
 * @public
 */
export interface PgInterval {
  years?: number;
  months?: number;
  days?: number;
  hours?: number;
  minutes?: number;
  seconds?: number;
  milliseconds?: number;
}

/** The row of a statement that returns no columns (DML without RETURNING): nothing to read from it. */
export type NoRow = Record<never, never>;
