/**
 * The available vehicles of a zone (GET /v1/vehicles?zoneID=), rendered once per zone and
 * VEHICLE_LIST_CACHE_MS (default 1 s) for every partner polling it in that time.
 *
 * Why: it is the partner API's most frequent request (every partner app polls each zone it shows,
 * about every 7 s per user), and one answer is the same for every partner that may see the zone:
 * the query, the 60-odd presented vehicles and their JSON cost far more than the rest of the
 * request. Concurrent misses on a zone share one query (lru-cache's fetch).
 *
 * The price: the list may be up to that long behind the database, in every process alike. A
 * vehicle rented meanwhile still shows (its start answers VehicleNotAvailable, as it would after any
 * race between two partners); a price changed meanwhile shows the old price (the pricing endpoint,
 * which the requirement says to ask before a rental, is never cached). The partner's access to the
 * zone is checked on every request, before the cache.
 */
import { LRUCache } from 'lru-cache';
import type { AppContext } from '../../lib/context.js';
import { q } from '../../lib/db.js';
import { RentalError } from '../../lib/rentals/errors.js';
import { isSleeping } from '../../lib/zones.js';
import { presentVehicle } from './responses.js';

/** The answer's JSON, or undefined for a zone that does not exist. */
type Rendered = { json: string } | { json: undefined };

async function render(app: AppContext, zoneId: string): Promise<Rendered> {
  const now = app.clock.now();
  // zone and vehicles in one round trip (see the query); every zone: access is checked by the caller
  const rows = await app.db.many(q('PartnerAvailableVehicles'), [zoneId, now, null]);
  const zone = rows[0];
  if (!zone) return { json: undefined };
  // a sleeping zone has no available vehicles
  const sleeping = isSleeping({ timezone: zone.timezone, sleepWindows: zone.sleep_windows, status: zone.zone_status }, now);
  return { json: JSON.stringify({ data: sleeping || zone.id === null ? [] : rows.map(presentVehicle) }) };
}

export class VehicleLists {
  private readonly cache: LRUCache<string, Rendered> | undefined;

  constructor(private readonly app: AppContext) {
    const ttl = app.config.vehicleListCacheMs;
    this.cache =
      ttl > 0
        ? new LRUCache<string, Rendered>({
            max: 10_000,
            // lru-cache counts an entry stale once older than its ttl; the bound is "at ttl"
            ttl: Math.max(1, ttl - 1),
            ttlResolution: 0,
            perf: { now: () => app.clock.now().getTime() },
            fetchMethod: (zoneId) => render(app, zoneId),
          })
        : undefined;
  }

  /** The list's JSON for a partner that may see `zones` (null: every zone); ZoneNotFound otherwise. */
  async json(zoneId: string, zones: readonly string[] | null): Promise<string> {
    if (zones !== null && !zones.includes(zoneId)) throw new RentalError('ZoneNotFound');
    const rendered = this.cache ? (await this.cache.fetch(zoneId))! : await render(this.app, zoneId);
    if (rendered.json === undefined) throw new RentalError('ZoneNotFound');
    return rendered.json;
  }
}

const perApp = new WeakMap<AppContext, VehicleLists>();

/** One cache per app context (each process builds one). */
export function vehicleListsOf(app: AppContext): VehicleLists {
  let lists = perApp.get(app);
  if (!lists) perApp.set(app, (lists = new VehicleLists(app)));
  return lists;
}
