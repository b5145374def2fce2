/**
 * Writes docs/openapi/{partner,tomp,feeds,legacy}.json from api/openapi (test/openapi.test.ts fails when
 * the committed files are stale). `--check` only compares and exits 1 when they differ.
 *
 *   node --import tsx bin/export-openapi.ts [--check]
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { EXPORT_DIR, exportedFiles } from '../api/docs/export.js';

const check = process.argv.includes('--check');
let stale = 0;
mkdirSync(EXPORT_DIR, { recursive: true });
for (const [name, content] of Object.entries(exportedFiles())) {
  const path = join(EXPORT_DIR, name);
  const same = existsSync(path) && readFileSync(path, 'utf8') === content;
  if (same) continue;
  stale++;
  if (check) console.error(`stale: docs/openapi/${name}`);
  else {
    writeFileSync(path, content);
    console.log(`wrote docs/openapi/${name}`);
  }
}
if (check && stale) {
  console.error('run: node --import tsx bin/export-openapi.ts');
  process.exit(1);
}
if (!stale) console.log('docs/openapi is up to date');
