/**
 * Building blocks of our three OpenAPI 3.1 documents (partner rental API, TOMP subset, feeds).
 * The documents are built in code from the same JSON Schemas the routes validate with (schemas/…),
 * so a schema change shows in the docs without anyone remembering to edit them; what only the docs
 * need (response envelopes the code builds by hand) lives in lib/openapi/records-*.ts.
 */

export type Schema = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string; [k: string]: unknown };
  servers: { url: string; description?: string }[];
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

export interface PathItem {
  summary?: string;
  description?: string;
  servers?: { url: string; description?: string }[];
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
 * `items`), `definitions` becomes `$defs`. The code's schema objects are never modified.
 */
export function oas(schema: object): Schema {
  return convert(schema) as Schema;
}

function convert(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(convert);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === '$id') continue;
    if (k === 'items' && Array.isArray(v)) {
      out.prefixItems = v.map(convert);
      continue;
    }
    if (k === 'additionalItems') {
      if (Array.isArray((node as { items?: unknown }).items)) out.items = convert(v);
      continue;
    }
    if (k === 'definitions') {
      out.$defs = convert(v);
      continue;
    }
    out[k] = convert(v);
  }
  return out;
}

/** `{ in: path, required: true }`, the only way a path parameter may be declared. */
export function pathParam(name: string, description: string, schema: Schema = { type: 'string' }, example?: unknown): Parameter {
  return { name, in: 'path', required: true, description, schema, ...(example === undefined ? {} : { example }) };
}

export function queryParam(name: string, description: string, schema: Schema, required = false, example?: unknown): Parameter {
  return { name, in: 'query', required, description, schema, ...(example === undefined ? {} : { example }) };
}

export const json = (schema: Schema, example?: unknown, type = 'application/json'): Record<string, MediaType> => ({
  [type]: { schema, ...(example === undefined ? {} : { example }) },
});

export const header = (description: string, schema: Schema = { type: 'string' }, required = false): Header => ({ description, schema, ...(required ? { required } : {}) });

export const UUID_V4 = { type: 'string', format: 'uuid', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$' } as const;

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
