/**
 * A real API process (bin/api.ts) on loopback ports against a test database: for tests that must
 * not share an event loop with their load (bursts, admission) or that need several processes on one
 * database (cache coherence).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT } from '../../lib/core/paths.js';
import type { TestDatabase } from './db.js';
import { freePort, waitFor } from './faults.js';
import { entry } from './entries.js';

export interface ApiProcess {
  base: string;
  port: number;
  legacyPort: number;
  proc: ChildProcess;
  /** what the process printed */
  out: string;
  stop(): void;
}

/** `store`: a directory (a file store there) or a STORE_URL (`s3://bucket/prefix`, with S3_ENDPOINT in `env`). */
export async function startApiProcess(database: TestDatabase, store: string, env: Record<string, string> = {}): Promise<ApiProcess> {
  const port = await freePort();
  const legacyPort = await freePort();
  const proc = spawn(process.execPath, [entry('api')], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      STORE_URL: store.includes('://') ? store : `file://${store}`,
      PORT: String(port),
      LEGACY_PORT: String(legacyPort),
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const api: ApiProcess = { base: `http://127.0.0.1:${port}`, port, legacyPort, proc, out: '', stop: () => proc.kill('SIGKILL') };
  proc.stdout.on('data', (c) => (api.out += c));
  proc.stderr.on('data', (c) => (api.out += c));
  await waitFor(`api on ${port}`, async () => (await fetch(`${api.base}/healthz`).catch(() => undefined))?.ok, 60_000).catch((err) => {
    proc.kill('SIGKILL');
    throw new Error(`${(err as Error).message}: ${api.out}`);
  });
  return api;
}
