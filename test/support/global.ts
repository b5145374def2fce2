/**
 * Mocha global fixtures and root hooks. The suite runs in parallel (`make test`: mocha --parallel,
 * one test file at a time per worker); the global setup and teardown run once, in the main process,
 * and the root hooks in every worker for every file.
 *
 * Setup: builds the migrated template database once before any test file runs (each file clones
 * it) and the bundled entry points that tests start as child processes (test/support/entries.ts),
 * says clearly when the official specs are absent, and opens the run's folder of reliability figures
 * (test/support/figures.ts) that the teardown adds up and prints.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { dropLeftoverDatabases, ensureTemplate } from './db.js';
import { flushFigures, printFigures } from './figures.js';
import { FAILURES_FILE, type FailureLine } from './reporter.js';
import { ROOT, SPECS_DIR } from '../../lib/core/paths.js';
import { ENTRIES, buildEntries } from '../../scripts/build.js';

process.env.NODE_ENV = 'test';
// a random signing secret of this run, inherited by the workers and the processes tests start
// (bin/run.ts, publisher); set here, at load, in the main process before any worker is forked
process.env.SIGNING_SECRET ??= randomBytes(32).toString('hex');
// the reliability figures of this run: workers inherit the folder from the main process
process.env.FIGURES_DIR ??= mkdtempSync(join(tmpdir(), 'platform-figures-'));

/** when the global setup began: the teardown prints the suite's time from here (issue 27: under 2 minutes) */
let setupAt = 0;

export async function mochaGlobalSetup(): Promise<void> {
  setupAt = performance.now();
  // the bundles child processes run (test/support/entries.ts), built from the sources of this run:
  // the platform's entry points and the publisher with fault injection
  await Promise.all([ensureTemplate(), buildEntries([...ENTRIES, 'test/support/publisher-child.ts'])]);
  const dropped = await dropLeftoverDatabases();
  if (dropped.length) console.log(`  dropped ${dropped.length} database(s) and standby slot(s) kept by earlier runs' failed tests`);
  if (!existsSync(SPECS_DIR)) {
    // CI runs with ../shared beside the clone: its absence there is a broken run, not a reason to skip
    if (process.env.CI) throw new Error(`official specs not found at ${SPECS_DIR} (set SPECS_DIR): CI needs them`);
    console.warn(`\n  !! official specs not found at ${SPECS_DIR} (set SPECS_DIR): conformance tests will be skipped\n`);
  }
}

export function mochaGlobalTeardown(): void {
  const dir = process.env.FIGURES_DIR!;
  printFigures(dir);
  console.log(`  suite time: ${((performance.now() - setupAt) / 1000).toFixed(1)} s from the global setup (template, bundles) to this teardown\n`);
  printFailures(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** The run's failures again, last: what a CI log read from its end must show (test/support/reporter.ts). */
function printFailures(dir: string): void {
  let text = '';
  try {
    text = readFileSync(join(dir, FAILURES_FILE), 'utf8');
  } catch {
    return; // none failed
  }
  const failures = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as FailureLine);
  console.log(`  ${failures.length} failing (in full above):`);
  for (const f of failures)
    console.log(`  - ${relative(ROOT, f.file) || '(no file)'}: ${f.title}\n      ${f.message.slice(0, 1200).replace(/\n/g, '\n      ')}`);
  console.log('');
}

export const mochaHooks = {
  /** After each test file: what it counted goes to the run's folder (a worker runs many files). */
  afterAll(): void {
    flushFigures(process.env.FIGURES_DIR!);
  },
};
