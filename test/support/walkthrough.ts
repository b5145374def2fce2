/**
 * The README's walkthrough as a test sees it (test/readme-walkthrough.test.ts): the shell blocks
 * marked `<!-- walkthrough: NAME -->`, run in order by one bash session with curl and jq, exactly as
 * a reader pastes them into one terminal: `set -euo pipefail`, so a failing command, a failing
 * pipe or an unset variable stops the run at the block that has it.
 *
 * What each request answered is recorded without touching the commands: curl reads
 * `$CURL_HOME/.curlrc`, whose `write-out` adds one line per request to stderr (a command that sets
 * its own `-w` prints its status itself, and is not recorded).
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface WalkthroughBlock {
  name: string;
  code: string;
  /** 1-based line of the marker in the markdown */
  line: number;
}

const MARKER = /^<!-- walkthrough: ([a-z0-9-]+) -->$/;

/** The marked blocks, in order: each marker must be followed by a fenced `sh` block. */
export function readWalkthroughBlocks(markdown: string): WalkthroughBlock[] {
  const lines = markdown.split('\n');
  const blocks: WalkthroughBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = MARKER.exec(lines[i].trim());
    if (!m) continue;
    let j = i + 1;
    while (j < lines.length && lines[j].trim() === '') j++;
    if (lines[j]?.trim() !== '```sh') throw new Error(`README line ${i + 1}: the walkthrough marker "${m[1]}" is not followed by a \`\`\`sh block`);
    const end = lines.findIndex((l, k) => k > j && l.trim() === '```');
    if (end < 0) throw new Error(`README line ${j + 1}: the walkthrough block "${m[1]}" is not closed`);
    blocks.push({ name: m[1], code: lines.slice(j + 1, end).join('\n'), line: i + 1 });
  }
  return blocks;
}

/** Absolute path of an executable on PATH, or undefined. */
function findTool(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Skips the calling suite when a tool is missing, or throws under CI (as test/support/browser.ts does for chromium). */
export function requireTools(suite: Mocha.Context, tools: string[]): void {
  const missing = tools.filter((t) => !findTool(t));
  if (!missing.length) return;
  const what = `${missing.join(', ')} missing on PATH: the README walkthrough needs bash, curl, jq and coreutils (Debian: apt-get install curl jq)`;
  if (process.env.CI) throw new Error(`${what}; under CI this is a broken run, not a reason to skip`);
  console.log(`      skipped: ${what}`);
  suite.skip();
}

export interface CurlRequest {
  status: number;
  method: string;
  url: string;
}

export interface BlockRun {
  name: string;
  /** the run went past the block's last command */
  completed: boolean;
  stdout: string;
  stderr: string;
  /** the requests curl recorded, in order */
  requests: CurlRequest[];
}

export interface WalkthroughRun {
  exitCode: number | null;
  /** the command that stopped the run (bash's ERR trap), if one did */
  failure?: string;
  blocks: BlockRun[];
}

const BLOCK_LINE = '@@@walkthrough-block ';
const DONE_LINE = '@@@walkthrough-done';
const FAILED_LINE = '@@@walkthrough-failed ';
const CURL_LINE = '@@@curl ';

/**
 * Runs the blocks in one bash session in `cwd`, with only `env` (plus PATH, LANG and a private HOME
 * and CURL_HOME) in its environment.
 */
export async function runWalkthrough(
  blocks: WalkthroughBlock[],
  opts: { cwd: string; env: Record<string, string>; timeoutMs: number },
): Promise<WalkthroughRun> {
  const home = mkdtempSync(join(tmpdir(), 'walkthrough-home-'));
  try {
    writeFileSync(join(home, '.curlrc'), `write-out = "%{stderr}${CURL_LINE}%{http_code} %{method} %{url_effective}\\n"\n`);
    const script = [
      'set -euo pipefail',
      `trap 'echo "${FAILED_LINE}(exit $?) $BASH_COMMAND" >&2' ERR`,
      ...blocks.flatMap((b) => [`echo '${BLOCK_LINE}${b.name}'; echo '${BLOCK_LINE}${b.name}' >&2`, b.code]),
      `echo '${DONE_LINE}'; echo '${DONE_LINE}' >&2`,
      '',
    ].join('\n');
    const scriptFile = join(home, 'walkthrough.sh');
    writeFileSync(scriptFile, script);
    const child = spawn('bash', ['--noprofile', '--norc', scriptFile], {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: home, CURL_HOME: home, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    const exitCode = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    clearTimeout(timer);
    return {
      exitCode,
      failure: stderr
        .split('\n')
        .find((l) => l.startsWith(FAILED_LINE))
        ?.slice(FAILED_LINE.length),
      blocks: splitRuns(blocks, stdout, stderr),
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** Cuts the session's output at the block markers. */
function splitRuns(blocks: WalkthroughBlock[], stdout: string, stderr: string): BlockRun[] {
  const sections = (text: string) => {
    const out = new Map<string, string[]>();
    let current: string[] | undefined;
    for (const line of text.split('\n')) {
      if (line.startsWith(BLOCK_LINE)) {
        current = [];
        out.set(line.slice(BLOCK_LINE.length), current);
      } else if (line === DONE_LINE) {
        out.set(DONE_LINE, []);
        current = undefined;
      } else current?.push(line);
    }
    return out;
  };
  const out = sections(stdout);
  const err = sections(stderr);
  return blocks.map((b, i) => {
    const next = i + 1 < blocks.length ? blocks[i + 1].name : DONE_LINE;
    const errLines = err.get(b.name) ?? [];
    return {
      name: b.name,
      completed: out.has(b.name) && out.has(next),
      stdout: (out.get(b.name) ?? []).join('\n'),
      stderr: errLines.filter((l) => !l.startsWith(CURL_LINE)).join('\n'),
      requests: errLines
        .filter((l) => l.startsWith(CURL_LINE))
        .map((l) => {
          const [status, method, url] = l.slice(CURL_LINE.length).split(' ');
          return { status: Number(status), method, url };
        }),
    };
  });
}
