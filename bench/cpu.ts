/**
 * CPU time of the processes a bench measures (Linux /proc, clock ticks of USER_HZ 100): with it a
 * cost per request holds across runs better than requests per second on a machine other work shares.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Session } from 'node:inspector/promises';
import type { Db } from '../lib/core/db.js';

/** utime + stime of one process, in seconds; NaN when it has gone. */
export function processCpuSeconds(pid: number): number {
  const t = processCpuTimes(pid);
  return t.user + t.system;
}

/** User and system CPU seconds of a process (all its threads), from /proc; NaN when it is gone. */
export function processCpuTimes(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / 100, system: Number(f[12]) / 100 };
  } catch {
    return { user: NaN, system: NaN };
  }
}

/** CPU seconds of the Postgres backends serving `datname` (their connections stay pooled); a backend that ended in between counts 0. */
export async function pgCpuSeconds(db: Db, datname: string): Promise<number> {
  const rows = await db.many<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [datname]);
  return rows.reduce((sum, r) => sum + (processCpuSeconds(r.pid) || 0), 0);
}

/**
 * Pins processes to CPUs (Linux sched_setaffinity through util-linux `taskset`, every thread with
 * -a; children forked later inherit it). Returns false where taskset is missing or refused.
 */
export function pinCpus(pid: number, cpuList: string): boolean {
  const r = spawnSync('taskset', ['-a', '-cp', cpuList, String(pid)], { stdio: 'ignore' });
  return r.status === 0;
}

/**
 * The postmaster of the cluster behind `db`: the parent of our own backend. Pinning it pins every
 * backend it forks afterwards (connections, autovacuum workers); its running auxiliaries are pinned
 * with it.
 */
export async function postgresPids(db: Db): Promise<number[]> {
  const { pid } = await db.one<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const postmaster = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
  const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return [postmaster, ...children];
}

/**
 * Starts a V8 CPU profile of this thread's JavaScript (a worker's is not in it); the returned
 * function stops it and writes it to `file`, making its folder (open in Chrome DevTools or speedscope).
 */
export async function startProfile(): Promise<(file: string) => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async (file) => {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}
