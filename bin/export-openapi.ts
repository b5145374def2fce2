/**
 * Writes docs/openapi/{partner,tomp,feeds,legacy}.json from api/openapi and
 * docs/asyncapi/vehicles.json from the vehicle protocol (test/openapi.test.ts and
 * test/asyncapi.test.ts fail when the committed files are stale). `--check` only compares and exits
 * 1 when they differ.
 *
 *   node --import tsx bin/export-openapi.ts [--check]
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../lib/core/paths.js';
import { ASYNCAPI_EXPORT_DIR, EXPORT_DIR, exportedAsyncApiFiles, exportedFiles } from '../api/docs/export.js';

const check = process.argv.includes('--check');
let stale = 0;
for (const [dir, files] of [
  [EXPORT_DIR, exportedFiles()],
  [ASYNCAPI_EXPORT_DIR, exportedAsyncApiFiles()],
] as const) {
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    const path = join(dir, name);
    const shown = relative(ROOT, path);
    const same = existsSync(path) && readFileSync(path, 'utf8') === content;
    if (same) continue;
    stale++;
    if (check) console.error(`stale: ${shown}`);
    else {
      writeFileSync(path, content);
      console.log(`wrote ${shown}`);
    }
  }
}
if (check && stale) {
  console.error('run: node --import tsx bin/export-openapi.ts');
  process.exit(1);
}
if (!stale) console.log('docs/openapi and docs/asyncapi are up to date');
