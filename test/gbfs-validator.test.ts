/**
 * The official MobilityData GBFS validator library (../shared/tools/gbfs-validator, installed into
 * .data/gbfs-validator by scripts/gbfs-validator.sh, which `make test` runs) against our GBFS 2.2 and
 * 3.0 feeds, served by the in-process app on a loopback port, for every GBFS role and every demo
 * zone: it fetches the discovery file and everything it lists (every language, the 3.0 manifest)
 * with the role's bearer token, runs the official schemas and its cross-file rules, and must report
 * 0 errors. The library has no freshness rule of its own; the test checks the GBFS 3.0 one (a
 * real-time file is not older than its ttl plus a small margin). Without the validator the test
 * skips with a message, and fails under CI.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { buildApp } from '../api/app.js';
import type { AppContext } from '../lib/domain/context.js';
import { isStatusFile, STATUS_TTL } from '../lib/feeds/gbfs/files.js';
import { ROLES, hasGbfs, type Role } from '../lib/feeds/roles.js';
import { ROOT } from '../lib/core/paths.js';
import { seedDemo } from '../ops/seed/index.js';
import { publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { useTestContext } from './support/context.js';
import { tokenFor } from './support/feed-auth.js';

const VALIDATOR = join(ROOT, '.data', 'gbfs-validator', 'gbfs.js');
/** GBFS 3.0 Data Latency: a real-time file at most its ttl old; 5 s for the request itself */
const MARGIN_S = 5;

interface ValidatedFile {
  type?: string;
  file?: string;
  errorsCount: number;
  exists?: boolean;
  required?: boolean;
  languages?: Array<{ lang: string; errors?: unknown; exists?: boolean }>;
  errors?: unknown;
  body?: Array<{ body?: { last_updated?: number | string; ttl?: number }; lang?: string; url?: string }>;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('GBFS feeds through the official MobilityData validator', function () {
  this.timeout(180_000);
  const t = useTestContext();
  let server: Server | undefined;
  let ctx: AppContext;
  let base: string;
  const tokens = new Map<Role, string>();
  let GBFS: new (
    url: string,
    options: unknown,
  ) => {
    validation(): Promise<{ summary: { errorsCount: number; hasErrors: boolean }; files: ValidatedFile[] }>;
    getFiles(): Promise<{ files: ValidatedFile[] }>;
  };

  before(async function () {
    if (!existsSync(VALIDATOR)) {
      if (process.env.CI) throw new Error(`${VALIDATOR} is missing under CI: scripts/gbfs-validator.sh installs it from ../shared/tools (make test runs it)`);
      console.log(`      skipped: ${VALIDATOR} is missing; scripts/gbfs-validator.sh installs it (make test runs it)`);
      this.skip();
    }
    GBFS = createRequire(import.meta.url)(VALIDATOR);
    await seedDemo(t.ctx, { vehiclesPerZone: 30 });
    // every role that reads GBFS, over every zone: a 2.2 scope each
    for (const role of ROLES.filter(hasGbfs)) tokens.set(role, await tokenFor(t.ctx, `validator-${role}`, role));
    // the feeds' URLs are absolute: the app and the publisher must name the server's own port
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    ctx = { ...t.ctx, config: { ...t.ctx.config, publicBaseUrl: base } };
    server = await new Promise<Server>((resolve) => {
      const s = buildApp(ctx).listen(port, '127.0.0.1', () => resolve(s));
    });
    await publishGbfsSnapshots(ctx, { only: 'all' });
  });

  after(async () => {
    if (server) await new Promise((resolve) => server!.close(resolve));
  });

  /** the validator's report (0 errors required) and the files it read, with their bodies */
  const validate = async (url: string, role: Role) => {
    const gbfs = new GBFS(url, { auth: { type: 'headers', headers: [{ key: 'Authorization', value: `Bearer ${tokens.get(role)}` }] } });
    const report = await gbfs.validation();
    const failing = report.files.filter((f) => f.errorsCount > 0).map((f) => ({ file: f.type ?? f.file, errors: JSON.stringify(f).slice(0, 1500) }));
    expect(failing, `${url} as ${role}`).to.deep.equal([]);
    expect(report.summary.errorsCount, `${url} as ${role}`).to.equal(0);
    return { report, files: (await gbfs.getFiles()).files };
  };

  /** every file the validator read: real-time ones not older than their ttl (plus MARGIN_S) */
  const expectFresh = (files: ValidatedFile[], label: string) => {
    // the app's clock (a ManualClock of this test file) is the server's now
    const now = t.ctx.clock.now().getTime() / 1000;
    let checked = 0;
    for (const f of files) {
      if (!f.type || !isStatusFile(f.type)) continue;
      for (const b of f.body ?? []) {
        const lu = b.body?.last_updated;
        if (lu === undefined) continue;
        const seconds = typeof lu === 'number' ? lu : Date.parse(lu) / 1000;
        expect(now - seconds, `${label} ${f.type} ${b.url ?? ''}`).to.be.at.most(STATUS_TTL + MARGIN_S);
        checked++;
      }
    }
    expect(checked, `${label}: real-time files read`).to.be.greaterThan(0);
  };

  for (const zone of ['berlin', 'copenhagen']) {
    it(`GBFS 3.0 of ${zone}: 0 errors and fresh real-time files, for every GBFS role`, async () => {
      for (const role of ROLES.filter(hasGbfs)) {
        const { report, files } = await validate(`${base}/v1/partner-apis/gbfs/${zone}/gbfs.json`, role);
        expectFresh(files, `3.0 ${zone} ${role}`);
        // the discovery file, what it lists, and the manifest its system_information names
        const read = report.files.map((f) => String(f.file ?? f.type).replace(/\.json$/, ''));
        expect(read, role).to.include.members(['gbfs', 'system_information', 'vehicle_status', 'gbfs_versions', 'manifest']);
      }
    });
  }

  it("GBFS 2.2 spanning Berlin (de) and Copenhagen (da): discovery keyed by language, each language's texts in it, one e-mail", async () => {
    const get = async (path: string) => {
      const res = await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${tokens.get('city')}` } });
      return { status: res.status, body: (await res.json()) as any };
    };
    const discovery = (await get('/gbfs/v2/gbfs.json')).body;
    expect(Object.keys(discovery.data)).to.deep.equal(['de', 'da']);
    expect(discovery.data.da.feeds.find((f: any) => f.name === 'system_pricing_plans').url).to.equal(`${base}/gbfs/v2/da/system_pricing_plans.json`);
    const emails = new Set<string>();
    for (const [language, words] of [
      ['de', /zum Entsperren, dann .* pro Minute/],
      ['da', /for at låse op, derefter .* pr\. minut/],
    ] as const) {
      const info = await get(`/gbfs/v2/${language}/system_information.json`);
      expect(info.status).to.equal(200);
      expect(info.body.data.language).to.equal(language);
      emails.add(info.body.data.email);
      const plans = (await get(`/gbfs/v2/${language}/system_pricing_plans.json`)).body.data.plans;
      // both zones' plans, every description in the file's language
      expect(plans.length).to.be.greaterThan(2);
      for (const p of plans) expect(p.description, `${language} ${p.plan_id}`).to.match(words);
      // its own discovery says the same
      expect(Object.keys((await get(`/gbfs/v2/${language}/gbfs.json`)).body.data)).to.deep.equal(['de', 'da']);
    }
    expect(emails.size, 'one support e-mail per system').to.equal(1);
    // the plain URLs are the first zone's language; a language the system does not have is unknown
    expect((await get('/gbfs/v2/system_information.json')).body.data.language).to.equal('de');
    expect((await get('/gbfs/v2/fr/system_information.json')).status).to.equal(404);
    expect((await get('/gbfs/v2/DE-de/system_information.json')).status).to.equal(404);
  });

  it('GBFS 2.2 (every demo zone, each language of the system): 0 errors and fresh real-time files, for every GBFS role', async () => {
    for (const role of ROLES.filter(hasGbfs)) {
      const { files } = await validate(`${base}/gbfs/v2/gbfs.json`, role);
      expectFresh(files, `2.2 ${role}`);
    }
  });
});
