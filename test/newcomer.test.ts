/**
 * A newcomer's first hour without a guess (issue 28): `make help` names every target and variable
 * the README uses; the embedded Postgres that a make target started stops with it, Ctrl-C included,
 * after both of `make run`'s processes (scripts/pg.sh with, on a throwaway copy of the script and
 * cluster, never the shared one); the ops docs exist where `ops zone --help` points, with a sample
 * zone file that imports; a zone file's enum mistakes list the allowed values; the console's
 * republish audit line shows at `make run`'s log level.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { createKey } from '../ops/admin/credentials.js';
import { importZone, ZoneImportError } from '../ops/admin/zones.js';
import { floorHour, formatHour } from '../lib/feeds/hours.js';
import { createLogger } from '../lib/core/log.js';
import { ROOT } from '../lib/core/paths.js';
import { useTestContext } from './support/context.js';
import { entry } from './support/entries.js';

const readme = () => readFileSync(join(ROOT, 'README.md'), 'utf8');

/** `make <target>` and the `VAR=` on those lines, in the README's code (blocks and spans). */
function makeUsage(md: string): { targets: Set<string>; variables: Set<string> } {
  const blocks = [...md.matchAll(/```[\s\S]*?```/g)].map((m) => m[0]);
  const spans = [...md.replace(/```[\s\S]*?```/g, '').matchAll(/`[^`\n]+`/g)].map((m) => m[0]);
  const targets = new Set<string>();
  const variables = new Set<string>();
  for (const line of [...blocks, ...spans].flatMap((c) => c.split('\n'))) {
    if (!/(^|[\s`("])make\s/.test(line)) continue;
    for (const m of line.matchAll(/(?:^|[\s`("])make ([a-z][a-z-]*)/g)) targets.add(m[1]);
    for (const m of line.matchAll(/\b([A-Z][A-Z0-9_]*)=/g)) variables.add(m[1]);
  }
  return { targets, variables };
}

describe('newcomer: make help, the embedded Postgres, ops docs, audit', function () {
  this.timeout(120_000);
  const t = useTestContext();

  it('make help lists every make target and variable the README uses, and the embedded-cluster ones', () => {
    const help = spawnSync('make', ['-s', 'help'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(help.status, help.stderr).to.equal(0);
    const { targets, variables } = makeUsage(readme());
    expect(targets.size, 'the README names make targets').to.be.greaterThan(5);
    for (const target of targets) expect(help.stdout, `make ${target}`).to.match(new RegExp(`^make ${target}\\b`, 'm'));
    for (const v of [...variables, 'DATABASE_URL', 'EMBEDDED_PG_PORT', 'EMBEDDED_PG_DB', 'PORT', 'LEGACY_PORT', 'LOG_LEVEL', 'SOAK_SECONDS']) {
      expect(help.stdout, v).to.match(new RegExp(`\\b${v}\\b`));
    }
    expect(help.stdout).to.match(/^make db-stop\b/m);
  });

  describe('scripts/pg.sh with: a cluster started for a command stops with it', function () {
    let dir: string;
    let env: NodeJS.ProcessEnv;
    const pgsh = (...args: string[]) => spawnSync(join(dir, 'scripts', 'pg.sh'), args, { encoding: 'utf8', env, timeout: 90_000 });
    const status = () => pgsh('status').stdout.trim();

    before(async function () {
      // a copy of the script in a project of its own: its own .data, cluster and port
      dir = mkdtempSync(join(tmpdir(), 'pgsh-'));
      chmodSync(dir, 0o755); // initdb runs as the postgres user when the tests run as root
      mkdirSync(join(dir, 'scripts'));
      copyFileSync(join(ROOT, 'scripts', 'pg.sh'), join(dir, 'scripts', 'pg.sh'));
      env = { ...process.env, EMBEDDED_PG_PORT: String(await freePort()), EMBEDDED_PG_DB: 'platform' };
      delete env.DATABASE_URL;
    });
    after(() => {
      if (!dir) return;
      pgsh('stop');
      rmSync(dir, { recursive: true, force: true });
    });

    it('Ctrl-C (SIGINT to the foreground group) stops the command, then the cluster it started; jit is off', async () => {
      const pgModule = JSON.stringify(join(ROOT, 'node_modules', 'pg'));
      const script = `const pg = require(${pgModule}); const c = new pg.Client(process.env.DATABASE_URL);
        c.connect().then(() => c.query('show jit')).then((r) => console.log('connected jit=' + r.rows[0].jit));
        process.on('SIGINT', async () => { await c.end(); console.log('child stopped'); process.exit(0); });
        setInterval(() => {}, 1000);`;
      // detached: a process group of its own, as a terminal's foreground job
      const child = spawn(join(dir, 'scripts', 'pg.sh'), ['with', process.execPath, '-e', script], { env, detached: true });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const exited = once(child, 'exit');
      for (let i = 0; i < 600 && !out.includes('connected'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out, err).to.contain('connected jit=off');
      expect(status()).to.match(/^running on \d+$/);
      process.kill(-child.pid!, 'SIGINT');
      const [code] = await exited;
      // both streams in the message: exit 255 was seen twice in ~30 fresh-clone runs (never alone or
      // under CPU stress); whether the command printed 'child stopped' tells whose status it was
      expect(code, `stderr: ${err}\nstdout: ${out}`).to.equal(0);
      expect(out).to.contain('child stopped');
      expect(err).to.contain('[pg] stopped');
      expect(status()).to.equal('stopped');
    });

    it('Ctrl-C of make run (bin/run.ts: the API, its publisher and its ingest process) stops them all, then the broker and the cluster it started', async function () {
      this.timeout(180_000);
      const runEnv = {
        ...env,
        PORT: String(await freePort()),
        LEGACY_PORT: String(await freePort()),
        STORE_URL: `file://${join(dir, 'store')}`,
        SEED_DEMO: '0',
        LIVE_SIMULATOR: 'false',
        LOG_LEVEL: 'warn',
      };
      // as the Makefile's run target: pg.sh with mqtt.sh with node dist/run.mjs, in a process group of
      // its own; make run's environment, not the suite's (NODE_ENV=test would simulate the vehicles)
      copyFileSync(join(ROOT, 'scripts', 'mqtt.sh'), join(dir, 'scripts', 'mqtt.sh'));
      const child = spawn(join(dir, 'scripts', 'pg.sh'), ['with', join(dir, 'scripts', 'mqtt.sh'), 'with', process.execPath, entry('run')], {
        cwd: ROOT,
        env: {
          ...runEnv,
          NODE_ENV: 'development',
          EMBEDDED_MQTT_PORT: String(await freePort()),
          METRICS_PORT: '0',
          PUBLISHER_METRICS_PORT: '0',
          INGEST_METRICS_PORT: '0',
          DEMO_VEHICLES_FILE: join(dir, 'demo-vehicles.json'),
        },
        detached: true,
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const exited = once(child, 'exit');
      // a fresh cluster: initdb, then every migration, then two processes load
      const deadline = Date.now() + 110_000;
      while (!out.includes('Ctrl-C stops everything') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out, err).to.contain('Ctrl-C stops everything');
      const publisherPid = Number(/Processes +API \d+; publisher (\d+)/.exec(out)?.[1]);
      const ingestPid = Number(/; vehicle ingest (\d+)/.exec(out)?.[1]);
      expect(ingestPid, out).to.be.greaterThan(0);
      process.kill(-child.pid!, 'SIGINT');
      const [code] = await exited;
      expect(code, `${out}\n${err}`).to.equal(0);
      expect(out).to.contain('stopped');
      expect(`${out}${err}`).to.not.contain('exited unexpectedly');
      expect(() => process.kill(publisherPid, 0), 'the publisher process is gone').to.throw();
      expect(() => process.kill(ingestPid, 0), 'the ingest process is gone').to.throw();
      expect(err, 'the broker it started was stopped').to.contain('[mqtt] stopped');
      expect(spawnSync(join(dir, 'scripts', 'mqtt.sh'), ['status'], { encoding: 'utf8' }).stdout.trim()).to.equal('stopped');
      expect(err, 'no session of the run was left when pg.sh looked').to.contain('[pg] stopped');
      expect(status()).to.equal('stopped');
    });

    it("leaves a cluster it did not start running, and passes the command's exit status on", () => {
      expect(pgsh('ensure').status).to.equal(0);
      const r = pgsh('with', 'sh', '-c', 'test -n "$DATABASE_URL" && exit 3');
      expect(r.status, r.stderr).to.equal(3);
      expect(status()).to.match(/^running/);
      pgsh('stop');
      expect(status()).to.equal('stopped');
    });

    it('leaves the cluster running, and says so, while another session still uses it', async () => {
      // the command says when it runs (the cluster is ready then) and ends once the other session is
      // connected (the test creates the file then): a fixed sleep could end first on a busy machine
      const connected = join(dir, 'other-connected');
      const child = spawn(join(dir, 'scripts', 'pg.sh'), ['with', 'sh', '-c', 'echo started; while [ ! -e "$0" ]; do sleep 0.1; done', connected], { env });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const exited = once(child, 'exit');
      for (let i = 0; i < 900 && !out.includes('started') && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
      expect(out, err).to.contain('started');
      const port = readFileSync(join(dir, '.data', 'pg-port'), 'utf8').trim();
      const psql = (...args: string[]) => ['/usr/lib/postgresql/15/bin/psql', ['-h', '127.0.0.1', '-p', port, '-U', 'postgres', ...args, 'postgres']] as const;
      const other = spawn(...psql('-qc', 'select pg_sleep(60)'));
      const sleeping = () =>
        spawnSync(...psql('-Atc', `select count(*) from pg_stat_activity where query = 'select pg_sleep(60)'`), { encoding: 'utf8' }).stdout.trim() === '1';
      try {
        for (let i = 0; i < 300 && !sleeping(); i++) await new Promise((r) => setTimeout(r, 100));
        expect(sleeping(), 'the other session is connected').to.equal(true);
      } finally {
        writeFileSync(connected, '');
      }
      await exited;
      expect(err, err).to.match(/left running on 127\.0\.0\.1:\d+: 1 other session\(s\) still connected; make db-stop stops it/);
      expect(status()).to.match(/^running/);
      other.kill();
      await once(other, 'exit');
      pgsh('stop');
    });
  });

  it('ops zone --help points to docs/operations.md, which exists with its sample zone file', () => {
    const help = spawnSync(process.execPath, [entry('ops'), 'zone', 'import', '--help'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const doc = /docs\/(operations\.md)/.exec(help.stdout);
    expect(doc, help.stdout).to.not.equal(null);
    const text = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    expect(text).to.contain('docs/examples/zone.json');
    for (const section of ['## Zones', '## API keys', '## Feed clients', '## Publishing', '## Demo data', '## At breadth']) expect(text).to.contain(section);
    expect(existsSync(join(ROOT, 'docs', 'examples', 'zone.json'))).to.equal(true);
  });

  it('the sample zone file imports as it is, and a wrong area_type or parking_mode lists the allowed values', async () => {
    const sample = JSON.parse(readFileSync(join(ROOT, 'docs', 'examples', 'zone.json'), 'utf8'));
    const r = await importZone(t.ctx.db, t.ctx.clock, sample);
    expect(r).to.deep.equal({ zoneId: 'leipzig', created: true, areas: sample.features.length - 1 });
    const inside = await t.ctx.db.one(
      `SELECT bool_and(ST_Covers(z.boundary, a.geom)) AS ok FROM areas a JOIN zones z ON z.id = a.zone_id WHERE z.id = 'leipzig'`,
    );
    expect(inside.ok).to.equal(true);

    const bad = structuredClone(sample);
    bad.features[0].properties.parking_mode = 'floating';
    bad.features[1].properties.area_type = 'no-ride';
    const err = await importZone(t.ctx.db, t.ctx.clock, bad).catch((e) => e);
    expect(err).to.be.instanceOf(ZoneImportError);
    expect(err.message).to.contain('/parking_mode must be equal to one of the allowed values: "free-floating", "parking-spot"');
    expect(err.message).to.contain(
      '/area_type must be equal to one of the allowed values: "operations", "no-parking", "parking-spot", "slow-zone", "no-riding", "incentive", "free-floating"',
    );
  });

  it("the console republish audit lines show at warn (make run's level), tagged audit, and not when silent", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const ops = (await createKey(t.ctx.db, 'Operations', 'ops')).key;
    await t.ctx.db.query(`UPDATE zones SET created_at = $1::timestamptz - interval '1 day' WHERE id = 'leipzig'`, [t.ctx.clock.now()]);
    const hour = formatHour(floorHour(new Date(t.ctx.clock.now().getTime() - 3 * 3_600_000)));
    const body = { zone: 'leipzig', cells: [{ feed: 'mds-2.0-trips', hour }] };
    const res = await request(buildApp({ ...t.ctx, log: createLogger('warn', sink) }).callback())
      .post('/console/api/republish')
      .set('X-Access-Token', ops)
      .send(body);
    // queued for the publishers and answered at once (api/console/router.ts)
    expect(res.status, res.text).to.equal(202);
    const audit = lines.map((l) => JSON.parse(l)).filter((l) => l.audit === 'console');
    expect(audit.map((l) => l.msg)).to.deep.equal(['console republish requested', 'console republish queued']);
    expect(audit[0]).to.include({ level: 30, zone: 'leipzig', cells: 1 });
    expect(audit[0].keyId).to.be.a('string');
    expect(audit[1]).to.include({ jobs: 1, files: 1, skipped: 0 });

    lines.length = 0;
    await request(buildApp({ ...t.ctx, log: createLogger('silent', sink) }).callback())
      .post('/console/api/republish')
      .set('X-Access-Token', ops)
      .send(body);
    expect(lines).to.deep.equal([]);
  });
});

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}
