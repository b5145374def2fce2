/**
 * Headless Chromium for page tests (test/docs-page.test.ts, test/console-page.test.ts): Debian's
 * /usr/bin/chromium driven by playwright-core, with the flags this machine's closed network needs,
 * and a context that aborts and records every request to a non-loopback address, so a page is
 * proven to work offline. `make test` installs chromium first (scripts/chromium.sh); when it is
 * still missing the tests skip with a message, except under CI, where they fail.
 */
import type Koa from 'koa';
import { once } from 'node:events';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from '../../lib/core/paths.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return true;
  return hostname === 'localhost' || hostname === '[::1]' || /^127\./.test(hostname);
}

/** Skips the calling suite when chromium is missing, or throws under CI. Call from a before hook. */
export function requireChromium(suite: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CI) throw new Error(`${CHROMIUM} is missing under CI: scripts/chromium.sh installs it (make test runs it)`);
  console.log(`      skipped: ${CHROMIUM} is missing; install it with scripts/chromium.sh (make test runs it)`);
  suite.skip();
}

export interface BrowserSession {
  /** http://127.0.0.1:port of the app under test */
  base: string;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** requests to anything but loopback, aborted */
  blocked: string[];
  /** uncaught errors of the page's scripts */
  pageErrors: string[];
  /** closes the browser and the app's server */
  close(): Promise<void>;
}

/** Serves `app` on a loopback port and opens a page in headless chromium for it. */
export async function openBrowser(app: Koa, viewport = { width: 1280, height: 1000 }): Promise<BrowserSession> {
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  const context = await browser.newContext({ viewport });
  const blocked: string[] = [];
  const pageErrors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (isLoopback(url)) return route.continue();
    blocked.push(url);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  const close = async () => {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  };
  return { base, browser, context, page, blocked, pageErrors, close };
}

/** test-artifacts/<name>.png, kept after the run */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
