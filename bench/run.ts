/**
 * `make bench`: runs every benchmark in bench/*.bench.ts, each in its own process (so that each
 * peak RSS is its own), and writes one Markdown report with each figure, its goal and whether it
 * was met: bench/results/report.md (also printed). `BENCH=publisher,feeds make bench` runs a subset.
 *
 * `BENCH_REPEAT=n` runs each benchmark n times, one after the other: this machine's figures move by
 * ±30 % and more from one run to the next, and one run's verdict on a goal says little. The report
 * then gives each figure's median over the runs, each run's value of every goal's figure, and a goal
 * as met when more than half of the runs met it.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join, basename } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import type { BenchResult } from './types.js';
import { ROOT } from '../lib/core/paths.js';

const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 1) || 1);

const BENCH_DIR = join(ROOT, 'bench');
// a random signing secret of this run (lib/core/config.ts has no default), inherited by every bench
// process and the API workers they start
process.env.SIGNING_SECRET ??= randomBytes(32).toString('hex');

async function runOne(file: string, out: string): Promise<void> {
  const mod = (await import(pathToFileURL(join(BENCH_DIR, file)).href)) as { run: () => Promise<BenchResult> };
  const result = await mod.run();
  writeFileSync(out, JSON.stringify(result));
  process.exit(0);
}

function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined) return 'n/a';
  return Number.isInteger(v) ? v.toLocaleString('en-US') : String(Math.round(v * 100) / 100);
}

function report(results: Array<{ file: string; result?: BenchResult; error?: string; seconds: number }>): string {
  const lines = [`# Benchmark report`, '', `Machine: ${process.platform} ${process.arch}, Node ${process.version}, ${new Date().toISOString()}`, ''];
  lines.push('| benchmark | goal | measured | met |', '|---|---|---|---|');
  for (const r of results) {
    for (const g of r.result?.goals ?? []) {
      lines.push(
        `| ${r.result!.name} | ${g.metric} ${g.goal} | ${fmt(r.result!.metrics[g.metric])} | ${g.met === null ? 'not measured' : g.met ? 'yes' : '**no**'} |`,
      );
    }
    if (r.error) lines.push(`| ${basename(r.file, '.bench.ts')} | — | failed: ${r.error.split('\n')[0]} | **no** |`);
  }
  for (const r of results) {
    lines.push('', `## ${r.result?.name ?? r.file} (${Math.round(r.seconds)} s)`, '');
    if (r.error) {
      lines.push('```', r.error.slice(0, 2000), '```');
      continue;
    }
    lines.push('| figure | value |', '|---|---|');
    for (const [k, v] of Object.entries(r.result!.metrics)) lines.push(`| ${k} | ${fmt(v)} |`);
    for (const n of r.result!.notes) lines.push(`- ${n}`);
  }
  return lines.join('\n') + '\n';
}

function median(values: number[]): number {
  const v = [...values].sort((x, y) => x - y);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/**
 * One result from the runs of a benchmark: each figure's median, each goal met when more than half
 * of the runs that measured it met it, and each run's value of the goals' figures in the notes.
 */
function merged(runs: BenchResult[]): BenchResult {
  if (runs.length === 1) return runs[0];
  const first = runs[0];
  const metrics: BenchResult['metrics'] = {};
  for (const key of Object.keys(first.metrics)) {
    const values = runs.map((r) => r.metrics[key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    metrics[key] = values.length ? median(values) : null;
  }
  const goals = first.goals.map((g) => {
    const verdicts = runs.map((r) => r.goals.find((x) => x.metric === g.metric && x.goal === g.goal)?.met ?? null).filter((m) => m !== null);
    const met = verdicts.filter(Boolean).length;
    return {
      metric: g.metric,
      goal: `${g.goal} (met in ${met} of ${verdicts.length} runs; median)`,
      met: verdicts.length ? met * 2 > verdicts.length : null,
    };
  });
  const perRun = first.goals.map((g) => `${g.metric}: ${runs.map((r) => fmt(r.metrics[g.metric])).join(' / ')}`);
  return {
    name: first.name,
    metrics,
    goals,
    notes: [`medians of ${runs.length} runs; each run's value of the goals' figures: ${perRun.join('; ')}`, ...first.notes],
  };
}

async function main(): Promise<void> {
  const oneIdx = process.argv.indexOf('--one');
  if (oneIdx > 0) return runOne(process.argv[oneIdx + 1], process.argv[oneIdx + 2]);
  const only = process.env.BENCH?.split(',').map((s) => s.trim());
  const files = readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith('.bench.ts'))
    .filter((f) => !only || only.includes(basename(f, '.bench.ts')))
    .sort();
  const tmp = join(tmpdir(), `bench-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  const results: Array<{ file: string; result?: BenchResult; error?: string; seconds: number }> = [];
  for (const file of files) {
    const started = Date.now();
    const runs: BenchResult[] = [];
    let error: string | undefined;
    for (let i = 1; i <= REPEAT && !error; i++) {
      console.log(`\n=== ${file}${REPEAT > 1 ? ` (run ${i} of ${REPEAT})` : ''}`);
      const out = join(tmp, `${file}.${i}.json`);
      const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(BENCH_DIR, 'run.ts'), '--one', file, out], {
        stdio: ['ignore', 'inherit', 'pipe'],
        encoding: 'utf8',
        env: process.env,
      });
      try {
        runs.push(JSON.parse(readFileSync(out, 'utf8')) as BenchResult);
      } catch {
        error = (child.stderr || `exit ${child.status}`).trim();
      }
    }
    const seconds = (Date.now() - started) / 1000;
    results.push(error ? { file, error, seconds } : { file, result: merged(runs), seconds });
  }
  rmSync(tmp, { recursive: true, force: true });
  const md = report(results);
  mkdirSync(join(BENCH_DIR, 'results'), { recursive: true });
  writeFileSync(join(BENCH_DIR, 'results', 'report.md'), md);
  console.log(`\n${md}\nwritten to bench/results/report.md`);
  if (results.some((r) => r.error)) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
