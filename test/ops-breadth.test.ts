/**
 * Operating at breadth with the ops CLI alone (docs/operations.md, "At breadth"): a hundred zones
 * with their prices, vehicle types and first operating hour in one `zone import`, a hundred feed
 * clients in one `clients import` with every secret printed once; one bad zone among a hundred
 * refuses the whole file, naming its line; and the publisher's own due-hours decision
 * (publisher/schedule.ts) then catches up each imported zone's history from its operating_since.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/core/paths.js';
import { floorHour, formatHour } from '../lib/feeds/hours.js';
import { authenticateFeedClient } from '../lib/feeds/clients.js';
import { dueHourJobs } from '../publisher/schedule.js';
import { publishStatus } from '../publisher/ops.js';
import { useTestContext } from './support/context.js';
import { squarePolygon } from './support/geometry.js';
import { entry } from './support/entries.js';

const ZONES = 100;
const CLIENTS = 100;
const DAY = 86_400_000;

/** Zone n of a grid over Germany: a boundary, an operations area, a no-parking area, its prices. */
function zone(n: number, since: string) {
  const x = 6 + (n % 10) * 0.8;
  const y = 47.5 + Math.floor(n / 10) * 0.6;
  return {
    type: 'FeatureCollection',
    features: [
      {
        type: 'Feature',
        geometry: squarePolygon(x, y, 0.1),
        properties: {
          kind: 'zone',
          id: `z${String(n).padStart(3, '0')}`,
          name: `Zone ${n}`,
          city: `City ${n}`,
          country: 'DE',
          timezone: 'Europe/Berlin',
          currency: 'EUR',
          vat_rate: 0.19,
          parking_mode: 'free-floating',
          operating_since: since,
          prices: { 'breadth-scooter': { start_price: 100, price_per_minute: 20 + (n % 5) } },
          ...(n === 0
            ? {
                vehicle_types: [
                  {
                    id: 'breadth-scooter',
                    form_factor: 'scooter',
                    propulsion_type: 'electric',
                    name: 'E-Scooter',
                    make: 'Voltra',
                    model: 'S3',
                    max_range_meters: 50000,
                    max_speed_kph: 20,
                  },
                ],
              }
            : {}),
        },
      },
      { type: 'Feature', geometry: squarePolygon(x + 0.01, y + 0.01, 0.08), properties: { area_type: 'operations', name: `Centre ${n}` } },
      { type: 'Feature', geometry: squarePolygon(x + 0.05, y + 0.05, 0.005), properties: { area_type: 'no-parking', name: `Station ${n}` } },
    ],
  };
}

describe('ops at breadth: a hundred zones and a hundred clients, one call each', function () {
  this.timeout(300000);
  const t = useTestContext();
  const dir = mkdtempSync(join(tmpdir(), 'ops-breadth-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const cli = (args: string[]) =>
    spawnSync(process.execPath, [entry('ops'), ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, DATABASE_URL: t.database.url, SIGNING_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent' },
    });

  // three days of history before the import: the publisher is to publish it (one day past its look-back)
  const since = formatHour(floorHour(new Date(Date.now() - 3 * DAY)));

  it('one bad zone among a hundred refuses the file, naming its line, and writes nothing', async () => {
    const docs = Array.from({ length: ZONES }, (_, n) => zone(n, since));
    (docs[57]?.features[1]?.properties as Record<string, unknown>).area_type = 'teleport';
    const file = join(dir, 'bad.ndjson');
    writeFileSync(file, docs.map((d) => JSON.stringify(d)).join('\n'));
    const r = cli(['zone', 'import', file]);
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr).to.match(
      /^error: zone file has 1 problem\(s\):\n {2}- \S+bad\.ndjson line 58 \(z057\): feature #1 "Centre 57": \/area_type must be equal to one of the allowed values/,
    );
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM zones`)).n).to.equal(0);
  });

  it('imports a hundred zones with prices, a vehicle type and operating_since in one transaction', async () => {
    const file = join(dir, 'zones.ndjson');
    writeFileSync(file, Array.from({ length: ZONES }, (_, n) => JSON.stringify(zone(n, since))).join('\n'));
    const r = cli(['zone', 'import', file]);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stderr).to.equal('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).to.equal(`created zone z000 with 2 areas, prices for breadth-scooter, operating since ${since}`);
    expect(lines.at(-2)).to.equal('vehicle types: created breadth-scooter');
    expect(lines.at(-1)).to.equal(`${ZONES} zones in one transaction: ${ZONES} created, 0 updated, ${2 * ZONES} areas`);
    const db = await t.ctx.db.one(`SELECT (SELECT count(*)::int FROM zones) AS zones, (SELECT count(*)::int FROM areas) AS areas,
                                          (SELECT count(*)::int FROM pricing WHERE vehicle_type_id = 'breadth-scooter') AS prices,
                                          (SELECT count(DISTINCT created_at)::int FROM zones) AS starts, (SELECT min(created_at) FROM zones) AS start`);
    expect(db).to.deep.equal({ zones: ZONES, areas: 2 * ZONES, prices: ZONES, starts: 1, start: new Date(`${since}:00:00Z`) });
  });

  it('creates a hundred feed clients in one call, printing each secret once', async () => {
    const file = join(dir, 'clients.json');
    const clients = Array.from({ length: CLIENTS }, (_, n) => ({
      client_id: `city-${n}`,
      role: 'city',
      zones: [`z${String(n).padStart(3, '0')}`],
      label: `city ${n}`,
    }));
    writeFileSync(file, JSON.stringify(clients));
    const r = cli(['clients', 'import', file]);
    expect(r.status, r.stderr).to.equal(0);
    const [head, ...rows] = r.stdout.trim().split('\n');
    expect(head).to.equal(`created ${CLIENTS} feed clients; secrets (shown once), tab-separated: client_id role zones secret`);
    expect(rows).to.have.length(CLIENTS);
    const [id = '', role, zones, secret = ''] = (rows[42] ?? '').split('\t');
    expect([id, role, zones]).to.deep.equal(['city-42', 'city', 'z042']);
    expect(await authenticateFeedClient(t.ctx.db, id, secret, t.ctx.clock.now())).to.deep.include({ clientId: 'city-42', role: 'city', zones: ['z042'] });
    expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM feed_clients`)).n).to.equal(CLIENTS);
    // the same file again: every one exists, nothing changes
    const again = cli(['clients', 'import', file]);
    expect(again.status).to.equal(1);
    expect(again.stderr).to.match(/^error: nothing created: clients city-0, city-1, .* \(100\) exist already/);
  });

  it('the publisher catches up each imported zone from its operating_since, oldest hours first', async () => {
    const jobs = await dueHourJobs(t.ctx);
    const catchup = jobs.filter((j) => j.catchup);
    expect(catchup.length).to.be.greaterThan(0);
    // the oldest hours first: the first hour of the zones' history
    expect(new Set(catchup.map((j) => j.hour))).to.deep.equal(new Set([since]));
    expect(catchup.every((j) => /^z\d{3}$/.test(j.zone))).to.equal(true);
    // and the hours of the look-back are due for every zone too
    expect(new Set(jobs.filter((j) => !j.catchup).map((j) => j.zone)).size).to.be.greaterThan(1);
    const status = await publishStatus(t.ctx, { zones: ['z000', 'z099'] });
    for (const c of status.catchup) {
      expect(c.completeBefore, c.zone).to.equal(since);
      // three days less the 48-hour look-back
      expect(c.hoursLeft, c.zone).to.be.within(24 - 2, 24 + 2);
    }
  });
});
