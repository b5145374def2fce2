/** Absolute paths of the project's own folders, independent of the working directory. */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SQL_DIR = join(ROOT, 'sql');
/** The official standards; tests read them from here (or $SPECS_DIR). */
export const SPECS_DIR = process.env.SPECS_DIR ?? join(ROOT, '..', 'shared', 'specs');
/** Tools shared beside the project (the official GBFS validator); tests read them from here (or $SHARED_TOOLS_DIR). */
export const TOOLS_DIR = process.env.SHARED_TOOLS_DIR ?? join(ROOT, '..', 'shared', 'tools');
