/**
 * What a process hands to its parts: built once at start (bin/run.ts, tests), passed in, never
 * imported as a global.
 */
import type { Config } from '../core/config.js';
import type { Db } from '../core/db.js';
import type { Logger } from '../core/log.js';
import type { Clock } from '../core/clock.js';
import type { ObjectStore } from '../core/store/types.js';
import type { VehicleGateway } from './gateway.js';

export interface AppContext {
  readonly config: Config;
  /**
   * The primary's pool. `db.replica` is the read pool: a streaming replica's (DATABASE_REPLICA_URL)
   * or the primary's own, so reads that may lag name it without asking which; reads that must see a
   * write their caller could have seen go through lib/core/replica.ts. The read pool belongs to the
   * primary's pool, not to the context, so a context copied with another `db` (a test's short
   * statement timeout) never keeps reading through the old one.
   */
  readonly db: Db;
  readonly store: ObjectStore;
  readonly log: Logger;
  readonly clock: Clock;
  readonly gateway: VehicleGateway;
}
