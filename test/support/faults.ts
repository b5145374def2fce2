/**
 * Fault injection for the faults-*.test.ts files and bench/soak.ts: a store that writes slowly (so a
 * process can be killed in the middle of a put), an S3 server that can be stopped and started again
 * on the same port and directory, a throwaway Postgres cluster that can be stopped hard and started
 * again, and readers of published hourly files.
 *
 * Everything listens on 127.0.0.1 only.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { ROOT } from '../../lib/core/paths.js';
import type { ObjectStore, PutOptions } from '../../lib/core/store/types.js';
import { systemClock } from '../../lib/core/clock.js';
import { testConfig } from '../../lib/core/config.js';
import { Db } from '../../lib/core/db.js';
import { createLogger } from '../../lib/core/log.js';
import { openStore } from '../../lib/core/store/index.js';
import { SimulatedGateway } from '../../lib/domain/gateway.js';
import type { AppContext } from '../../lib/domain/context.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Slow store
// ---------------------------------------------------------------------------------------------

export interface SlowStoreOptions {
  /** bytes handed to the real store per step (default 256) */
  chunkBytes?: number;
  /** pause between steps (default 20 ms) */
  delayMs?: number;
  /** called when a put starts handing bytes to the real store (the child prints a line) */
  onPutStart?: (key: string) => void;
}

/**
 * The real store with puts whose body trickles in: the inner put is busy writing (temp file open,
 * multipart upload running) for a while, which is when the fault tests kill the process.
 */
export function slowStore(inner: ObjectStore, o: SlowStoreOptions = {}): ObjectStore {
  const step = o.chunkBytes ?? 256;
  const delay = o.delayMs ?? 20;
  async function* trickle(key: string, body: Buffer | Readable): AsyncGenerator<Buffer> {
    const src: Iterable<Buffer> | AsyncIterable<Buffer> = Buffer.isBuffer(body) ? [body] : (body as AsyncIterable<Buffer>);
    let first = true;
    for await (const chunk of src) {
      for (let off = 0; off < chunk.length; off += step) {
        yield chunk.subarray(off, off + step);
        if (first) {
          first = false;
          o.onPutStart?.(key);
        }
        await sleep(delay);
      }
    }
  }
  return {
    put: (key: string, body: Buffer | Readable, opts: PutOptions) => inner.put(key, Readable.from(trickle(key, body), { objectMode: false }), opts),
    get: (key) => inner.get(key),
    head: (key) => inner.head(key),
    list: (prefix) => inner.list(prefix),
    delete: (key) => inner.delete(key),
    check: () => inner.check(),
    close: () => inner.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// Reading published files
// ---------------------------------------------------------------------------------------------

export type ReadOutcome = { kind: 'missing' } | { kind: 'complete'; body: any } | { kind: 'broken'; error: string };

/** Reads one object whole: missing, complete JSON after gunzip, or broken (what must never happen). */
export async function readObject(store: ObjectStore, key: string): Promise<ReadOutcome> {
  let obj;
  try {
    obj = await store.get(key);
  } catch (err) {
    return { kind: 'broken', error: `get: ${(err as Error).message}` };
  }
  if (!obj) return { kind: 'missing' };
  const chunks: Buffer[] = [];
  try {
    for await (const c of obj.body) chunks.push(c as Buffer);
    const bytes = Buffer.concat(chunks);
    if (bytes.length !== obj.meta.size) return { kind: 'broken', error: `size ${bytes.length} != ${obj.meta.size}` };
    return { kind: 'complete', body: JSON.parse(gunzipSync(bytes).toString('utf8')) };
  } catch (err) {
    return { kind: 'broken', error: (err as Error).message };
  }
}

/** The record array of an hourly file body (`trips`, `events`, `telemetry`, `data.trips`, `data.status_changes`). */
export function recordsOf(body: any): any[] {
  for (const k of ['trips', 'events', 'telemetry', 'status_changes']) {
    if (Array.isArray(body?.[k])) return body[k];
    if (Array.isArray(body?.data?.[k])) return body.data[k];
  }
  throw new Error(`no record array in ${JSON.stringify(body).slice(0, 200)}`);
}

// ---------------------------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------------------------

/** The first port of the kernel's ephemeral range (Linux), where outgoing connections take their local ports. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Binds and releases `port` on loopback: whether nothing held it a moment ago. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A free loopback TCP port for a process a test starts: below the kernel's ephemeral range, so that
 * between this answer and the process's bind (a demo seed can take seconds) no outgoing connection
 * of the parallel suite (Postgres, HTTP clients) takes it as its local port, which a port of
 * `listen(0)` invited (a walkthrough's bin/run.ts once found its PORT in use). Random within
 * 10000–(range start − 1), checked by binding it; `listen(0)` only if none is found.
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  for (let i = 0; i < 50; i++) {
    const port = 10_000 + Math.floor(Math.random() * (high - 10_000));
    if (await bindable(port)) return port;
  }
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

// ---------------------------------------------------------------------------------------------
// A restartable S3 server (s3rver) on a fixed port and directory
// ---------------------------------------------------------------------------------------------

// s3rver in a child: DES continuation tokens need the OpenSSL legacy provider (see s3rver.ts).
const S3_CHILD = String.raw`
const S3rver = require('s3rver');
const [directory, bucket, port] = process.argv.slice(1);
const server = new S3rver({ address: '127.0.0.1', port: Number(port), silent: true, directory, configureBuckets: [{ name: bucket }] });
server.run().then((addr) => process.send({ port: addr.port }), (err) => { console.error(err); process.exit(1); });
process.on('disconnect', () => process.exit(0));
`;

export interface RestartableS3 {
  endpoint: string;
  port: number;
  bucket: string;
  directory: string;
  running(): boolean;
  /** SIGKILL: in-flight requests die with the process, as with a crashed or unreachable server */
  stop(): Promise<void>;
  /** again on the same port and directory: what was stored before is still there */
  start(): Promise<void>;
  /** stop and remove the directory */
  close(): Promise<void>;
}

export async function restartableS3(bucket = 'faults-bucket'): Promise<RestartableS3> {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-faults-'));
  let port = 0;
  let child: ChildProcess | undefined;
  const kill = () => child?.kill('SIGKILL');
  process.once('exit', kill);
  const start = async () => {
    for (let attempt = 0; ; attempt++) {
      const c = spawn(process.execPath, ['--openssl-legacy-provider', '-e', S3_CHILD, directory, bucket, String(port)], {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      try {
        const [msg] = (await Promise.race([
          once(c, 'message'),
          once(c, 'exit').then(([code]) => {
            throw new Error(`s3rver exited with code ${code}`);
          }),
        ])) as [{ port: number }];
        port = msg.port;
        child = c;
        return;
      } catch (err) {
        // the port of a killed server can take a moment to be free again
        if (attempt >= 20) throw err;
        await sleep(100);
      }
    }
  };
  await start();
  const h: RestartableS3 = {
    get endpoint() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    bucket,
    directory,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    async stop() {
      if (!h.running()) return;
      const exited = once(child!, 'exit');
      child!.kill('SIGKILL');
      await exited;
    },
    start,
    async close() {
      process.removeListener('exit', kill);
      await h.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
  return h;
}

// ---------------------------------------------------------------------------------------------
// A throwaway Postgres cluster (never the shared embedded one)
// ---------------------------------------------------------------------------------------------

const PG_BIN = '/usr/lib/postgresql/15/bin';
const IS_ROOT = process.getuid?.() === 0;

function asPg(cmd: string, args: string[], opts: { timeoutMs?: number } = {}): string {
  const [file, argv] = IS_ROOT ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args]] : [join(PG_BIN, cmd), args];
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 60_000 });
}

export interface ThrowawayPg {
  url: string;
  port: number;
  dataDir: string;
  /** `pg_ctl stop -m immediate`: every backend dies at once, no checkpoint (a crash, for clients) */
  stopImmediate(): void;
  start(): void;
  /** stop and remove the cluster */
  destroy(): void;
}

/** initdb into a temp dir, start on a free loopback port, create database `platform`. Mirrors scripts/pg.sh. */
export async function startThrowawayPg(): Promise<ThrowawayPg> {
  const base = mkdtempSync(join(tmpdir(), 'pg-faults-'));
  const data = join(base, 'data');
  const run = join(base, 'run');
  const log = join(base, 'pg.log');
  const port = await freePort();
  execFileSync('mkdir', ['-p', data, run]);
  writeFileSync(log, '');
  if (IS_ROOT) {
    for (const p of [base, data, run, log]) chownSync(p, uid('postgres'), gid('postgres'));
  }
  asPg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8', '--no-sync']);
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      `listen_addresses = '127.0.0.1'`,
      `port = ${port}`,
      `unix_socket_directories = '${run}'`,
      'max_connections = 100',
      'shared_buffers = 32MB',
      'log_min_messages = warning',
      '',
    ].join('\n'),
  );
  const start = () => {
    asPg('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '60', 'start']);
  };
  start();
  asPg('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-qc', 'CREATE DATABASE platform', 'postgres']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/platform`,
    port,
    dataDir: data,
    stopImmediate: () => void asPg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']),
    start,
    destroy() {
      try {
        asPg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(base, { recursive: true, force: true });
    },
  };
}

function uid(user: string): number {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}
function gid(user: string): number {
  return Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (bounded: throws with `what`). */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------
// The app context of a test on a database of its own
// ---------------------------------------------------------------------------------------------

/**
 * The context of a fault test whose database is its own (a throwaway cluster, the HA cluster of
 * test/support/ha.ts) rather than a clone of the template: the file store in `storeDir`, a pool of
 * `poolMax`, and vehicles that answer a command within 200 ms.
 */
export async function ownDatabaseContext(databaseUrl: string, storeDir: string, poolMax: number): Promise<AppContext> {
  const config = testConfig({ DATABASE_URL: databaseUrl, STORE_URL: `file://${storeDir}` });
  const log = createLogger(config.logLevel);
  return {
    config,
    db: new Db(config.databaseUrl, log, { max: poolMax }),
    store: await openStore(config),
    log,
    clock: systemClock,
    gateway: new SimulatedGateway({ timeoutMs: 200 }),
  };
}
