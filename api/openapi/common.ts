/**
 * Building blocks of our three OpenAPI 3.1 documents (partner rental API, TOMP subset, feeds).
 * The documents are built in code from the same JSON Schemas the routes validate with (schemas/…),
 * so a schema change shows in the docs without anyone remembering to edit them. The partner and
 * TOMP documents are built from their families' endpoint tables (api/openapi/endpoints.ts).
 */

export type Schema = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string; [k: string]: unknown };
  servers: Server[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, PathItem>;
  components: {
    schemas?: Record<string, Schema>;
    responses?: Record<string, Response>;
    parameters?: Record<string, Parameter>;
    headers?: Record<string, Header>;
    securitySchemes?: Record<string, Record<string, unknown>>;
  };
  security?: SecurityRequirement[];
}

export type SecurityRequirement = Record<string, string[]>;

/**
 * The one server of a document (a document describes one host: a client with one base URL reaches
 * every path of it). `x-internal: false`: every document here is for outside integrators.
 */
export interface Server {
  url: string;
  description: string;
  'x-internal': false;
}

export const server = (url: string, description: string): Server => ({ url, description, 'x-internal': false });

export interface PathItem {
  summary?: string;
  description?: string;
  parameters?: (Parameter | Ref)[];
  get?: Operation;
  put?: Operation;
  post?: Operation;
  patch?: Operation;
  delete?: Operation;
}

export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  deprecated?: boolean;
  parameters?: (Parameter | Ref)[];
  requestBody?: { required?: boolean; description?: string; content: Record<string, MediaType> };
  responses: Record<string, Response | Ref>;
  security?: SecurityRequirement[];
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  description?: string;
  deprecated?: boolean;
  schema: Schema;
  example?: unknown;
}

export interface Header {
  description?: string;
  required?: boolean;
  schema: Schema;
}

export interface MediaType {
  schema?: Schema;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}

export interface Response {
  description: string;
  headers?: Record<string, Header | Ref>;
  content?: Record<string, MediaType>;
}

export interface Ref {
  $ref: string;
}

export const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string): Ref => ({ $ref: `#/components/${kind}/${name}` });
export const schemaRef = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/**
 * A code schema (ajv's default dialect, draft-07) in the dialect of OpenAPI 3.1 (JSON Schema
 * 2020-12), as a deep copy: tuple `items: [...]` becomes `prefixItems` (with `additionalItems` as
 * `items`), `definitions` becomes `$defs`, and `x-required` (members a route checks itself, so that
 * a missing one answers its own error code rather than the schema's) joins `required`: for clients
 * they are required all the same. The code's schema objects are never modified. With
 * `refs`, a schema object that is a named component (by identity) becomes its `$ref`, except `root`.
 */
export function oas(schema: object, refs?: ReadonlyMap<object, string>, root?: object): Schema {
  return convert(schema, refs, root) as Schema;
}

/** Array.isArray without its `any[]`: a schema's members are unknown until looked at. */
const isList = (v: unknown): v is readonly unknown[] => Array.isArray(v);

function convert(node: unknown, refs: ReadonlyMap<object, string> | undefined, root: object | undefined): unknown {
  if (Array.isArray(node)) return node.map((n) => convert(n, refs, root));
  if (node === null || typeof node !== 'object') return node;
  const name = node !== root ? refs?.get(node) : undefined;
  if (name) return schemaRef(name);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === '$id') continue;
    if (k === 'items' && Array.isArray(v)) {
      out.prefixItems = v.map((n) => convert(n, refs, root));
      continue;
    }
    if (k === 'additionalItems') {
      if (Array.isArray((node as { items?: unknown }).items)) out.items = convert(v, refs, root);
      continue;
    }
    if (k === 'definitions') {
      out.$defs = convert(v, refs, root);
      continue;
    }
    if (k === 'x-required' && Array.isArray(v)) continue;
    out[k] = convert(v, refs, root);
  }
  const checkedByRoute = (node as { 'x-required'?: unknown })['x-required'];
  if (isList(checkedByRoute)) out.required = [...new Set([...(isList(out.required) ? out.required : []), ...checkedByRoute])];
  return out;
}

/**
 * Named schemas of a document (components.schemas) from the code's own schema objects, and the
 * converter that refers to them: wherever one of these objects appears in another schema, the
 * document has a `$ref` to it instead of a copy.
 */
export function components<N extends Record<string, object>>(named: N): { schemas: Record<keyof N & string, Schema>; schema: (s: object) => Schema } {
  const refs = new Map<object, string>(Object.entries(named).map(([n, s]) => [s, n]));
  return {
    schemas: Object.fromEntries(Object.entries(named).map(([n, s]) => [n, oas(s, refs, s)])) as Record<keyof N & string, Schema>,
    schema: (s) => oas(s, refs),
  };
}

export const json = (schema: Schema, example?: unknown, type = 'application/json'): Record<string, MediaType> => ({
  [type]: { schema, ...(example === undefined ? {} : { example }) },
});

export const header = (description: string, schema: Schema = { type: 'string' }, required = false): Header => ({
  description,
  schema,
  ...(required ? { required } : {}),
});

/**
 * Of `components`, the ones `root` reaches through `$ref`s, directly or through other components:
 * a document built from a shared catalogue (the feed schemas of both hosts) carries only its own.
 */
export function reachable<T extends Record<string, Record<string, unknown> | undefined>>(root: unknown, components: T): T {
  const seen = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/') && !seen.has(v)) {
          seen.add(v);
          const [, , kind, name] = v.split('/');
          visit(components[kind]?.[name]);
        } else visit(v);
      }
    }
  };
  visit(root);
  const out: Record<string, Record<string, unknown> | undefined> = {};
  for (const [kind, all] of Object.entries(components)) {
    if (!all) continue;
    const kept = Object.entries(all).filter(([name]) => seen.has(`#/components/${kind}/${name}`));
    if (kept.length) out[kind] = Object.fromEntries(kept);
  }
  return out as T;
}

/** Every (method, path) a document describes, in document order. */
export function operationsOf(doc: OpenApiDocument): { method: HttpMethod; path: string; item: PathItem; op: Operation }[] {
  const out: { method: HttpMethod; path: string; item: PathItem; op: Operation }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (op) out.push({ method, path, item, op });
    }
  }
  return out;
}
