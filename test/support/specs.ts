/**
 * The official schemas (MDS, GBFS) from SPECS_DIR, compiled the way the specs READMEs say:
 * JSON Schema 2020-12 (MDS 2.0 bundles) with Ajv2020, draft-06 (MDS 1.2.0 / 0.4.1) with the draft-06
 * meta-schema added, draft-07 (GBFS) with the default Ajv; always `strict: false` + ajv-formats.
 * Never copied into the project. When the specs are absent, `specValidator` returns undefined and
 * `specOrSkip` skips the test with a message naming the path.
 *
 *   const validate = specOrSkip(this, 'mds/2.0/micromobility/trips.json');   // inside it(function () {…})
 *   expect(validate(body), describeSpecErrors(validate)).to.equal(true);
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { SPECS_DIR } from '../../lib/core/paths.js';

const addFormats = ((addFormatsImport as any).default ?? addFormatsImport) as typeof import('ajv-formats').default;
const require = createRequire(import.meta.url);

let ajv2020: Ajv2020 | undefined;
let ajv06: Ajv | undefined;
let ajv07: Ajv | undefined;
const cache = new Map<string, ValidateFunction>();

function engineFor(schema: { $schema?: string }): Ajv | Ajv2020 {
  const dialect = schema.$schema ?? '';
  if (dialect.includes('2020-12')) {
    ajv2020 ??= addFormats(new Ajv2020({ allErrors: true, strict: false }));
    return ajv2020;
  }
  if (dialect.includes('draft-06')) {
    if (!ajv06) {
      ajv06 = new Ajv({ allErrors: true, strict: false });
      ajv06.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json'));
      addFormats(ajv06);
    }
    return ajv06;
  }
  ajv07 ??= addFormats(new Ajv({ allErrors: true, strict: false }));
  return ajv07;
}

/**
 * The validator of the official schema at `path` (relative to SPECS_DIR, e.g.
 * `mds/1.2.0/status_changes.json`, `gbfs/v3.0/vehicle_status.json`), or undefined when it is absent.
 * A schema that does not compile throws (`mds/0.4.1/events.json` is broken upstream: validate 0.4
 * events against `mds/0.4.1/status_changes.json` records instead, see specs/mds/README.md).
 */
function specValidator(path: string): ValidateFunction | undefined {
  const cached = cache.get(path);
  if (cached) return cached;
  const file = join(SPECS_DIR, path);
  if (!existsSync(file)) return undefined;
  const schema = JSON.parse(readFileSync(file, 'utf8'));
  // the same $id appears in several files (1.2.0 and 0.4.1 share ids): compile without registering
  const { $id: _id, ...rest } = schema;
  const fn = engineFor(schema).compile(rest);
  cache.set(path, fn);
  return fn;
}

let mdsModels: Ajv2020 | undefined;

/**
 * The validator of an official MDS 2.0 OpenAPI model (`models/policy.yaml`, `models/geography.yaml`:
 * the Policy and Geography documents a city publishes), its relative `$ref`s resolved against the
 * other model files, or undefined when the specs are absent.
 */
export function mdsModelValidator(model: string): ValidateFunction | undefined {
  const root = join(SPECS_DIR, 'mds/2.0/openapi/models');
  if (!existsSync(join(root, model))) return undefined;
  if (!mdsModels) {
    // validateSchema off: models/event.yaml is broken upstream (specs/mds/README.md) and is not
    // referenced by the Policy or Geography models; each is compiled when it is asked for
    const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateSchema: false }));
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.yaml') ? [join(dir, e.name)] : [],
      );
    for (const file of walk(root)) {
      const { $id: _id, $schema: _s, ...schema } = parseYaml(readFileSync(file, 'utf8')) as Record<string, unknown>;
      ajv.addSchema(schema, pathToFileURL(file).href);
    }
    mdsModels = ajv;
  }
  return mdsModels.getSchema(pathToFileURL(join(root, model)).href);
}

/** In a mocha test: the validator, or skip the test with a clear message when the spec is absent. */
export function specOrSkip(test: Mocha.Context, path: string): ValidateFunction {
  const fn = specValidator(path);
  if (!fn) {
    console.warn(`    (skipped: official schema ${path} not found under ${SPECS_DIR}; set SPECS_DIR)`);
    test.skip();
  }
  return fn;
}

/** The first errors of the last validation, for assertion messages. */
export function describeSpecErrors(fn: ValidateFunction, max = 5): string {
  return JSON.stringify((fn.errors ?? []).slice(0, max), null, 1);
}
