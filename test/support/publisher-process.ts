/**
 * A publisher process (test/support/publisher-child.ts: the real publisher, its cron tick driven at
 * a test's pace) for the tests that run several on one database: its stdout lines as they come (the
 * child's event lines and, at LOG_LEVEL=info, the publisher's pino lines), its exit, and its stdin
 * for the words a child waits for (FAULTS_WAIT_START=1, FAULTS_WAIT_GO=1).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ROOT } from '../../lib/core/paths.js';
import { waitFor } from './faults.js';
import { entry } from './entries.js';

/** One file's outcome as the publisher logged it ('feed hour published', publisher/publish.ts). */
export interface LoggedFile {
  feed: string;
  zone: string;
  hour: string;
  outcome: 'written' | 'unchanged';
  /** when the parent read the line */
  at: number;
}

export interface PublisherProcess {
  proc: ChildProcess;
  /** every stdout line, in order */
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** what it printed on stderr */
  stderr(): string;
  /** the files it published, from its info log lines */
  files(): LoggedFile[];
  /** writes a line on its stdin: `start` for a FAULTS_WAIT_START=1 child, `go` for a FAULTS_WAIT_GO=1 one */
  say(word: 'start' | 'go'): void;
  /** waits until a stdout line starts with `prefix` (or the process ends: then throws with its stderr) */
  line(prefix: string, timeoutMs?: number): Promise<string>;
}

export function startPublisherProcess(env: Record<string, string>): PublisherProcess {
  const proc = spawn(process.execPath, [entry('publisher-child')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const files: LoggedFile[] = [];
  createInterface({ input: proc.stdout }).on('line', (l) => {
    lines.push(l);
    if (!l.startsWith('{')) return;
    try {
      const rec = JSON.parse(l);
      if (rec.msg === 'feed hour published') files.push({ feed: rec.feed, zone: rec.zone, hour: rec.hour, outcome: rec.outcome, at: Date.now() });
    } catch {
      // a line that is not the logger's
    }
  });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc,
    lines,
    exited,
    stderr: () => stderr,
    files: () => [...files],
    say: (word) => proc.stdin.write(`${word}\n`),
    async line(prefix, timeoutMs = 60_000) {
      const found = await waitFor(
        `a "${prefix}" line from publisher ${proc.pid}`,
        () => lines.find((l) => l.startsWith(prefix)) ?? (proc.exitCode !== null || proc.signalCode !== null ? 'exited' : undefined),
        timeoutMs,
        20,
      );
      if (found === 'exited') {
        // from its first error line (a Node warning may come before it)
        const from = Math.max(0, stderr.search(/error/i));
        throw new Error(`publisher ${proc.pid} exited (${proc.exitCode ?? proc.signalCode}) before "${prefix}": ${stderr.slice(from, from + 1500)}`);
      }
      return found;
    },
  };
}
