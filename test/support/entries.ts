/**
 * The entry points tests start as child processes, as production runs them: the bundles of
 * scripts/build.ts under plain node (test/support/global.ts builds them once before any file runs,
 * so they are never older than the sources). `TEST_ENTRIES` is what the global setup builds.
 */
import { join } from 'node:path';
import { DIST_DIR } from '../../lib/paths.js';
import { ENTRIES } from '../../scripts/build.js';

/** the platform's entry points, and the publisher with fault injection (test/support/publisher-child.ts) */
export const TEST_ENTRIES = [...ENTRIES, 'test/support/publisher-child.ts'];

type EntryName = 'run' | 'api' | 'publisher' | 'ops' | 'publisher-child';

/** The path of an entry point's bundle: `spawn(process.execPath, [entry('api'), …])`. */
export function entry(name: EntryName): string {
  return join(DIST_DIR, `${name}.mjs`);
}
