/**
 * The demo data set: zones, areas, vehicle types, prices, a fleet, partners with user pools, and the
 * demo credentials of DESIGN.md. Idempotent: does nothing when the demo zones exist. Deterministic:
 * ids come from a fixed-seed PRNG, so two seeded databases hold the same rows.
 *
 * The demo credentials are public (the README prints them), so the seed writes only into an empty
 * database or one it marked as the demo (database_marks, migration 000180): a database holding
 * partners, feed clients or zones of its own is refused (`DemoSeedRefused`), decided under the seed's
 * lock in the same transaction that would write.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { createApiKey } from '../../lib/domain/credentials/api-keys.js';
import { hashApiKey } from '../../lib/domain/credentials/secrets.js';
import { createFeedClient } from '../../lib/feeds/clients.js';
import { Prng } from '../sim/prng.js';
import { toWkt } from '../sim/geo.js';
import { loadZoneModels } from '../sim/model.js';
import { DEMO_FEED_CLIENTS, DEMO_PARTNERS, DEMO_ZONES, VEHICLE_TYPES } from './data.js';
import { insertUsers, insertVehicles } from '../sim/fleet.js';
import { SIM_PARTNER_NAMES } from '../sim/tenant.js';

export interface SeedSummary {
  /** false when the demo zones already existed and nothing was written */
  created: boolean;
  zones: string[];
  vehicles: number;
  partners: number;
  users: number;
  /** when the fleet was put into service (its provider_drop_off events) */
  deployedAt: Date;
  /** the demo credentials, to print at start */
  credentials: {
    apiKeys: Array<{ partner: string; scope: string; key: string }>;
    feedClients: Array<{ clientId: string; secret: string; role: string }>;
  };
}

/** The database holds partners, feed clients or zones that are not the demo's, and no demo mark. */
export class DemoSeedRefused extends Error {
  constructor(found: string) {
    super(
      `not seeding the demo: this database holds ${found} not written by the demo seed. The demo seed writes keys and client secrets ` +
        'that the README prints, so it runs only on an empty database or one it seeded; seed a database of its own (DATABASE_URL=…, or EMBEDDED_PG_DB=demo make seed)',
    );
    this.name = 'DemoSeedRefused';
  }
}

const SEED = 20260101;
/** Demo fleet age: history can be simulated for up to this long before "now". */
const DEPLOYED_DAYS_AGO = 30;

function credentialsList(): SeedSummary['credentials'] {
  return {
    apiKeys: DEMO_PARTNERS.flatMap((p) => p.keys.map((k) => ({ partner: p.name, scope: k.scope, key: k.key }))),
    feedClients: DEMO_FEED_CLIENTS.map((c) => ({ clientId: c.clientId, secret: c.secret, role: c.role })),
  };
}

export interface SeedOptions {
  vehiclesPerZone?: number;
  deployedAt?: Date;
}

/** Seeds the demo (or tops up its credentials); throws DemoSeedRefused on a database that is not the demo's. */
export async function seedDemo(ctx: AppContext, opts: SeedOptions = {}): Promise<SeedSummary> {
  return (await seed(ctx, opts, 'refuse'))!;
}

/** As seedDemo on an empty or demo database; elsewhere writes nothing and returns undefined (`ops simulate`). */
export async function seedDemoWhereDemo(ctx: AppContext, opts: SeedOptions = {}): Promise<SeedSummary | undefined> {
  return seed(ctx, opts, 'skip');
}

async function seed(ctx: AppContext, opts: SeedOptions, elsewhere: 'refuse' | 'skip'): Promise<SeedSummary | undefined> {
  const perZone = opts.vehiclesPerZone ?? 60;
  const hour = 3600000;
  const deployedAt = opts.deployedAt ?? new Date(Math.floor((ctx.clock.now().getTime() - DEPLOYED_DAYS_AGO * 24 * hour) / hour) * hour);
  const zoneIds = DEMO_ZONES.map((z) => z.id);
  return ctx.db.tx(
    async (tx) => {
      // one seeder at a time; the second one sees the zones and does nothing
      await tx.query(sql('SimSeedLock'));
      const foreign = await foreignRows(tx, zoneIds);
      if (foreign) {
        if (elsewhere === 'skip') return undefined;
        throw new DemoSeedRefused(foreign);
      }
      await tx.query(sql('SimSeedMarkDemo'), [ctx.clock.now()]);
      const existing = await tx.many(sql('SimSeedZonesExist'), [zoneIds]);
      if (existing.length > 0) {
        // a demo seeded by an older version gets the demo credentials added since (the README lists them)
        await insertDemoFeedClients(tx);
        return { created: false, zones: zoneIds, vehicles: 0, partners: 0, users: 0, deployedAt, credentials: credentialsList() };
      }
      const rng = new Prng(SEED);
      await insertWorld(tx, rng, deployedAt);
      const models = await loadZoneModels(tx, zoneIds);
      const { n: firstIndex } = await tx.one(sql('SimVehicleCount'));
      const vehicles = await insertVehicles(
        tx,
        rng.fork(1),
        models.map((zone) => ({
          zone,
          types: VEHICLE_TYPES.map((t) => ({ id: t.id, share: t.share })),
          count: perZone,
          plate: DEMO_ZONES.find((z) => z.id === zone.id)!.plate,
        })),
        firstIndex,
        deployedAt,
      );
      const { partners, users } = await insertPartners(tx, rng.fork(2), deployedAt);
      ctx.log.info({ zones: zoneIds, vehicles, partners, users }, 'demo data seeded');
      return { created: true, zones: zoneIds, vehicles, partners, users, deployedAt, credentials: credentialsList() };
    },
    { retries: 0 },
  );
}

/**
 * What keeps the seed out, as words for its message ("2 partners (Acme Rides, …) and 1 zone
 * (leipzig)"); undefined on a demo database (marked), or one holding nothing but demo rows.
 */
async function foreignRows(tx: Queryable, zoneIds: string[]): Promise<string | undefined> {
  const s = await tx.one(sql('SimSeedDatabaseState'), [
    [...DEMO_PARTNERS.map((p) => p.name), ...SIM_PARTNER_NAMES],
    DEMO_FEED_CLIENTS.map((c) => c.clientId),
    zoneIds,
  ]);
  if (s.demo) return undefined;
  const part = (n: number, one: string, names: string[]) => (n ? `${n} ${one}${n === 1 ? '' : 's'} (${names.join(', ')}${n > names.length ? ', …' : ''})` : '');
  const parts = [part(s.partners, 'partner', s.partner_names), part(s.clients, 'feed client', s.client_names), part(s.zones, 'zone', s.zone_names)].filter(
    Boolean,
  );
  if (!parts.length) return undefined;
  return parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

async function insertWorld(tx: Queryable, rng: Prng, at: Date): Promise<void> {
  for (const t of VEHICLE_TYPES) {
    await tx.query(sql('SimSeedInsertVehicleType'), [
      t.id,
      t.formFactor,
      t.propulsionType,
      t.name,
      t.make,
      t.model,
      t.color,
      t.maxRangeMeters,
      t.maxSpeedKph,
      t.ratedPowerW,
    ]);
  }
  for (const z of DEMO_ZONES) {
    await tx.query(sql('SimSeedInsertZone'), [
      z.id,
      z.name,
      z.city,
      z.country,
      z.timezone,
      z.currency,
      z.vatRate,
      z.language,
      z.parkingMode,
      z.licenceVerificationRequired,
      z.maxSpeedKph,
      z.reducedSpeedKph,
      z.minRequiredRides,
      JSON.stringify(z.sleepWindows),
      z.supportEmail,
      toWkt(z.boundary),
      at,
    ]);
    for (const a of z.areas) {
      await tx.query(sql('SimSeedInsertArea'), [
        rng.uuid(),
        z.id,
        a.name,
        a.type,
        a.vehicleTypes ?? [],
        toWkt(a.geom),
        a.capacity ?? null,
        a.maxSpeedKph ?? null,
        at,
      ]);
    }
    for (const [typeId, p] of Object.entries(z.pricing)) {
      await tx.query(sql('SimSeedInsertPricing'), [z.id, typeId, p.startPrice, p.pricePerMinute, at]);
    }
  }
}

async function insertPartners(tx: Queryable, rng: Prng, at: Date): Promise<{ partners: number; users: number }> {
  let partners = 0;
  let users = 0;
  for (const p of DEMO_PARTNERS) {
    const row = await tx.one(sql('SimSeedUpsertPartner'), [rng.uuid(), p.name, p.kind, p.tripType, at]);
    if (row.created) partners++;
    for (const k of p.keys) {
      if (await tx.maybeOne(sql('SimSeedApiKeyExists'), [hashApiKey(k.key)])) continue;
      await createApiKey(tx, row.id, k.scope, { key: k.key, label: 'demo' });
    }
    if (p.users) {
      const { n } = await tx.one(sql('SimSeedUserCount'), [row.id]);
      if (n < p.users.count) {
        await insertUsers(tx, rng.fork(partners + 10), row.id, p.users, n, p.users.count - n, at);
        users += p.users.count - n;
      }
    }
  }
  await insertDemoFeedClients(tx);
  return { partners, users };
}

/** The demo's OAuth feed clients that do not exist yet (idempotent). */
async function insertDemoFeedClients(tx: Queryable): Promise<void> {
  for (const c of DEMO_FEED_CLIENTS) {
    if (await tx.maybeOne(sql('SimSeedFeedClientExists'), [c.clientId])) continue;
    await createFeedClient(tx, { clientId: c.clientId, role: c.role, zones: null, secret: c.secret, label: c.label });
  }
}
