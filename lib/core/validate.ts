/**
 * One Ajv instance for everything we validate: request bodies (schemas/…) and what we emit. The
 * JSON Schemas in `schemas/` are `as const` objects, so `FromSchema<typeof X>` gives the TS type and
 * `compile(X)` the validator: one source for both.
 */
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormatsImport from 'ajv-formats';

// ajv-formats is CommonJS with a default export; normalise the interop shape once.
const addFormats = ((addFormatsImport as { default?: unknown }).default ?? addFormatsImport) as typeof import('ajv-formats').default;

const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
addFormats(ajv);

const cache = new WeakMap<object, ValidateFunction>();

/** Compiles once per schema object. */
export function compile<T = unknown>(schema: object): ValidateFunction<T> {
  let fn = cache.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  return fn as ValidateFunction<T>;
}

/** A short human-readable summary of Ajv errors (first few), for error `detail`s and logs. */
export function describeErrors(errors: ErrorObject[] | null | undefined, max = 3): string {
  if (!errors?.length) return 'invalid';
  return errors
    .slice(0, max)
    .map((e) => {
      const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'body';
      if (e.keyword === 'additionalProperties') return `${where}: unknown field ${(e.params as { additionalProperty: string }).additionalProperty}`;
      if (e.keyword === 'required') return `${where}: missing ${(e.params as { missingProperty: string }).missingProperty}`;
      return `${where} ${e.message}`;
    })
    .join('; ');
}

/**
 * Postgres text cannot hold U+0000: a body with it anywhere (string or key) is bad input, not a server
 * fault. Iterative, so a deeply nested value cannot exhaust the stack.
 */
export function containsNul(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (Array.isArray(v)) stack.push(...(v as readonly unknown[]));
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k.includes('\u0000')) return true;
        stack.push(x);
      }
    }
  }
  return false;
}
