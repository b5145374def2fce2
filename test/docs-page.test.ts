/**
 * The /docs page in a real browser: Debian's chromium, headless, driven by playwright-core. The
 * app listens on loopback; every request of the page to any other address is aborted and recorded,
 * so the page is proven to work offline. Checks that the operations of each of the documents
 * render (through Swagger UI's selector and through our links) and saves test-artifacts/docs.png.
 * Skips with a message when /usr/bin/chromium is missing, fails under CI (test/support/browser.ts).
 */
import { expect } from 'chai';
import Koa from 'koa';
import type { Page } from 'playwright-core';
import { docsRoutes } from '../api/docs/router.js';
import { DOCUMENT_TITLES } from '../api/docs/documents.js';
import { openBrowser, requireChromium, screenshot, type BrowserSession } from './support/browser.js';
import { useTestContext } from './support/context.js';

describe('the /docs page in a browser', function () {
  this.timeout(120000);
  const t = useTestContext();
  let session: BrowserSession | undefined;
  let page: Page;

  before(async function () {
    requireChromium(this);
    const app = new Koa();
    app.silent = true;
    app.use(docsRoutes(t.ctx));
    session = await openBrowser(app);
    page = session.page;
  });

  after(async () => {
    await session?.close();
  });

  const operation = (path: string) => page.locator('.opblock-summary-path', { hasText: path }).first();

  it('renders the partner rental API first, and saves a screenshot', async () => {
    await page.goto(`${session!.base}/docs`);
    await operation('/v1/rental/start').waitFor({ state: 'visible', timeout: 30000 });
    expect(await page.locator('.info .title').first().textContent()).to.include('Partner Rental API');
    expect(await page.locator('.opblock').count()).to.be.greaterThan(20);
    await screenshot(page, 'docs');
  });

  it('switches documents with Swagger UI’s selector', async () => {
    await page.locator('select#select').selectOption({ label: DOCUMENT_TITLES.tomp });
    await operation('/bookings/one-stop').waitFor({ state: 'visible', timeout: 30000 });
    await page.locator('select#select').selectOption({ label: DOCUMENT_TITLES.feeds });
    await operation('/v1/partner-apis/token').waitFor({ state: 'visible', timeout: 30000 });
    await page.locator('select#select').selectOption({ label: DOCUMENT_TITLES.legacy });
    await operation('/en/{zoneID}/status_changes').waitFor({ state: 'visible', timeout: 30000 });
  });

  it('opens each document from our links', async () => {
    const links = [
      ['tomp', '/legs/{id}/events'],
      ['feeds', '/gbfs/v2/free_bike_status.json'],
      ['legacy', '/en/{zoneID}/trips'],
      ['partner', '/v1/zone/info'],
    ] as const;
    for (const [key, path] of links) {
      await page.locator(`#documents a.doc-link[data-doc="${key}"]`).click();
      await page.waitForURL(`**/docs?doc=${key}`);
      await operation(path).waitFor({ state: 'visible', timeout: 30000 });
      expect(await page.locator('select#select').inputValue()).to.equal(`/openapi/${key}.json`);
    }
  });

  it('expands an operation with its error responses', async () => {
    await page.goto(`${session!.base}/docs?doc=partner`);
    await operation('/v1/rental/start').click();
    await page.locator('.opblock.is-open .responses-table').first().waitFor({ state: 'visible', timeout: 30000 });
    const text = await page.locator('.opblock.is-open').first().textContent();
    expect(text).to.include('ZoneIsSleeping');
    expect(text).to.include('429');
  });

  it('loaded nothing from outside the machine and raised no script error', () => {
    expect(session!.blocked, 'requests to non-loopback addresses').to.deep.equal([]);
    expect(session!.pageErrors).to.deep.equal([]);
  });
});
