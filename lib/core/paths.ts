/** Absolute paths of the project's own folders, independent of the working directory. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

/**
 * The project's root: the nearest folder above this module that holds package.json. A module is
 * two levels under it in the sources (lib/core/) and one in a bundle of dist/ (scripts/build.ts),
 * so the root is found rather than counted.
 */
function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
/** The bundled entry points (scripts/build.ts): what `make run`, production and the tests' child processes run. */
export const DIST_DIR = join(ROOT, 'dist');
export const SQL_DIR = join(ROOT, 'sql');
/** The official standards; tests read them from here (or $SPECS_DIR). */
export const SPECS_DIR = process.env.SPECS_DIR ?? join(ROOT, '..', 'shared', 'specs');
/** Tools shared beside the project (the official GBFS validator); tests read them from here (or $SHARED_TOOLS_DIR). */
export const TOOLS_DIR = process.env.SHARED_TOOLS_DIR ?? join(ROOT, '..', 'shared', 'tools');
