/**
 * The HA cluster of scripts/ha.sh (etcd, two Patroni nodes with synchronous replication, HAProxy) for
 * test/faults-failover.test.ts and bench/failover.bench.ts: each its own directory under .data and
 * its own ports, so that neither touches `make db-ha`'s cluster.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../lib/core/paths.js';

const run = promisify(execFile);

export interface HaCluster {
  /** HAProxy's read-write port (DATABASE_URL) and read-only port (DATABASE_REPLICA_URL) */
  rw: string;
  ro: string;
  /** runs `scripts/ha.sh <args>` on this cluster; its stdout */
  ha(...args: string[]): Promise<string>;
  /** the Postgres port of a node by name (node0, node1) */
  pgPort(node: string): number;
  destroy(): Promise<void>;
}

/** A fresh cluster (whatever was left in its directory is removed first), started and ready. */
export async function startHaCluster(name: string, basePort: number): Promise<HaCluster> {
  const env = { ...process.env, HA_DIR: join(ROOT, '.data', name), HA_BASE_PORT: String(basePort) };
  const ha = async (...args: string[]) => (await run(join(ROOT, 'scripts', 'ha.sh'), args, { env, timeout: 240_000 })).stdout.trim();
  await ha('destroy');
  const printed = await ha('start');
  const url = (name: string) => {
    const m = new RegExp(`^${name}=(.*)$`, 'm').exec(printed);
    if (!m) throw new Error(`scripts/ha.sh start printed no ${name}: ${printed}`);
    return m[1];
  };
  return {
    rw: url('DATABASE_URL'),
    ro: url('DATABASE_REPLICA_URL'),
    ha,
    // scripts/ha.sh: node N's Postgres on base + 10 + 2N
    pgPort: (node) => basePort + 10 + 2 * Number(node.replace(/^node/, '')),
    destroy: async () => {
      await ha('destroy');
    },
  };
}
