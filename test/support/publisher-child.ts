/**
 * A publisher process for the SIGKILL fault test (test/faults-publisher-kill.test.ts):
 *
 *   DATABASE_URL=… STORE_URL=file://… [FAULTS_SLOW_STORE=256:20] node --import tsx test/support/publisher-child.ts
 *
 * Starts the real publisher (pg-boss workers, no cron), enqueues what is due once, and prints one line
 * per event on stdout so that the parent can kill it at the right moment:
 *   `ready`               the workers run and the due hours are queued (`ready <jobs>`)
 *   `put-start <key>`     a put began handing bytes to the store (FAULTS_SLOW_STORE only)
 * FAULTS_SLOW_STORE=<chunkBytes>:<delayMs> wraps the store so every put trickles its body in.
 */
import { loadConfig } from '../../lib/config.js';
import { createContext } from '../../lib/runtime.js';
import type { AppContext } from '../../lib/context.js';
import { startPublisher } from '../../publisher/index.js';
import { slowStore } from './faults.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const base = await createContext(config, { applicationName: 'publisher-child' });
  let ctx: AppContext = base;
  const slow = process.env.FAULTS_SLOW_STORE;
  if (slow) {
    const [chunkBytes, delayMs] = slow.split(':').map(Number);
    ctx = { ...base, store: slowStore(base.store, { chunkBytes, delayMs, onPutStart: (key) => process.stdout.write(`put-start ${key}\n`) }) };
  }
  const publisher = await startPublisher(ctx, { cron: false, concurrency: Number(process.env.FAULTS_CONCURRENCY ?? 2), pollingIntervalSeconds: 0.5 });
  const sent = await publisher.tick();
  process.stdout.write(`ready ${sent}\n`);
  const stop = async () => {
    await publisher.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
