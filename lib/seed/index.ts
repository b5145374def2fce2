/**
 * The demo data set: zones, areas, vehicle types, prices, a fleet, partners with user pools, and the
 * demo credentials of DESIGN.md. Idempotent: does nothing when the demo zones exist. Deterministic:
 * ids come from a fixed-seed PRNG, so two seeded databases hold the same rows.
 */
import type { AppContext } from '../context.js';
import { q, type Queryable } from '../db.js';
import { createApiKey } from '../auth/api-keys.js';
import { hashApiKey } from '../auth/secrets.js';
import { createFeedClient } from '../auth/feed-clients.js';
import { Prng } from '../sim/prng.js';
import { toWkt } from '../sim/geo.js';
import { loadZoneModels } from '../sim/model.js';
import { DEMO_FEED_CLIENTS, DEMO_PARTNERS, DEMO_ZONES, VEHICLE_TYPES } from './data.js';
import { insertUsers, insertVehicles } from '../sim/fleet.js';

export { DEMO_ZONES, DEMO_PARTNERS, DEMO_FEED_CLIENTS, VEHICLE_TYPES } from './data.js';

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

const SEED = 20260101;
/** Demo fleet age: history can be simulated for up to this long before "now". */
const DEPLOYED_DAYS_AGO = 30;

function credentialsList(): SeedSummary['credentials'] {
  return {
    apiKeys: DEMO_PARTNERS.flatMap((p) => p.keys.map((k) => ({ partner: p.name, scope: k.scope, key: k.key }))),
    feedClients: DEMO_FEED_CLIENTS.map((c) => ({ clientId: c.clientId, secret: c.secret, role: c.role })),
  };
}

export async function seedDemo(ctx: AppContext, opts: { vehiclesPerZone?: number; deployedAt?: Date } = {}): Promise<SeedSummary> {
  const perZone = opts.vehiclesPerZone ?? 60;
  const hour = 3600000;
  const deployedAt = opts.deployedAt ?? new Date(Math.floor((ctx.clock.now().getTime() - DEPLOYED_DAYS_AGO * 24 * hour) / hour) * hour);
  const zoneIds = DEMO_ZONES.map((z) => z.id);
  return ctx.db.tx(async (tx) => {
    // one seeder at a time; the second one sees the zones and does nothing
    await tx.query(q('SimSeedLock'));
    const existing = await tx.many(q('SimSeedZonesExist'), [zoneIds]);
    if (existing.length > 0) {
      // a demo seeded by an older version gets the demo credentials added since (the README lists them)
      await insertDemoFeedClients(tx);
      return { created: false, zones: zoneIds, vehicles: 0, partners: 0, users: 0, deployedAt, credentials: credentialsList() };
    }
    const rng = new Prng(SEED);
    await insertWorld(tx, rng, deployedAt);
    const models = await loadZoneModels(tx, zoneIds);
    const { n: firstIndex } = await tx.one(q('SimVehicleCount'));
    const vehicles = await insertVehicles(
      tx,
      rng.fork(1),
      models.map((zone) => ({ zone, types: VEHICLE_TYPES.map((t) => ({ id: t.id, share: t.share })), count: perZone, plate: DEMO_ZONES.find((z) => z.id === zone.id)!.plate })),
      firstIndex,
      deployedAt,
    );
    const { partners, users } = await insertPartners(tx, rng.fork(2), deployedAt);
    ctx.log.info({ zones: zoneIds, vehicles, partners, users }, 'demo data seeded');
    return { created: true, zones: zoneIds, vehicles, partners, users, deployedAt, credentials: credentialsList() };
  }, { retries: 0 });
}

async function insertWorld(tx: Queryable, rng: Prng, at: Date): Promise<void> {
  for (const t of VEHICLE_TYPES) {
    await tx.query(q('SimSeedInsertVehicleType'), [t.id, t.formFactor, t.propulsionType, t.name, t.make, t.model, t.color, t.maxRangeMeters, t.maxSpeedKph, t.ratedPowerW]);
  }
  for (const z of DEMO_ZONES) {
    await tx.query(q('SimSeedInsertZone'), [
      z.id, z.name, z.city, z.country, z.timezone, z.currency, z.vatRate, z.language, z.parkingMode, z.licenceVerificationRequired,
      z.maxSpeedKph, z.reducedSpeedKph, z.minRequiredRides, JSON.stringify(z.sleepWindows), z.supportEmail, toWkt(z.boundary), at,
    ]);
    for (const a of z.areas) {
      await tx.query(q('SimSeedInsertArea'), [rng.uuid(), z.id, a.name, a.type, a.vehicleTypes ?? [], toWkt(a.geom), a.capacity ?? null, a.maxSpeedKph ?? null, at]);
    }
    for (const [typeId, p] of Object.entries(z.pricing)) {
      await tx.query(q('SimSeedInsertPricing'), [z.id, typeId, p.startPrice, p.pricePerMinute, at]);
    }
  }
}

async function insertPartners(tx: Queryable, rng: Prng, at: Date): Promise<{ partners: number; users: number }> {
  let partners = 0;
  let users = 0;
  for (const p of DEMO_PARTNERS) {
    const row = await tx.one<{ id: string; created: boolean }>(q('SimSeedUpsertPartner'), [rng.uuid(), p.name, p.kind, p.tripType, at]);
    if (row.created) partners++;
    for (const k of p.keys) {
      if (await tx.maybeOne(q('SimSeedApiKeyExists'), [hashApiKey(k.key)])) continue;
      await createApiKey(tx, row.id, k.scope, { key: k.key, label: 'demo' });
    }
    if (p.users) {
      const { n } = await tx.one(q('SimSeedUserCount'), [row.id]);
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
    if (await tx.maybeOne(q('SimSeedFeedClientExists'), [c.clientId])) continue;
    await createFeedClient(tx, { clientId: c.clientId, role: c.role, zones: null, secret: c.secret, label: c.label });
  }
}
