/**
 * The entry points tests start as child processes, as production runs them: the bundles of
 * scripts/build.ts under plain node (test/support/global.ts builds them once before any file runs,
 * so they are never older than the sources).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DIST_DIR } from '../../lib/core/paths.js';

type EntryName = 'run' | 'api' | 'publisher' | 'ingest' | 'ops' | 'publisher-child';

/** The path of an entry point's bundle: `spawn(process.execPath, [entry('api'), …])`. */
export function entry(name: EntryName): string {
  const path = join(DIST_DIR, `${name}.mjs`);
  // a bench run directly (node --import tsx bench/…) has no global setup to build them
  if (!existsSync(path)) throw new Error(`${path} is missing: run make build first (make test and make bench build it)`);
  return path;
}
