/**
 * The available vehicles of a zone (GET /v1/vehicles?zoneID=), rendered once per zone and change
 * and shared by every partner polling it.
 *
 * Why: it is the partner API's most frequent request (every partner app polls each zone it shows,
 * about every 7 s per user), and one answer is the same for every partner that may see the zone:
 * the query, the 60-odd presented vehicles and their JSON cost far more than the rest of the
 * request.
 *
 * A cached list never contradicts a write its caller could have seen, in any API process: every
 * write that can change a zone's list bumps the zone's version at commit (migration 000140:
 * vehicles, rentals, TOMP bookings, prices, the zone), the list is rendered with the version of its
 * own snapshot, and each request reads the current version (one primary-key lookup) before it
 * serves a cached list. So a rental started or ended, a booking made or finished, a vehicle taken
 * out of service shows in the very next list, from this process or another. What changes with time
 * alone (a booking's hold expiring, a sleep window opening) is bounded by VEHICLE_LIST_CACHE_MS
 * (default 1 s). Concurrent misses of a zone share one render (lru-cache's fetch). The partner's
 * access to the zone is checked on every request, before the cache.
 *
 * With a streaming replica (DATABASE_REPLICA_URL) the version is still read on the primary, and a
 * list is rendered on the replica only once the replica has replayed everything the primary had
 * committed after that read (lib/core/replica.ts readCaughtUp: a millisecond or two under streaming), so
 * its snapshot shows that version or a newer one. A replica that lags more than
 * DATABASE_REPLICA_WAIT_MS, or is unreachable, leaves the render to the primary: never a rented
 * vehicle shown as available.
 */
import { NamedCache } from '../../lib/core/cache.js';
import type { AppContext } from '../../lib/domain/context.js';
import { type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { readCaughtUp } from '../../lib/core/replica.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import { isSleeping } from '../../lib/domain/zones.js';
import { presentVehicle } from './responses.js';

/** The answer's JSON and the zone version it shows; json undefined for a zone that does not exist. */
interface Rendered {
  json: string | undefined;
  version: number;
}

async function render(app: AppContext, db: Queryable, zoneId: string): Promise<Rendered> {
  const now = app.clock.now();
  // zone, version and vehicles in one round trip (see the query); every zone: access is checked by the caller
  const rows = await db.many(sql('PartnerAvailableVehicles'), [zoneId, now, null]);
  const zone = rows[0];
  if (!zone) return { json: undefined, version: 0 };
  // a sleeping zone has no available vehicles
  const sleeping = isSleeping({ timezone: zone.timezone, sleepWindows: zone.sleep_windows, status: zone.zone_status }, now);
  return { json: JSON.stringify({ data: sleeping || zone.id === null ? [] : rows.map(presentVehicle) }), version: zone.list_version };
}

export class VehicleLists {
  private readonly cache: NamedCache<string, Rendered> | undefined;
  /** lists rendered (tests and the bench: how much the cache saves) */
  renders = 0;
  /** of those, rendered on the streaming replica */
  rendersOnReplica = 0;

  constructor(private readonly app: AppContext) {
    const ttl = app.config.vehicleListCacheMs;
    this.cache =
      ttl > 0
        ? new NamedCache<string, Rendered>('partner_vehicle_lists', {
            max: 10_000,
            // lru-cache counts an entry stale once older than its ttl; the bound is "at ttl"
            ttl: Math.max(1, ttl - 1),
            ttlResolution: 0,
            perf: { now: () => app.clock.now().getTime() },
            fetchMethod: (zoneId) => this.render(zoneId),
          })
        : undefined;
  }

  /** The list's JSON for a partner that may see `zones` (null: every zone); ZoneNotFound otherwise. */
  async json(zoneId: string, zones: readonly string[] | null): Promise<string> {
    if (zones !== null && !zones.includes(zoneId)) throw new RentalError('ZoneNotFound');
    const rendered = this.cache ? await this.current(this.cache, zoneId) : await this.render(zoneId);
    if (rendered?.json === undefined) throw new RentalError('ZoneNotFound');
    return rendered.json;
  }

  /** The cached list when it shows the zone's current version; a fresh render otherwise. */
  private async current(cache: NamedCache<string, Rendered>, zoneId: string): Promise<Rendered | undefined> {
    const row = await this.app.db.maybeOne(sql('PartnerZoneVersion'), [zoneId]);
    if (!row) return undefined;
    const cached = cache.get(zoneId);
    if (cached && cached.version >= row.version) return cached;
    // a render already in flight may have started before the write: then one more of our own
    const shared = await cache.fetch(zoneId, { forceRefresh: true });
    if (shared && shared.version >= row.version) return shared;
    const own = await this.render(zoneId);
    cache.set(zoneId, own);
    return own;
  }

  /** One render, showing every write committed before it began (on the replica once it has replayed them). */
  private render(zoneId: string): Promise<Rendered> {
    this.renders++;
    return readCaughtUp(this.app.db, this.app.config.databaseReplicaWaitMs, (db) => {
      if (db !== this.app.db) this.rendersOnReplica++;
      return render(this.app, db, zoneId);
    });
  }
}

const perApp = new WeakMap<AppContext, VehicleLists>();

/** One cache per app context (each process builds one). */
export function vehicleListsOf(app: AppContext): VehicleLists {
  let lists = perApp.get(app);
  if (!lists) perApp.set(app, (lists = new VehicleLists(app)));
  return lists;
}
