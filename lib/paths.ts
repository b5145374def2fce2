/** Absolute paths of the project's own folders, independent of the working directory. */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

// one level under the root, here as in a bundle of dist/ (scripts/build.ts puts every bundle there)
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The bundled entry points (scripts/build.ts): what `make run`, production and the tests' child processes run. */
export const DIST_DIR = join(ROOT, 'dist');
export const SQL_DIR = join(ROOT, 'sql');
/** The official standards; tests read them from here (or $SPECS_DIR). */
export const SPECS_DIR = process.env.SPECS_DIR ?? join(ROOT, '..', 'shared', 'specs');
/** Tools shared beside the project (the official GBFS validator); tests read them from here (or $SHARED_TOOLS_DIR). */
export const TOOLS_DIR = process.env.SHARED_TOOLS_DIR ?? join(ROOT, '..', 'shared', 'tools');
