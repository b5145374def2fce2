/**
 * No signing secret is written in the repository (lib/core/config.ts): the real entry point refuses to
 * start without one, and the embedded default keeps a random one with its data.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, ConfigError } from '../lib/core/config.js';
import { ROOT } from '../lib/core/paths.js';
import { entry } from './support/entries.js';

describe('signing secret (lib/core/config.ts)', function () {
  this.timeout(60000);
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const base = { NODE_ENV: 'development', DATABASE_URL: 'postgres://unused.invalid/none' };

  it('bin/run.ts without a secret ends with one configuration line and exit code 2', () => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'SIGNING_SECRET' && k !== 'SIGNING_SECRET_FILE') env[k] = v;
    for (const nodeEnv of ['development', 'test', 'production']) {
      const r = spawnSync(process.execPath, [entry('run')], {
        cwd: ROOT,
        env: { ...env, NODE_ENV: nodeEnv, DATABASE_URL: 'postgres://unused.invalid/none', PORT: '0', LEGACY_PORT: '0' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status, r.stderr).to.equal(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).to.have.length(1);
      expect(lines[0]).to.match(/^configuration error: SIGNING_SECRET is required/);
    }
  });

  it('refuses a short secret in every environment', () => {
    for (const NODE_ENV of ['development', 'test', 'production']) {
      expect(() => loadConfig({ ...base, NODE_ENV, SIGNING_SECRET: 'short' })).to.throw(ConfigError, /SIGNING_SECRET must be at least 32/);
    }
  });

  it('SIGNING_SECRET_FILE: a random secret on first start, mode 0600, the same one on restart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secret-'));
    dirs.push(dir);
    const file = join(dir, '.data', 'signing-secret');
    const first = loadConfig({ ...base, SIGNING_SECRET_FILE: file }).signingSecret;
    expect(first.length).to.be.at.least(32);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(readFileSync(file, 'utf8').trim()).to.equal(first);
    expect(loadConfig({ ...base, SIGNING_SECRET_FILE: file }).signingSecret).to.equal(first);
    // another data directory, another secret
    const other = join(dir, 'other', 'signing-secret');
    expect(loadConfig({ ...base, SIGNING_SECRET_FILE: other }).signingSecret).to.not.equal(first);
    // a configured SIGNING_SECRET wins over the file
    const configured = 'c'.repeat(40);
    expect(loadConfig({ ...base, SIGNING_SECRET: configured, SIGNING_SECRET_FILE: file }).signingSecret).to.equal(configured);
    // a short secret in the file is refused like a short variable
    writeFileSync(other, 'short\n');
    expect(() => loadConfig({ ...base, SIGNING_SECRET_FILE: other })).to.throw(ConfigError, /at least 32/);
  });
});
