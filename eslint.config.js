// The linter of `make test` (typescript-eslint with type information): the recommended type-checked
// rules everywhere, no import cycles, and the folders' layering that the architecture depends on
// (docs/architecture.md "Folders and layers"):
//
//   schemas/            the JSON Schemas: import nothing of ours
//   lib/core/           config, db and the query loader, typed SQL, log, clock, store, metrics, replica, migrations
//   lib/domain/         rentals, TOMP holds, zones, pricing, credentials, fleet events, the MDS state machine, the gateway
//   lib/feeds/          feed records, roles, hours, the hourly-feed catalogue, GBFS builders
//   lib/publication/    what the API and the publisher share of published objects: keys, queue, status
//   api/  publisher/  ingest/  ops/  scripts/  bin/   the processes and tools, each on top of lib/
//
// Each layer of lib/ imports only the layers below it; lib/ imports none of the processes; the API
// and the publisher meet only in Postgres and the object store, so neither imports the other; the
// vehicle ingest meets them only in Postgres; the ops CLI's code (ops/) runs the publisher's backfill
// in process, never the API or the ingest.
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const LIB_LAYERS = ['core', 'domain', 'feeds', 'publication'];
const PROCESSES = ['api', 'publisher', 'ingest', 'ops', 'bin', 'scripts', 'test', 'bench'];

/** import-x/no-restricted-paths zones: `target` may not import from any of `from` (folders from the root) */
const zone = (target, from, message) => ({ target: `./${target}`, from: from.map((f) => `./${f}`), message });

const layering = [
  zone('schemas', ['lib', ...PROCESSES], 'schemas/ sits below everything: it imports nothing of the project (move a shared constant into schemas/)'),
  ...LIB_LAYERS.map((layer, i) =>
    zone(
      `lib/${layer}`,
      [...LIB_LAYERS.slice(i + 1).map((above) => `lib/${above}`), ...PROCESSES],
      `lib/${layer} imports only the layers below it (${LIB_LAYERS.slice(0, i).join(', ') || 'none'}) and no process (docs/architecture.md)`,
    ),
  ),
  zone(
    'api',
    ['publisher', 'ingest', 'ops', 'bin', 'scripts', 'test', 'bench'],
    'the API and the publisher meet only in Postgres and the object store: move what both run to lib/',
  ),
  zone(
    'publisher',
    ['api', 'ingest', 'ops', 'bin', 'scripts', 'test', 'bench'],
    'the publisher and the API meet only in Postgres and the object store: move what both run to lib/',
  ),
  zone(
    'ingest',
    ['api', 'publisher', 'ops', 'bin', 'scripts', 'test', 'bench'],
    'the ingest meets the API and the publisher only in Postgres: move what they share to lib/',
  ),
  zone(
    'ops',
    ['api', 'ingest', 'bin', 'scripts', 'test', 'bench'],
    'the ops CLI runs lib/ and the publisher in process, never the API or the ingest: move what they share to lib/',
  ),
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', '.tools/**', 'docs/**', 'bench/results/**', 'test-artifacts/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: { allowDefaultProject: ['*.js'] }, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `_`-prefixed parameters are kept for a signature (Koa middleware, pg-boss handlers)
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      // the modules a rule follows (no-cycle walks the graph) are parsed as TypeScript
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      // a cycle of value imports; scripts/lint.sh's madge pass also refuses cycles of type imports
      'import-x/no-cycle': 'error',
      'import-x/no-restricted-paths': ['error', { zones: layering }],
    },
  },
  {
    // tests and benches read HTTP answers through supertest/fetch, whose bodies are `any` by design
    // (the schemas they are checked against are the types); the unsafe-any family would only ask for
    // a cast on every line that reads a body
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
);
