/**
 * Idle and slow connections are bounded (lib/core/listen.ts createBoundedServer, lib/core/config.ts
 * `http`): with short test values, 200 connections that send nothing, slow-header senders, slow-body
 * senders and idle keep-alive connections are all closed within their bound, while a normal request
 * made in the middle of it is answered. The waits below are deadlines (generous multiples of the
 * bounds), not latency measurements.
 */
import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { buildApp, withHotPath } from '../api/app.js';
import { createBoundedServer } from '../lib/core/listen.js';
import { loadConfig, ConfigError } from '../lib/core/config.js';
import { useTestContext } from './support/context.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';
import { count } from './support/figures.js';

const ROW = 'slow connections';
const HEADERS_MS = 400;
const REQUEST_MS = 800;
const KEEP_ALIVE_MS = 300;
/** how long a bounded connection may live at most: its bound, a check interval, scheduling slack */
const DEADLINE_MS = 5_000;

interface Conn {
  socket: Socket;
  closedAt?: number;
  data: string;
}

describe('server timeouts: idle and slow connections are closed within their bounds', function () {
  this.timeout(60000);
  const t = useTestContext({
    config: {
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
      HTTP_CONNECTIONS_CHECK_MS: '50',
    },
  });
  let server: Server;
  let port: number;
  let tompKey: string;
  const timers: NodeJS.Timeout[] = [];

  before(async () => {
    tompKey = (await insertMaasPartner(t.ctx.db)).key;
    server = createBoundedServer(withHotPath(buildApp(t.ctx)), t.ctx.config.http);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    timers.forEach(clearInterval);
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const open = () =>
    new Promise<Conn>((resolve) => {
      const c: Conn = { socket: connect(port, '127.0.0.1'), data: '' };
      c.socket.setEncoding('latin1');
      c.socket.on('data', (d: string) => (c.data += d));
      c.socket.on('error', () => undefined);
      c.socket.on('close', () => (c.closedAt = performance.now()));
      c.socket.once('connect', () => resolve(c));
    });
  const allClosed = async (conns: Conn[], deadlineMs: number) => {
    const until = performance.now() + deadlineMs;
    while (conns.some((c) => c.closedAt === undefined) && performance.now() < until) await new Promise((r) => setTimeout(r, 25));
    return conns.filter((c) => c.closedAt === undefined).length;
  };
  const trickle = (c: Conn, text: string, everyMs: number) => {
    let i = 0;
    const timer = setInterval(() => {
      if (c.closedAt !== undefined || i >= text.length) return clearInterval(timer);
      c.socket.write(text[i++]);
    }, everyMs);
    timers.push(timer);
  };

  it('refuses HTTP_HEADERS_TIMEOUT_MS above HTTP_REQUEST_TIMEOUT_MS', () => {
    expect(() =>
      loadConfig({ DATABASE_URL: 'postgres://x/y', SIGNING_SECRET: 's'.repeat(32), HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '1000' }),
    ).to.throw(ConfigError, /HTTP_HEADERS_TIMEOUT_MS/);
    const d = loadConfig({ DATABASE_URL: 'postgres://x/y', SIGNING_SECRET: 's'.repeat(32) }).http;
    expect(d).to.deep.equal({ headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 5_000, connectionsCheckingIntervalMs: 1_000 });
  });

  it('200 idle connections, slow-header and slow-body senders are closed; a normal request in the middle is answered', async () => {
    const started = performance.now();
    const idle = await Promise.all(Array.from({ length: 200 }, open));
    // slow headers: one byte every 100 ms never completes the header block within HEADERS_MS
    const slowHeaders = await Promise.all(Array.from({ length: 5 }, open));
    for (const c of slowHeaders) trickle(c, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(200)}\r\n\r\n`, 100);
    // slow body: complete headers, then one byte of a 2000-byte body every 100 ms
    const slowBodies = await Promise.all(Array.from({ length: 5 }, open));
    for (const c of slowBodies) {
      c.socket.write(
        `POST /edge/tomp/support HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${tompKey}\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n`,
      );
      trickle(c, '{' + ' '.repeat(1999), 100);
    }

    // normal traffic while all of them are held open
    const normal = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(normal.status).to.equal(200);
    await normal.text();

    const open_ = await allClosed([...idle, ...slowHeaders, ...slowBodies], DEADLINE_MS);
    count(ROW, 'inputs', 210);
    expect(open_, 'connections still open past the deadline').to.equal(0);
    const lived = Math.max(...[...idle, ...slowHeaders, ...slowBodies].map((c) => c.closedAt! - started));
    console.log(`      210 idle/slow connections closed; the last after ${lived.toFixed(0)} ms (headers ${HEADERS_MS} ms, request ${REQUEST_MS} ms)`);
    // the slow-body senders were told why (node:http answers 408 to a request past requestTimeout)
    for (const c of slowBodies) expect(c.data === '' || c.data.startsWith('HTTP/1.1 408'), c.data.slice(0, 60)).to.equal(true);
  });

  it('an idle keep-alive connection is closed after HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const c = await open();
    const sentAt = performance.now();
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await allClosed([c], DEADLINE_MS)).to.equal(0);
    expect(c.data).to.match(/^HTTP\/1\.1 200/);
    count(ROW, 'inputs');
    console.log(`      idle keep-alive connection closed ${(c.closedAt! - sentAt).toFixed(0)} ms after its request (bound ${KEEP_ALIVE_MS} ms)`);
  });
});
