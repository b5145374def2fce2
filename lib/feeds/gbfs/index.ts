/**
 * GBFS 2.2 and 3.0: file builders (v2.ts, v3.ts) over a database snapshot (model.ts), file names,
 * ttl and snapshot keys (files.ts). Published by publisher/feeds/gbfs, served by api/feeds.
 */
export * from './files.js';
export { loadZoneData, type ZoneData } from './model.js';
export { buildV2, envelopeV2, type V2Scope } from './v2.js';
export { buildV3, envelopeV3 } from './v3.js';
export type { BuildEnv } from './common.js';
