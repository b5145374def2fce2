/**
 * What a process hands to its parts: built once at start (bin/run.ts, tests), passed in, never
 * imported as a global.
 */
import type { Config } from './config.js';
import type { Db } from './db.js';
import type { Logger } from './log.js';
import type { Clock } from './clock.js';
import type { ObjectStore } from './store/types.js';
import type { VehicleGateway } from './gateway.js';

export interface AppContext {
  readonly config: Config;
  readonly db: Db;
  readonly store: ObjectStore;
  readonly log: Logger;
  readonly clock: Clock;
  readonly gateway: VehicleGateway;
}
