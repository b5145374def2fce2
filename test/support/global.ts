/**
 * Mocha global fixture: builds the migrated template database once before any test file runs, and
 * says clearly when the official specs are absent.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dropLeftoverDatabases, ensureTemplate } from './db.js';
import { SPECS_DIR } from '../../lib/paths.js';

process.env.NODE_ENV = 'test';
// a random signing secret of this run, inherited by the processes tests start (bin/run.ts, publisher)
process.env.SIGNING_SECRET ??= randomBytes(32).toString('hex');

export async function mochaGlobalSetup(): Promise<void> {
  await ensureTemplate();
  const dropped = await dropLeftoverDatabases();
  if (dropped.length) console.log(`  dropped ${dropped.length} database(s) kept by earlier runs' failed tests`);
  if (!existsSync(SPECS_DIR)) {
    // CI runs with ../shared beside the clone: its absence there is a broken run, not a reason to skip
    if (process.env.CI) throw new Error(`official specs not found at ${SPECS_DIR} (set SPECS_DIR): CI needs them`);
    console.warn(`\n  !! official specs not found at ${SPECS_DIR} (set SPECS_DIR): conformance tests will be skipped\n`);
  }
}
