/**
 * A publisher process for the tests that kill one (test/faults-publisher-kill.test.ts,
 * test/republish-after-kill.test.ts) or run several side by side (test/multi-process.test.ts;
 * test/support/publisher-process.ts starts it):
 *
 *   DATABASE_URL=… STORE_URL=… [FAULTS_SLOW_STORE=256:20 | FAULTS_HOLD_PUTS=1] [FAULTS_TICK_MS=500] [FAULTS_WAIT_START=1] [FAULTS_WAIT_GO=1] node --import tsx test/support/publisher-child.ts
 *
 * Starts the real publisher (pg-boss workers, no node-cron), enqueues what is due (the cron's tick),
 * and prints one line per event on stdout so that the parent can act at the right moment:
 *   `loaded`              modules and pools ready; the publisher starts on a line `start` on stdin
 *                         (FAULTS_WAIT_START=1: several children start at the same moment)
 *   `waiting`             the workers run; nothing is queued until a line `go` on stdin (FAULTS_WAIT_GO=1)
 *   `ready <jobs>`        the workers run and the due hours are queued
 *   `put-start <key>`     a put began handing bytes to the store (FAULTS_SLOW_STORE only)
 *   `put-held <key>`      a put was called and will never return (FAULTS_HOLD_PUTS only)
 * FAULTS_SLOW_STORE=<chunkBytes>:<delayMs> wraps the store so every put trickles its body in.
 * FAULTS_HOLD_PUTS=1 wraps the store so every put hangs: a publication that reaches its put has
 * claimed its rows (PubClaim) and will never record them, so a kill after that line lands in that
 * window whatever the timing (test/republish-after-kill.test.ts).
 * FAULTS_TICK_MS=<ms> ticks again every <ms>, as the every-minute cron does, at a test's pace.
 * FAULTS_CONCURRENCY=<n> hourly-file workers (default 2).
 */
import { createInterface } from 'node:readline';
import { loadConfig } from '../../lib/core/config.js';
import { createContext } from '../../lib/domain/runtime.js';
import type { AppContext } from '../../lib/domain/context.js';
import type { ObjectStore } from '../../lib/core/store/types.js';
import { startPublisher } from '../../publisher/index.js';
import { slowStore } from './faults.js';

/** The real store with puts that never return (and never touch it): see FAULTS_HOLD_PUTS. */
function heldStore(inner: ObjectStore, onPut: (key: string) => void): ObjectStore {
  return {
    put: (key) => {
      onPut(key);
      return new Promise<never>(() => undefined);
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
  const base = await createContext(config, { applicationName: 'publisher-child' });
  let ctx: AppContext = base;
  const slow = process.env.FAULTS_SLOW_STORE;
  if (slow) {
    const [chunkBytes, delayMs] = slow.split(':').map(Number);
    ctx = { ...base, store: slowStore(base.store, { chunkBytes, delayMs, onPutStart: (key) => process.stdout.write(`put-start ${key}\n`) }) };
  } else if (process.env.FAULTS_HOLD_PUTS === '1') {
    ctx = { ...base, store: heldStore(base.store, (key) => process.stdout.write(`put-held ${key}\n`)) };
  }
  const lines = createInterface({ input: process.stdin });
  const heard = (word: string) => new Promise<void>((resolve) => lines.on('line', (l) => l.trim() === word && resolve()));
  if (process.env.FAULTS_WAIT_START === '1') {
    process.stdout.write('loaded\n');
    await heard('start');
  }
  const publisher = await startPublisher(ctx, { cron: false, concurrency: Number(process.env.FAULTS_CONCURRENCY ?? 2), pollingIntervalSeconds: 0.5 });
  if (process.env.FAULTS_WAIT_GO === '1') {
    process.stdout.write('waiting\n');
    await heard('go');
  }
  const sent = await publisher.tick();
  process.stdout.write(`ready ${sent}\n`);
  const every = Number(process.env.FAULTS_TICK_MS ?? 0);
  let stopping = false;
  // one tick at a time, as node-cron's noOverlap; a failed tick is the next one's to repeat
  const ticking = (async () => {
    while (every > 0 && !stopping) {
      await new Promise((r) => setTimeout(r, every));
      if (!stopping) await publisher.tick().catch(() => undefined);
    }
  })();
  const stop = async () => {
    stopping = true;
    await ticking;
    await publisher.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
