/**
 * The ops CLI as an operator runs it, in a child process: every mistake is one line on stderr and
 * exit 1 (no stack, no SQL), `scripts/ops.sh` finds the embedded database the way `make` does, and
 * `make backfill` without FROM says FROM is required. `seed` prints what it wrote and the demo
 * credentials (no `[Object]`); `simulate` prints what it wrote or says why it wrote nothing, naming
 * make's variables when make runs it; the sample zone file imports with its prices and vehicle types;
 * a price change that would hide vehicles is refused; the demo seed refuses a database with zones of
 * its own, and simulate there writes no demo credential.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/core/paths.js';
import { Db } from '../lib/core/db.js';
import { useTestContext } from './support/context.js';
import { cloneDatabase } from './support/db.js';
import { entry } from './support/entries.js';

describe('ops CLI: one-line errors and the embedded database', function () {
  this.timeout(120000);
  const t = useTestContext();

  const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
    spawnSync(process.execPath, [entry('ops'), ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, DATABASE_URL: t.database.url, SIGNING_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent', ...env },
    });

  const oneLineError = (r: ReturnType<typeof cli>, pattern: RegExp) => {
    expect(r.status, r.stderr).to.equal(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).to.have.length(1);
    expect(lines[0]).to.match(pattern);
    expect(r.stderr).not.to.match(/\n\s+at |syntax|invalid input syntax/i);
  };

  it('a malformed id is one line, before any SQL', () => {
    oneLineError(cli(['rental', 'end', 'not-a-uuid']), /^error: .*'not-a-uuid' is invalid for argument 'rentalId'\. must be a uuid/);
    oneLineError(cli(['keys', 'revoke', 'nope']), /^error: .*'nope' is invalid for argument 'keyId'\. must be a uuid/);
    oneLineError(cli(['keys', 'rotate', '00000000-0000-4000-8000-000000000000']), /^error: no active key with id 00000000-0000-4000-8000-000000000000$/);
  });

  it('clients create --zones atlantis is refused with the known zones listed', async () => {
    const known = (await t.ctx.db.many<{ id: string }>('SELECT id FROM zones ORDER BY id')).map((z) => z.id);
    oneLineError(
      cli(['clients', 'create', 'city-of-atlantis', '--role', 'city', '--zones', 'atlantis']),
      new RegExp(`^error: unknown zone atlantis; known zones: ${known.join(', ') || 'none'}$`),
    );
  });

  it('clients keys create prints the key once, list shows its prefix only, revoke revokes it; mistakes are one line', async () => {
    // the seed tests below need a database without anyone else's clients: this one goes again at the end
    try {
      expect(cli(['clients', 'create', 'cli-keys-city', '--role', 'city']).status).to.equal(0);
      const made = cli(['clients', 'keys', 'create', 'cli-keys-city', '--label', 'dashboard']);
      expect(made.status, made.stderr).to.equal(0);
      const m = /^key id ([0-9a-f-]{36}) \(client cli-keys-city, city, zones all\)\nAPI key \(shown once\): (fk_[A-Za-z0-9_-]{43})$/.exec(made.stdout.trim());
      expect(m, made.stdout).to.not.equal(null);
      const [, id, key] = m!;
      const stored = await t.ctx.db.one<{ key_hash: Buffer; key_prefix: string; label: string }>(
        'SELECT key_hash, key_prefix, label FROM feed_client_keys WHERE id = $1',
        [id],
      );
      expect(stored.key_hash.toString('hex')).to.equal(createHash('sha256').update(key).digest('hex'));
      expect(stored).to.include({ key_prefix: key.slice(0, 8), label: 'dashboard' });
      const listed = cli(['clients', 'keys', 'list', 'cli-keys-city']);
      expect(listed.status, listed.stderr).to.equal(0);
      expect(listed.stdout).to.include(id).and.include(key.slice(0, 8)).and.not.include(key);
      const revoked = cli(['clients', 'keys', 'revoke', id]);
      expect(revoked.status, revoked.stderr).to.equal(0);
      expect(revoked.stdout.trim()).to.equal(`revoked ${id}`);
      expect((await t.ctx.db.one<{ revoked_at: Date | null }>('SELECT revoked_at FROM feed_client_keys WHERE id = $1', [id])).revoked_at).to.be.instanceOf(
        Date,
      );
      oneLineError(cli(['clients', 'keys', 'revoke', id]), new RegExp(`^error: no active feed client key with id ${id}$`));
      oneLineError(cli(['clients', 'keys', 'revoke', 'nope']), /^error: .*'nope' is invalid for argument 'keyId'\. must be a uuid/);
      oneLineError(cli(['clients', 'keys', 'create', 'no-such-client']), /^error: no active feed client no-such-client$/);
    } finally {
      await t.ctx.db.query(`DELETE FROM feed_clients WHERE client_id = 'cli-keys-city'`);
    }
  });

  it('an unknown key scope lists the scopes, ops included', () => {
    oneLineError(cli(['keys', 'create', '--partner', 'X', '--scope', 'admin']), /^error: scope must be one of partner, tomp, insurance, ops$/);
  });

  it('a backfill window in the future says why nothing was done', () => {
    const next = new Date(Date.now() + 48 * 3_600_000).toISOString().slice(0, 13);
    const r = cli(['backfill', '--from', next, '--to', next]);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^nothing done: the window starts after \d{4}-\d{2}-\d{2}T\d{2}, the last closed hour/m);
  });

  it('make backfill without FROM says FROM is required', () => {
    const r = spawnSync('make', ['-s', 'backfill', 'TO=2026-11-20T23'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, DATABASE_URL: t.database.url },
    });
    expect(r.status).not.to.equal(0);
    expect(r.stderr).to.match(/FROM is required, e\.g\. make backfill FROM=2026-11-20T00 TO=2026-11-20T23/);
  });

  it('seed prints what it wrote and every demo credential, readable, then that it was already there', () => {
    const first = cli(['seed']);
    expect(first.status, first.stderr).to.equal(0);
    expect(first.stdout).not.to.contain('[Object]');
    expect(first.stdout).to.match(/^demo data seeded: zones berlin, copenhagen; \d+ vehicles in service since \d{4}-\d\d-\d\dT/m);
    for (const credential of [
      'demo-partner-key',
      'demo-mobility-key',
      'demo-maas-key',
      'demo-insurer-key',
      'demo-ops-key',
      'demo-city / demo-city-secret',
      'demo-gbfs / demo-gbfs-secret',
    ]) {
      expect(first.stdout).to.contain(credential);
    }
    const again = cli(['seed']);
    expect(again.status, again.stderr).to.equal(0);
    expect(again.stdout).to.match(/^demo data already present \(zones berlin, copenhagen\): nothing written/m);
  });

  it("simulate prints what it wrote, or says why it wrote nothing; under make the hints name make's variables", () => {
    const hour = (msAgo: number) => new Date(Math.floor((Date.now() - msAgo) / 3_600_000) * 3_600_000).toISOString().slice(0, 13);
    const end = hour(2 * 86_400_000);
    const ok = cli(['simulate', '--days', '1', '--vehicles', '5', '--seed', '3', '--end', end]);
    expect(ok.status, ok.stderr).to.equal(0);
    expect(ok.stdout, ok.stdout).to.match(
      new RegExp(`^simulated \\S+ – ${end} in berlin, copenhagen(, leipzig)?: \\d+ vehicles \\(0 added\\), [1-9]\\d* rentals`, 'm'),
    );

    // the same window again: refused, with make's variables in the hint under make
    const again = cli(['simulate', '--days', '1', '--vehicles', '5', '--seed', '3', '--end', end], { OPS_CALLER: 'make-embedded' });
    oneLineError(
      again,
      /^error: nothing written: this database already holds simulated rides in .*EMBEDDED_PG_DB=sim make simulate.*END=YYYY-MM-DDTHH.*SEED=.*VEHICLES=/,
    );
    expect(again.stderr).not.to.match(/--end|make clean/);

    // a window before every vehicle's last event holds nothing for them: said, not a silent 0
    const before = cli(['simulate', '--days', '1', '--vehicles', '5', '--seed', '4', '--end', hour(40 * 86_400_000)]);
    oneLineError(
      before,
      /^error: nothing written in .*: the simulator continues each vehicle from its last event, .* has history up to \d{4}-\d\d-\d\dT\d\d:\d\dZ already .*--vehicles above the \d+ a zone has/,
    );

    oneLineError(cli(['simulate', '--end', hour(-2 * 3_600_000)]), /^error: --end \S+ is in the future/);
  });

  it('zone import of the sample file (docs/examples/zone.json) says what it did, prices and vehicle types included', () => {
    const r = cli(['zone', 'import', 'docs/examples/zone.json']);
    expect(r.status, r.stderr).to.equal(0);
    // the demo declared the same two types: the file changes neither
    expect(r.stdout.trim()).to.equal('created zone leipzig with 5 areas, prices for scooter, bicycle\nvehicle types: unchanged scooter, bicycle');
    expect(r.stderr).to.equal('');
  });

  it('a missing zone file, a malformed or unknown price, a price change that would hide vehicles: one line each', () => {
    oneLineError(cli(['zone', 'import', 'no-such-zones.json']), /^error: cannot read no-such-zones\.json: ENOENT$/);
    oneLineError(cli(['zone', 'prices', 'leipzig', 'cargo=100,20']), /^error: unknown vehicle type cargo; known: bicycle, scooter/);
    oneLineError(
      cli(['zone', 'prices', 'leipzig', 'scooter=1.5,20']),
      /^error: price scooter=1\.5,20: write <vehicle type>=<start price>,<price per minute> in minor units/,
    );
    // the seeded zone has vehicles of both types: dropping a price would hide them, so it is refused
    oneLineError(
      cli(['zone', 'prices', 'berlin', '--remove', 'bicycle']),
      /^error: zone berlin: the change would leave vehicles without a price \(\d+ of type bicycle\)/,
    );
    const shown = cli(['zone', 'prices', 'berlin']);
    expect(shown.stdout.trim()).to.match(
      /^zone berlin \(minor units of EUR, VAT 19 % included\):\n {2}bicycle +start +100 +per minute +19\n {2}scooter +start +100 +per minute +25$/,
    );
  });

  it('the demo seed refuses a database with zones of its own; simulate there adds no demo credential', async () => {
    const other = await cloneDatabase();
    try {
      const env = { DATABASE_URL: other.url };
      const imported = cli(['zone', 'import', 'docs/examples/zones.ndjson'], env);
      expect(imported.status, imported.stderr).to.equal(0);
      oneLineError(
        cli(['seed'], env),
        /^error: not seeding the demo: this database holds 2 zones \(dresden, halle\) not written by the demo seed\. .*seed a database of its own/,
      );
      const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000).toISOString().slice(0, 13);
      const sim = cli(['simulate', '--days', '1', '--vehicles', '4', '--seed', '5', '--end', hour], env);
      expect(sim.status, sim.stderr).to.equal(0);
      expect(sim.stderr).to.match(/^note: not the demo database: simulating the zones it holds, with the simulator's own partners/);
      expect(sim.stdout).to.match(/^simulated \S+ – \S+ in dresden, halle: 8 vehicles \(8 added\)/);
      const db = new Db(other.url, t.ctx.log);
      try {
        const held = await db.one(`SELECT (SELECT count(*)::int FROM api_keys) AS keys, (SELECT count(*)::int FROM feed_clients) AS clients,
                                          (SELECT count(*)::int FROM database_marks) AS marks, ARRAY(SELECT id FROM zones ORDER BY id) AS zones`);
        expect(held).to.deep.equal({ keys: 0, clients: 0, marks: 0, zones: ['dresden', 'halle'] });
      } finally {
        await db.close();
      }
    } finally {
      await other.drop();
    }
  });

  it('scripts/ops.sh (npm run ops) without DATABASE_URL uses the embedded cluster like make', function () {
    // only where the test databases live on the embedded cluster (.data/pg-port), as under make test
    const portFile = join(ROOT, '.data', 'pg-port');
    if (!existsSync(portFile) || new URL(t.database.url).port !== readFileSync(portFile, 'utf8').trim()) this.skip();
    const env: Record<string, string | undefined> = { ...process.env, EMBEDDED_PG_DB: t.database.name, SIGNING_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    // a broker URL of its own: `keys list` commands no vehicle, and without one scripts/ops.sh would
    // start the checkout's embedded broker and leave it running after make test
    env.MQTT_URL = 'mqtt://127.0.0.1:1';
    env.MQTT_PASSWORD = 'unused';
    const r = spawnSync(join(ROOT, 'scripts', 'ops.sh'), ['keys', 'list', '--scope', 'ops'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env });
    expect(r.stderr).not.to.contain('DATABASE_URL is required');
    expect(r.status, r.stderr).to.equal(0);
  });
});
