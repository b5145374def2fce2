/**
 * The publisher process of the breadth bench (bench/breadth.bench.ts): what bin/publisher.ts runs —
 * the real publisher with its clocks (pg-boss workers, the minute tick, the 15 s GBFS tick, the
 * housekeeping sweeps) on a context of its own — with two additions the bench reads over the IPC
 * channel, because a publisher serves no /metrics (docs/operations.md "What to watch"):
 *   - its object store wrapped to count the files it writes and their bytes, by kind (a few
 *     additions per put: the sizes come back in the put's ObjectMeta);
 *   - its event-loop delay (perf_hooks, as prom-client measures the API's).
 *
 *   DATABASE_URL=… STORE_URL=… node --import tsx bench/breadth-publisher.ts   (spawned with an IPC channel)
 *
 * It sends `{ type: 'ready' }` once its workers run; each `'stats'` message is answered with the
 * counts so far and the loop delay since the previous one (the histogram is reset at each answer).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../lib/config.js';
import { closeContext, createContext } from '../lib/runtime.js';
import type { ObjectStore } from '../lib/store/types.js';
import { startPublisher } from '../publisher/index.js';

export type WriteKind = 'gbfs' | 'hourly' | 'other';

export interface PublisherStats {
  type: 'stats';
  /** objects put since the process started, by kind */
  files: Record<WriteKind, number>;
  bytes: Record<WriteKind, number>;
  /** event-loop delay since the previous stats, beyond the monitor's 10 ms interval */
  loopP99Ms: number;
  loopMaxMs: number;
}

/** GBFS snapshots (gbfsObjectKey), hourly files (objectKey of lib/feeds/publications.ts), the rest (reports). */
export function kindOf(key: string): WriteKind {
  if (key.startsWith('gbfs/')) return 'gbfs';
  return key.startsWith('mds/') || key.startsWith('insurance/') ? 'hourly' : 'other';
}

/** Resolution of the loop-delay monitor (prom-client's default for the API's nodejs_eventloop_lag_* too). */
export const LOOP_RESOLUTION_MS = 10;

function countingStore(inner: ObjectStore, stats: PublisherStats): ObjectStore {
  return {
    put: async (key, body, opts) => {
      const meta = await inner.put(key, body, opts);
      const kind = kindOf(key);
      stats.files[kind]++;
      stats.bytes[kind] += meta.size;
      return meta;
    },
    get: (key) => inner.get(key),
    head: (key) => inner.head(key),
    list: (prefix) => inner.list(prefix),
    delete: (key) => inner.delete(key),
    check: () => inner.check(),
    close: () => inner.close(),
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const base = await createContext(config, { applicationName: 'publisher' });
  const stats: PublisherStats = { type: 'stats', files: { gbfs: 0, hourly: 0, other: 0 }, bytes: { gbfs: 0, hourly: 0, other: 0 }, loopP99Ms: 0, loopMaxMs: 0 };
  const ctx = { ...base, store: countingStore(base.store, stats) };
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const publisher = await startPublisher(ctx, { cron: true });
  process.on('message', (m) => {
    if (m !== 'stats') return;
    // the monitor records whole intervals: what passes the interval is the delay
    const beyond = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS);
    const answer: PublisherStats = { ...stats, loopP99Ms: beyond(loop.percentile(99)), loopMaxMs: beyond(loop.max) };
    loop.reset();
    process.send?.(answer);
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 5000).unref();
    await publisher.stop();
    await closeContext(ctx);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
  process.send?.({ type: 'ready' });
}

// the bench imports the types and kindOf from here: only the spawned process runs the publisher
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
