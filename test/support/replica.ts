/**
 * A real streaming standby of the test server, for the tests of DATABASE_REPLICA_URL: pg_basebackup
 * from the server the tests run on (TEST_DATABASE_URL, DATABASE_URL or the embedded cluster) into a
 * temp folder, started on a free loopback port in hot standby. The same steps as `scripts/pg.sh
 * replica`, on any test server.
 *
 * With a replication slot of its own (`test_standby_{pid}_{random}`): the suite runs in parallel, and
 * without one the other files' writes could recycle the WAL the standby needs between the end of the
 * copy and its first stream (it then never catches up). `destroy` drops the slot; a test run that
 * died keeps it only until the next run's global setup drops the slots of processes that are gone
 * (test/support/db.ts dropLeftoverDatabases), so the shared server never holds WAL for long.
 *
 *   before(async function () { standby = await standbyOrSkip(this, serverUrl()); });
 *   after(() => standby?.destroy());
 */
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freePort, waitFor } from './faults.js';

const PG_BIN = '/usr/lib/postgresql/15/bin';
const IS_ROOT = process.getuid?.() === 0;
const run = promisify(execFile);

/**
 * A server program as the postgres system user when the tests run as root (initdb and postgres refuse
 * root). Its failure's message is the program's name, how it ended and its stderr (execFile's starts
 * with the whole command line, which a failure summary cut to a few lines would show alone).
 */
async function asPg(cmd: string, args: string[], timeoutMs: number) {
  const [file, argv] = IS_ROOT ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args]] : [join(PG_BIN, cmd), args];
  try {
    return await run(file, argv, { encoding: 'utf8', timeout: timeoutMs });
  } catch (err) {
    const e = err as { code?: number | string; signal?: string; killed?: boolean; stderr?: string };
    const how = e.killed ? `killed after ${timeoutMs} ms` : e.signal ? `killed by ${e.signal}` : `exit ${e.code}`;
    throw new Error(`${cmd} failed (${how}): ${(e.stderr ?? '').trim() || '(nothing on stderr)'}`, { cause: err });
  }
}

function ownedByPostgres(...paths: string[]): void {
  if (!IS_ROOT) return;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  for (const p of paths) chownSync(p, uid, gid);
}

export interface Standby {
  port: number;
  /** the URL of `database` on the standby */
  urlFor(database: string): string;
  /** stops replay (pg_wal_replay_pause) and waits until it has stopped: new snapshots then stay where it paused */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** where replay stands and the end of the standby's log, for a failure message */
  describe(): Promise<string>;
  /** stop the standby and remove its folder */
  destroy(): Promise<void>;
}

/**
 * A standby of the server at `primaryUrl` (any database of it: the whole cluster is copied), or the
 * test skipped with a message when pg_basebackup is not installed; under CI its absence fails.
 */
export async function standbyOrSkip(test: Mocha.Context, primaryUrl: string): Promise<Standby> {
  if (!existsSync(join(PG_BIN, 'pg_basebackup'))) {
    const why = `pg_basebackup not found in ${PG_BIN} (Debian's postgresql-15)`;
    if (process.env.CI) throw new Error(`${why}: CI needs it`);
    console.warn(`    (skipped: ${why}; scripts/pg.sh installs it)`);
    test.skip();
  }
  return startStandby(primaryUrl);
}

/** Drops replication slot `slot` of the server at `primaryUrl`, once no walsender holds it (a few seconds at most). */
async function dropSlot(primaryUrl: string, slot: string): Promise<void> {
  const c = new pg.Client({ connectionString: primaryUrl });
  await c.connect();
  try {
    for (let i = 0; i < 50; i++) {
      const { rows } = await c.query<{ active: boolean }>('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [slot]);
      if (!rows.length) return;
      if (!rows[0].active) {
        await c.query('SELECT pg_drop_replication_slot($1)', [slot]);
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await c.end();
  }
}

/** pg_basebackup's attempts at one standby before its failure fails the test. */
const BASE_BACKUP_ATTEMPTS = 3;

/**
 * The copy of the server at `primaryUrl` into `data` (empty, the postgres user's), streaming its WAL
 * through replication slot `slot`, which it creates.
 *
 * Tried again on failure: the copy is of the shared test server, where the parallel suite's other
 * files create and drop their databases all the time, and a base backup fails outright when a folder
 * it has listed is gone before it opens it (basebackup.c sendDir skips a file that went away, not a
 * dropped database's folder). One CI run failed here without its reason in the summary; each failed
 * attempt is now printed with pg_basebackup's own words, its half copy and slot removed.
 */
async function baseBackup(primaryUrl: string, data: string, slot: string): Promise<void> {
  const primary = new URL(primaryUrl);
  for (let attempt = 1; ; attempt++) {
    try {
      await asPg(
        'pg_basebackup',
        [
          '-h',
          primary.hostname,
          '-p',
          primary.port || '5432',
          '-U',
          decodeURIComponent(primary.username || 'postgres'),
          '-D',
          data,
          '-R',
          '-X',
          'stream',
          '-c',
          'fast',
          '--no-sync',
          // its own slot, written to primary_slot_name by -R
          '-C',
          '-S',
          slot,
        ],
        300_000,
      );
      return;
    } catch (err) {
      if (attempt >= BASE_BACKUP_ATTEMPTS) throw err;
      console.warn(`    (standby: attempt ${attempt} of ${BASE_BACKUP_ATTEMPTS} failed, trying again: ${(err as Error).message})`);
      rmSync(data, { recursive: true, force: true });
      mkdirSync(data, { mode: 0o700 });
      ownedByPostgres(data);
      await dropSlot(primaryUrl, slot).catch(() => undefined);
    }
  }
}

async function startStandby(primaryUrl: string): Promise<Standby> {
  const base = mkdtempSync(join(tmpdir(), 'pg-standby-'));
  const data = join(base, 'data');
  const sockets = join(base, 'run');
  const log = join(base, 'standby.log');
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(sockets);
  writeFileSync(log, '');
  ownedByPostgres(base, data, sockets, log);
  const port = await freePort();
  const urlFor = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  let started = false;
  const slot = `test_standby_${process.pid}_${randomBytes(4).toString('hex')}`;
  const destroy = async () => {
    if (started) await asPg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'], 60_000).catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
    // the slot is free once the standby is gone (a slot still active refuses the drop: wait for it)
    await dropSlot(primaryUrl, slot).catch(() => undefined);
  };
  try {
    await baseBackup(primaryUrl, data, slot);
    // the copy carries the server's own settings (its port, its socket folder); these come last and win
    appendFileSync(
      data + '/postgresql.conf',
      [
        `port = ${port}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${sockets}'`,
        'shared_buffers = 32MB',
        'hot_standby = on',
        'hot_standby_feedback = on',
        'log_min_messages = warning',
        '',
      ].join('\n'),
    );
    await asPg('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '120', 'start'], 150_000);
    started = true;
  } catch (err) {
    await destroy();
    throw err;
  }

  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: urlFor('postgres') });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  const replayState = () => admin(async (c) => (await c.query<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state')).rows[0]?.state);
  return {
    port,
    urlFor,
    async pauseReplay() {
      await admin((c) => c.query('SELECT pg_wal_replay_pause()'));
      // replay stops at its next record: the shared server writes some all the time, and
      // txid_current() makes sure (a transaction with an id writes a commit record)
      const writer = new pg.Client({ connectionString: primaryUrl });
      await writer.connect();
      try {
        await waitFor(
          'replay paused',
          async () => {
            await writer.query('SELECT txid_current()');
            return (await replayState()) === 'paused';
          },
          20_000,
          50,
        );
      } finally {
        await writer.end();
      }
    },
    async resumeReplay() {
      await admin((c) => c.query('SELECT pg_wal_replay_resume()'));
      await waitFor('replay resumed', async () => (await replayState()) === 'not paused', 20_000, 50);
    },
    async describe() {
      const state = await admin(async (c) =>
        JSON.stringify(
          (
            await c.query(`SELECT pg_last_wal_receive_lsn()::text AS received, pg_last_wal_replay_lsn()::text AS replayed,
                                  pg_get_wal_replay_pause_state() AS pause, (SELECT status FROM pg_stat_wal_receiver) AS receiver`)
          ).rows[0],
        ),
      ).catch((err: Error) => `standby unreachable: ${err.message}`);
      return `standby ${state}; its log ends:\n${readFileSync(log, 'utf8').split('\n').slice(-30).join('\n')}`;
    },
    destroy,
  };
}
