/**
 * The build: every entry point bundled (esbuild) into one ES module under dist/, which `make run`,
 * a production deployment and the tests' child processes run with plain `node`.
 *
 * Why: a process that loads the API's ~200 TypeScript modules through tsx's loader spends about
 * twice the CPU in start-up of one that loads the bundle (1.05 vs 0.47 s for api/app.ts, measured
 * 2026-11-29 on the 2-core machine), and carries a transpiler at run time. The suite starts ~70 such
 * processes. Packages stay external: node_modules as npm installed them.
 *
 * Every bundle sits one level under the root (lib/core/paths.ts finds the root from either place);
 * a bundle is written beside its final name and renamed over it, so a process starting during a
 * build reads the old bundle or the new one, never half of one.
 *
 *   node --import tsx scripts/build.ts        (npm run build, make build)
 */
import { renameSync, writeFileSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { DIST_DIR, ROOT } from '../lib/core/paths.js';

/** the processes of the platform: one machine (make run), the API, the publisher, the vehicle ingest, the ops CLI */
export const ENTRIES = ['bin/run.ts', 'bin/api.ts', 'bin/publisher.ts', 'bin/ingest.ts', 'bin/ops.ts'];

/** Bundles `entries` (paths relative to the root) into dist/<name>.mjs; the paths written. */
export async function buildEntries(entries: string[] = ENTRIES): Promise<string[]> {
  const result = await build({
    entryPoints: entries.map((e) => join(ROOT, e)),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    packages: 'external',
    outdir: DIST_DIR,
    entryNames: '[name]',
    outExtension: { '.js': '.mjs' },
    write: false,
    logLevel: 'warning',
  });
  mkdirSync(DIST_DIR, { recursive: true });
  return result.outputFiles.map((f) => {
    const temporary = join(DIST_DIR, `.${basename(f.path)}.${process.pid}`);
    writeFileSync(temporary, f.contents);
    renameSync(temporary, f.path);
    return f.path;
  });
}

// no top-level await: the test setup loads this module too, and mocha requires its setup files
// (a module with top-level await cannot be required, and would load as a second, ESM copy of the
// modules it shares with the test files)
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  buildEntries().then(
    (written) => console.log(`built ${written.map((p) => p.slice(ROOT.length + 1)).join(', ')}`),
    (err: unknown) => {
      console.error(`build failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    },
  );
}
