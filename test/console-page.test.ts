/**
 * The operator console (/console) in a real browser: Debian's chromium, headless, driven by
 * playwright-core against the whole app on loopback (test/support/browser.ts aborts and records
 * anything else, so the page is proven to work offline, Leaflet included, with no map tiles).
 * Logs in with the demo ops key, checks every view against the database and publish-status,
 * republishes one failed hour from the heatmap (queued for a publisher's workers, which the page
 * follows until the cell turns), and keeps a screenshot of each view in test-artifacts/console-*.png.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { buildApp } from '../api/app.js';
import { floorHour } from '../lib/feeds/hours.js';
import { registerDbCollectors } from '../lib/core/metrics.js';
import { startRental } from '../lib/domain/rentals/engine.js';
import { seedDemo } from '../ops/seed/index.js';
import { DEMO_FEED_CLIENTS } from '../ops/seed/data.js';
import { startPublisher, type Publisher } from '../publisher/index.js';
import { backfill, publishStatus } from '../publisher/ops.js';
import { openBrowser, requireChromium, screenshot, type BrowserSession } from './support/browser.js';
import { useTestContext } from './support/context.js';
import { startCityPolicyServer } from './support/city-policy-server.js';
import { readCityPolicies } from '../publisher/policy/read.js';
import { applyCityRules } from '../publisher/policy/apply.js';

const HOUR = 3_600_000;
const NOW = new Date('2026-11-18T11:20:00Z');

describe('the /console page in a browser', function () {
  this.timeout(120000);
  let publisher: Publisher | undefined;
  // registered before the test context's hooks, so it runs before they drop the database
  after(async () => {
    await publisher?.stop();
  });
  const t = useTestContext({ now: NOW });
  let session: BrowserSession | undefined;
  let page: Page;
  let failedHour: string;
  let rental: { id: string; code: string };

  before(async function () {
    requireChromium(this);
    this.timeout(120000);
    // the zones began five hours ago: the default window of the heatmap holds them whole
    await seedDemo(t.ctx, { vehiclesPerZone: 24, deployedAt: new Date(floorHour(NOW).getTime() - 5 * HOUR) });
    const due = await publishStatus(t.ctx, { zones: ['berlin'] });
    const hours = due.rows.map((r) => r.hour);
    await backfill(t.ctx, { zones: ['berlin'], from: new Date(`${hours[0]}:00:00Z`), to: new Date(`${hours.at(-1)}:00:00Z`), feeds: 'all', force: false });
    // one failed file, and one dirty (late data) file, as a publisher would leave them
    failedHour = hours.at(-2)!;
    await t.ctx.db.query(
      `UPDATE feed_publications SET status = 'failed', last_error = 'store unavailable (injected)' WHERE scope = 'berlin' AND feed = 'mds_trips' AND version = '2.0' AND hour = $1::timestamp`,
      [`${failedHour}:00:00`],
    );
    await t.ctx.db.query(
      `UPDATE feed_publications SET dirty = true WHERE scope = 'berlin' AND feed = 'mds_events' AND version = '2.0' AND hour = $1::timestamp`,
      [`${hours.at(-1)}:00:00`],
    );

    const v = await t.ctx.db.one<{ id: string; code: string }>(
      `SELECT id, code FROM vehicles WHERE zone_id = 'berlin' AND status = 'ready' ORDER BY code LIMIT 1`,
    );
    const user = await t.ctx.db.one<{ id: string }>(
      `SELECT u.id FROM users u JOIN partners p ON p.id = u.partner_id WHERE p.name = 'Demo Partner App' ORDER BY u.id LIMIT 1`,
    );
    const partner = await t.ctx.db.one<{ id: string }>(`SELECT id FROM partners WHERE name = 'Demo Partner App'`);
    const r = await startRental(t.ctx, { partnerId: partner.id, userId: user.id, vehicleId: v.id, source: 'partner', userLicenseValidated: true });
    rental = { id: r.id, code: v.code };

    // the rentals_running gauge is read from the database at each scrape, as bin/run.ts wires it
    registerDbCollectors(t.ctx.db);
    // the workers that run the console's republish jobs; no clocks: nothing else is queued
    publisher = await startPublisher(t.ctx, { cron: false, concurrency: 1 });
    session = await openBrowser(buildApp(t.ctx));
    page = session.page;
  });

  after(async () => {
    await session?.close();
  });

  const tab = (view: string) => page.locator(`#tabs button[data-view="${view}"]`).click();

  it('asks for the ops key, refuses another key with the API’s message, and opens with the ops key', async () => {
    await page.goto(`${session!.base}/console`);
    await page.locator('#key').fill('demo-partner-key');
    await page.locator('#login button[type=submit]').click();
    await page.locator('#login-error', { hasText: 'refused' }).waitFor({ timeout: 10000 });
    expect(await page.locator('#tabs').isHidden()).to.equal(true);
    await page.locator('#key').fill('demo-ops-key');
    await page.locator('#login button[type=submit]').click();
    await page.locator('#tabs').waitFor({ state: 'visible', timeout: 10000 });
  });

  it('Publishing: the heatmap holds publish-status’s state for every cell of the zone', async () => {
    await page.locator('#heatmap td.cell').first().waitFor({ timeout: 10000 });
    expect(await page.locator('#pub-zone').inputValue()).to.equal('berlin');
    const status = await publishStatus(t.ctx, { zones: ['berlin'] });
    const cells = await page
      .locator('#heatmap td.cell')
      .evaluateAll((tds) => tds.map((td) => [td.getAttribute('data-feed'), td.getAttribute('data-hour'), td.getAttribute('data-state')]));
    const expected = status.rows.flatMap((r) => status.feeds.map((f) => [f, r.hour, r.states[f]]));
    expect(cells).to.deep.equal(expected);
    expect(cells.map((c) => c[2])).to.include.members(['published', 'failed', 'dirty']);
    const totals = await page.locator('#pub-totals').textContent();
    expect(totals).to.contain(`published ${status.totals.published}`).and.to.contain('failed 1').and.to.contain('dirty 1');
    await screenshot(page, 'console-publishing');
  });

  it('Publishing: queues the republish of a selected failed hour from the page, and the cell turns published', async () => {
    const cell = page.locator(`#heatmap td[data-feed="mds-2.0-trips"][data-hour="${failedHour}"]`);
    expect(await cell.getAttribute('data-state')).to.equal('failed');
    await cell.click();
    expect(await page.locator('#republish').textContent()).to.equal('Republish selected (1)');
    await page.locator('#republish').click();
    await page.locator('#pub-message', { hasText: /^queued:/ }).waitFor({ timeout: 30000 });
    expect(await page.locator('#pub-message').textContent()).to.equal('queued: 1 file(s) in 1 job(s)');
    // the publisher runs the job; the page reads the table again until the cell turns
    await page.locator(`#heatmap td[data-feed="mds-2.0-trips"][data-hour="${failedHour}"][data-state="published"]`).waitFor({ timeout: 15000 });
    const after = await publishStatus(t.ctx, { zones: ['berlin'], from: new Date(`${failedHour}:00:00Z`), to: new Date(`${failedHour}:00:00Z`) });
    expect(after.rows[0].states['mds-2.0-trips']).to.equal('published');
    expect(after.totals.failed).to.equal(0);
  });

  it('Fleet: draws the zone with its areas and one marker per vehicle by status; a popup shows the running rental', async () => {
    await tab('fleet');
    await page.locator('#map[data-vehicles]:not([data-vehicles="0"])').waitFor({ state: 'attached', timeout: 15000 });
    const db = await t.ctx.db.many(`SELECT code, status FROM vehicles WHERE zone_id = 'berlin' ORDER BY code`);
    const markers = await page
      .locator('#map path.vehicle')
      .evaluateAll((ps) =>
        ps.map((p) => [p.getAttribute('data-code'), p.getAttribute('data-status')]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
    expect(markers).to.deep.equal(db.map((v) => [v.code, v.status]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
    const areas = await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM areas WHERE zone_id = 'berlin'`);
    // the boundary plus one shape per area, under the vehicles
    expect(await page.locator('#map path.leaflet-interactive:not(.vehicle)').count()).to.be.at.least(areas.n);
    expect(await page.locator('.map-legend').textContent())
      .to.contain('no-parking')
      .and.to.contain('riding');
    expect(await page.locator('#fleet-status').textContent()).to.match(/\d+ vehicles, refreshed every 30 s/);

    await page.locator(`#map path.vehicle[data-code="${rental.code}"]`).dispatchEvent('click');
    const popup = page.locator('.leaflet-popup-content');
    await popup.waitFor({ state: 'visible', timeout: 10000 });
    const text = await popup.textContent();
    const battery = (await t.ctx.db.one<{ battery_percent: number }>(`SELECT battery_percent FROM vehicles WHERE code = $1`, [rental.code])).battery_percent;
    expect(text).to.contain(rental.code).and.to.contain(`battery ${battery} %`).and.to.contain('status riding').and.to.contain(`rental ${rental.id}`);
    await screenshot(page, 'console-fleet');
  });

  it('Health: rentals running and per-family figures from the metrics registry', async () => {
    await tab('health');
    await page.locator('#rentals-running').waitFor({ timeout: 10000 });
    const running = (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM rentals WHERE state = 'RUNNING'`)).n;
    expect(await page.locator('#rentals-running').textContent()).to.equal(`rentals running: ${running}`);
    const text = await page.locator('#health-body').textContent();
    expect(text).to.contain('requests per API family').and.to.contain('publish lag').and.to.contain('queue depth').and.to.contain('store errors');
    // the console's own requests are counted in its family
    expect(text).to.match(/console\d+/);
    await screenshot(page, 'console-health');
  });

  it('Credentials: partners, keys and feed clients with scope and last use, never a secret', async () => {
    await tab('credentials');
    await page.locator('#credentials-body table').first().waitFor({ timeout: 10000 });
    const text = (await page.locator('#credentials-body').textContent())!;
    for (const p of await t.ctx.db.many(`SELECT name FROM partners`)) expect(text).to.contain(p.name);
    for (const c of DEMO_FEED_CLIENTS) {
      expect(text).to.contain(c.clientId);
      expect(text).not.to.contain(c.secret);
    }
    expect(text).to.contain('ops').and.not.to.contain('demo-ops-key');
    await screenshot(page, 'console-credentials');
  });

  it('City rules: a source saved through the form, read by the publisher, its rules and their state shown', async () => {
    const city = await startCityPolicyServer();
    try {
      // a rule whose geography is Berlin's own boundary: a slow zone over the demo zone
      const boundary = await t.ctx.db.one<{ g: { type: string; coordinates: unknown } }>(
        `SELECT ST_AsGeoJSON(boundary)::json AS g FROM zones WHERE id = 'berlin'`,
      );
      const geographyId = '9a1b2c3d-0000-4000-8000-000000000001';
      city.geographies = {
        version: '2.0.0',
        last_updated: 1733400000000,
        geographies: [
          {
            name: 'Berlin',
            geography_id: geographyId,
            published_date: 1733000000000,
            geography_json: { type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: boundary.g }] },
          },
        ],
      };
      city.policies = {
        version: '2.0.0',
        last_updated: 1733400000000,
        policies: [
          {
            name: 'Berlin speed',
            mode_id: 'micromobility',
            policy_id: '9a1b2c3d-0000-4000-8000-000000000002',
            description: 'slow riding',
            start_date: 1733011200000,
            published_date: 1733000000000,
            rules: [
              {
                name: 'Slow riding',
                rule_id: '9a1b2c3d-0000-4000-8000-000000000003',
                rule_type: 'speed',
                rule_units: 'kph',
                geographies: [geographyId],
                states: { on_trip: [] },
                maximum: 12,
              },
            ],
          },
        ],
      };
      await tab('policy');
      await page.locator('#policy-zone').selectOption('berlin');
      await page.locator('#policy-url').fill(`${city.url}/policies`);
      await page.locator('#geography-url').fill(`${city.url}/geographies`);
      await page.locator('#policy-form button[type=submit]').click();
      await page.locator('#policy-message', { hasText: 'saved' }).waitFor({ timeout: 10000 });
      const [r] = await readCityPolicies(t.ctx, { zone: 'berlin', force: true });
      expect(r.outcome, r.reason).to.equal('ok');
      await applyCityRules(t.ctx);
      await page.locator('#policy-zone').dispatchEvent('change');
      await page.locator('#policy-body td', { hasText: 'slow-zone' }).waitFor({ timeout: 10000 });
      const text = (await page.locator('#policy-body').textContent())!;
      expect(text).to.contain('Slow riding').and.to.contain('last read').and.not.to.contain('not in force');
      await screenshot(page, 'console-city-rules');
      await page.locator('#policy-remove').click();
      await page.locator('#policy-message', { hasText: 'removed' }).waitFor({ timeout: 10000 });
    } finally {
      await city.close();
    }
  });

  it('Credentials: New key shows a feed client’s key once, which opens the feeds; Revoke revokes it', async () => {
    const client = DEMO_FEED_CLIENTS[0].clientId;
    await tab('credentials');
    const button = page.locator(`button.new-feed-key[data-client="${client}"]`);
    await button.waitFor({ timeout: 10000 });
    // the page asks for a label (prompt) and, to revoke, for a confirmation: the operator answers both
    page.on('dialog', (d) => void (d.type() === 'prompt' ? d.accept('from the console test') : d.accept()));
    await button.click();
    const shown = page.locator('#new-feed-key');
    await shown.waitFor({ timeout: 10000 });
    const key = (await shown.textContent())!;
    expect(key).to.match(/^fk_[A-Za-z0-9_-]{43}$/);
    const row = await t.ctx.db.one<{ id: string; label: string; key_prefix: string }>(
      `SELECT id, label, key_prefix FROM feed_client_keys WHERE client_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1`,
      [client],
    );
    expect(row).to.include({ label: 'from the console test', key_prefix: key.slice(0, 8) });
    expect(await page.locator('#credentials-body').textContent()).to.contain(`${key.slice(0, 8)}…`);
    await screenshot(page, 'console-feed-key');
    await page.locator(`button.revoke-feed-key[data-key="${row.id}"]`).click();
    await page.locator('#cred-message', { hasText: 'revoked key' }).waitFor({ timeout: 10000 });
    expect((await t.ctx.db.one<{ revoked_at: Date | null }>('SELECT revoked_at FROM feed_client_keys WHERE id = $1', [row.id])).revoked_at).to.be.instanceOf(
      Date,
    );
    expect(await page.locator('#credentials-body').textContent(), 'the key itself is gone from the page').not.to.contain(key);
  });

  it('loaded nothing from outside the machine and raised no script error', () => {
    expect(session!.blocked, 'requests to non-loopback addresses').to.deep.equal([]);
    expect(session!.pageErrors).to.deep.equal([]);
  });
});
