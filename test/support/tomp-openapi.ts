/**
 * The official TOMP 1.6.1 OpenAPI file as JSON Schema validators for the tests. The file is parsed
 * with `yaml` (js-yaml 5 rejects it, see specs/tomp/README.md) and its OAS 3.0 schemas are turned
 * into JSON Schema for Ajv:
 *   - `nullable: true` becomes a `null` alternative of the type;
 *   - `discriminator` is dropped and its `oneOf` becomes `anyOf` (the branches overlap, so a plain
 *     JSON Schema validator would reject valid data with "must match exactly one schema");
 *   - `$ref: #/components/schemas/X` points into `definitions`; `example`, `deprecated` and the
 *     free-text `format`s of the file (URL, float, http-date, …) are removed.
 * Our documented deviations from the upstream file are applied here, in ONE place (DEVIATIONS).
 * Without the specs (SPECS_DIR) `loadTompSpec()` returns undefined and the tests skip.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { expect } from 'chai';
import type { Response } from 'supertest';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import { SPECS_DIR } from '../../lib/core/paths.js';

const addFormats = ((addFormatsImport as any).default ?? addFormatsImport) as typeof import('ajv-formats').default;

const TOMP_SPEC_FILE = join(SPECS_DIR, 'tomp', 'TOMP-API-1.6.1.yaml');

type Json = any;

const KEPT_FORMATS = new Set(['date-time', 'date', 'email', 'uri']);

function convert(node: Json): Json {
  if (Array.isArray(node)) return node.map(convert);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'example' || k === 'examples' || k === 'deprecated' || k === 'discriminator' || k === 'nullable' || k === 'xml') continue;
    if (k === 'format' && !KEPT_FORMATS.has(String(v))) continue;
    if (k === '$ref' && typeof v === 'string') {
      out.$ref = v.replace('#/components/schemas/', '#/definitions/');
      continue;
    }
    out[k] = convert(v);
  }
  if (node.discriminator && out.oneOf) {
    out.anyOf = out.oneOf;
    delete out.oneOf;
  }
  if (node.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/**
 * Where we knowingly differ from the upstream 1.6.1 file (docs/tomp-api.md, "Deviations"):
 * 1. negative coordinates are valid (upstream `minimum: 0` on lng/lat and basePoint, issue #593);
 * 2. the seed's state names win: START_FINISHING (and STARTED for legs) are booking/leg states;
 * 3. asset.maxRange is in meters, so its upstream `maximum: 100` cannot hold.
 */
const DEVIATIONS: Array<{ what: string; apply: (defs: Record<string, Json>) => void }> = [
  {
    what: 'negative coordinates are valid',
    apply: (d) => {
      d.coordinates.properties.lng = { type: 'number', minimum: -180, maximum: 180 };
      d.coordinates.properties.lat = { type: 'number', minimum: -90, maximum: 90 };
      delete d.coordinates.properties.alt.minimum;
      d.basePoint.items = { type: 'number' };
    },
  },
  {
    what: 'START_FINISHING (and STARTED) are booking and leg states',
    apply: (d) => {
      d.bookingState.enum = [...new Set([...d.bookingState.enum, 'STARTED', 'START_FINISHING'])];
      d.legState.enum = [...new Set([...d.legState.enum, 'STARTED', 'START_FINISHING'])];
    },
  },
  {
    what: 'asset.maxRange is meters, without the upstream maximum of 100',
    apply: (d) => {
      delete d.asset.properties.maxRange.maximum;
    },
  },
];

export interface TompSpec {
  /** the raw parsed OpenAPI document */
  doc: Json;
  /** validator of the 2xx JSON body of `method path` (spec path, e.g. `/support/`) */
  response(path: string, method: string, status: number): ValidateFunction;
  /** validator of one named component schema */
  schema(name: string): ValidateFunction;
  /** response headers the spec marks as required for `method path status` */
  requiredHeaders(path: string, method: string, status: number): string[];
}

let cached: TompSpec | undefined | null = null;

export function loadTompSpec(): TompSpec | undefined {
  if (cached !== null) return cached;
  if (!existsSync(TOMP_SPEC_FILE)) return (cached = undefined);
  const doc = parse(readFileSync(TOMP_SPEC_FILE, 'utf8'));
  const definitions: Record<string, Json> = convert(doc.components.schemas);
  for (const d of DEVIATIONS) d.apply(definitions);
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'tomp', definitions });
  const compiled = new Map<string, ValidateFunction>();
  const compileRef = (key: string, schema: Json) => {
    let fn = compiled.get(key);
    if (!fn) {
      fn = ajv.compile(schema);
      compiled.set(key, fn);
    }
    return fn;
  };
  const resolve = (obj: Json): Json => {
    // responses and headers may themselves be $refs into components
    if (obj && typeof obj.$ref === 'string' && obj.$ref.startsWith('#/components/')) {
      const [, , kind, name] = obj.$ref.split('/');
      return doc.components[kind][name];
    }
    return obj;
  };
  const operation = (path: string, method: string) => {
    const op = doc.paths[path]?.[method.toLowerCase()];
    if (!op) throw new Error(`the TOMP spec has no ${method} ${path}`);
    return op;
  };
  return (cached = {
    doc,
    response(path, method, status) {
      const res = resolve(operation(path, method).responses[String(status)]);
      const schema = res?.content?.['application/json']?.schema;
      if (!schema) throw new Error(`no JSON schema for ${method} ${path} ${status}`);
      const converted = JSON.parse(JSON.stringify(convert(schema)).replace(/"#\/definitions\//g, '"tomp#/definitions/'));
      return compileRef(`${method} ${path} ${status}`, converted);
    },
    schema(name) {
      return compileRef(`schema ${name}`, { $ref: `tomp#/definitions/${name}` });
    },
    requiredHeaders(path, method, status) {
      const res = resolve(operation(path, method).responses[String(status)]);
      return Object.entries(res?.headers ?? {})
        .filter(([, h]) => resolve(h as Json)?.required === true)
        .map(([name]) => name);
    },
  });
}

/** Asserts a 2xx response against the official schema of `method path` and its required headers (no-op without the specs). */
export function conforms(spec: TompSpec | undefined, res: Response, path: string, method: string): void {
  if (!spec) return;
  const validate = spec.response(path, method, res.status);
  expect(validate(res.body), `${method} ${path}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).to.equal(true);
  for (const h of spec.requiredHeaders(path, method, res.status)) expect(res.headers[h.toLowerCase()], `header ${h}`).to.be.a('string');
}
