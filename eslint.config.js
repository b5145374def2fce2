// The linter of `make test` (typescript-eslint with type information): the recommended type-checked
// rules everywhere, and the layering the architecture depends on (docs/architecture.md "Two
// processes"): lib/ is shared by both processes and imports neither; api/ and publisher/ meet only in
// Postgres and the object store, so neither imports the other.
import tseslint from 'typescript-eslint';

/** a no-restricted-imports rule forbidding the given top-level folders, with the reason */
const forbid = (folders, why) => ({
  'no-restricted-imports': ['error', { patterns: folders.map((f) => ({ group: [`**/${f}/**`, `../${f}/*`, `../../${f}/*`], message: why })) }],
});

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', 'docs/**', 'bench/results/**', 'test-artifacts/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: { allowDefaultProject: ['*.js'] }, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `_`-prefixed parameters are kept for a signature (Koa middleware, pg-boss handlers)
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['lib/**/*.ts'],
    rules: forbid(['api', 'publisher', 'bin', 'test', 'bench'], 'lib/ is shared by the API and the publisher: it imports neither (docs/architecture.md)'),
  },
  {
    files: ['api/**/*.ts'],
    rules: forbid(['publisher', 'bin', 'test', 'bench'], 'the API and the publisher meet only in Postgres and the object store: move what both need to lib/'),
  },
  {
    files: ['publisher/**/*.ts'],
    rules: forbid(['api', 'bin', 'test', 'bench'], 'the publisher and the API meet only in Postgres and the object store: move what both need to lib/'),
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
