/**
 * The OpenAPI documents through the linters integrators run in their CI (issue 28), with the
 * committed configurations and the installed CLIs, offline:
 *  - Redocly `recommended` (redocly.yaml) and Spectral `spectral:oas` (.spectral.yaml): 0 errors,
 *    0 warnings;
 *  - the OWASP API Security ruleset (.spectral-owasp.yaml, with its input-bound and rate-limit
 *    rules): 0 errors, 0 warnings;
 *  - every rule a configuration switches off says why there, and every OWASP rule switched off is
 *    explained in docs/openapi-lint.md.
 * The documents are the ones GET /openapi/*.json serves for an https deployment (the production
 * shape: a local `make run` serves http://localhost, which the server-URL rules flag by design).
 * They are written under test-artifacts/ because the configurations' per-location exemptions
 * match file names relative to the repository (`**\/partner.json#/paths/…`).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DOCUMENT_NAMES } from '../api/docs/documents.js';
import { ROOT } from '../lib/core/paths.js';
import { servedDocuments } from './support/openapi-served.js';

const run = promisify(execFile);
const BIN = join(ROOT, 'node_modules', '.bin');
/** no telemetry, no update check: the linters must not need the network */
const ENV = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1' };

/** A CLI's stdout, whatever its exit code (the linters exit 1 when they report errors). */
async function stdoutOf(cmd: string, args: string[]): Promise<string> {
  try {
    return (await run(join(BIN, cmd), args, { cwd: ROOT, env: ENV, maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    if (e.stdout?.trim()) return e.stdout;
    throw new Error(`${cmd} failed: ${e.stderr || e.message}`);
  }
}

interface SpectralResult {
  code: string;
  message: string;
  severity: number;
  path: string[];
  source: string;
}

async function spectral(ruleset: string, files: string[]): Promise<string[]> {
  const results = JSON.parse(await stdoutOf('spectral', ['lint', '--ruleset', ruleset, '--format', 'json', '--quiet', ...files])) as SpectralResult[];
  const severity = ['error', 'warning', 'info', 'hint'];
  // infos and hints are advice (e.g. OWASP's SSRF reminder on URL parameters), not findings
  return results
    .filter((r) => r.severity <= 1)
    .map((r) => `${r.source.split('/').pop()} ${severity[r.severity]} ${r.code} at ${r.path.join('.')}: ${r.message}`);
}

/**
 * The rules a YAML configuration switches off (or exempts by location), and those of them without
 * a reason: a comment above the line, other switched-off rules and an override's file list between.
 */
function switchedOff(file: string): { off: string[]; unexplained: string[] } {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const offLine = /^\s*([\w:.-]+):\s*["']?off["']?\s*$/;
  const between = /^\s*([\w:.-]+:\s*["']?off["']?|rules:|-\s*files:|-\s*"[^"]*")\s*$/;
  const off: string[] = [];
  const unexplained: string[] = [];
  lines.forEach((line, i) => {
    const m = offLine.exec(line);
    if (!m) return;
    off.push(m[1]);
    let j = i - 1;
    while (j >= 0 && between.test(lines[j])) j--;
    if (!(j >= 0 && /^\s*#/.test(lines[j]))) unexplained.push(m[1]);
  });
  return { off: [...new Set(off)], unexplained };
}

describe('OpenAPI documents through the linters (Redocly, Spectral, OWASP)', function () {
  this.timeout(60000);
  let dir: string;
  let files: string[];

  before(async () => {
    const docs = await servedDocuments();
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'test-artifacts', 'openapi-lint-'));
    files = DOCUMENT_NAMES.map((name) => {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, docs[name]);
      return file;
    });
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('Redocly recommended (redocly.yaml): 0 errors, 0 warnings', async () => {
    // codeclimate: one JSON array for all the files (nothing at all when there is no problem)
    const out = await stdoutOf('redocly', ['lint', '--config', join(ROOT, 'redocly.yaml'), '--format', 'codeclimate', ...files]);
    const problems = JSON.parse(out.trim() || '[]') as {
      description: string;
      location: { path: string };
      fingerprint: string;
    }[];
    expect(problems.map((p) => `${p.location.path.split('/').pop()} ${p.fingerprint}: ${p.description}`)).to.deep.equal([]);
  });

  it('Spectral spectral:oas (.spectral.yaml): 0 errors, 0 warnings', async () => {
    expect(await spectral(join(ROOT, '.spectral.yaml'), files)).to.deep.equal([]);
  });

  it('OWASP API Security ruleset (.spectral-owasp.yaml): 0 errors, 0 warnings', async () => {
    expect(await spectral(join(ROOT, '.spectral-owasp.yaml'), files)).to.deep.equal([]);
  });

  it('the OWASP input and rate-limit rules of ours catch what they are for', async () => {
    // one document made worse on purpose: an unbounded input string, an integer without format, a
    // keyed answer without its rate-limit headers; each must be reported
    const doc = JSON.parse(readFileSync(files[0], 'utf8'));
    const register = doc.paths['/v1/user/register'].post;
    delete register.requestBody.content['application/json'].schema.properties.email.maxLength;
    delete register.responses['200'].headers['X-RateLimit-Limit'];
    const limit = doc.paths['/v1/rental/user/{id}'].get.parameters.find((p: { name: string }) => p.name === 'limit');
    delete limit.schema.format;
    const worse = join(dir, 'worse', 'partner.json');
    mkdirSync(join(dir, 'worse'));
    writeFileSync(worse, JSON.stringify(doc));
    const codes = (await spectral(join(ROOT, '.spectral-owasp.yaml'), [worse])).map((r) => r.split(' ')[2]);
    expect(codes).to.include.members(['input-string-limit', 'input-integer-format', 'api-key-rate-limit']);
  });

  it('every rule switched off says why, and the OWASP ones are explained in docs/openapi-lint.md', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'openapi-lint.md'), 'utf8');
    for (const file of ['redocly.yaml', '.spectral.yaml', '.spectral-owasp.yaml']) {
      const { off, unexplained } = switchedOff(file);
      expect(off.length, `${file}: no rule switched off?`).to.be.greaterThan(0);
      expect(unexplained, `${file}: switched off without a comment`).to.deep.equal([]);
      if (file === '.spectral-owasp.yaml')
        expect(
          off.filter((rule) => !doc.includes(rule)),
          'not in docs/openapi-lint.md',
        ).to.deep.equal([]);
    }
  });
});
