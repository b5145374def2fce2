/**
 * The live simulator's own tenant: partners that exist only for the simulator, and the users it
 * registers for them itself. The live simulator rents through these alone, never with a user a
 * partner registered: a partner's users are the partner's, and one of them on a simulated ride
 * would have the partner's own start refused (RentalAlreadyExists).
 *
 * The partners get no API key, so nobody else can act as them or register users with them; a
 * partner of the same name that has a key (someone else's) is not used. Created on first use, so a
 * demo database seeded by an older version gets them too.
 */
import { type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import type { Logger } from '../../lib/core/log.js';
import { insertUsers } from './fleet.js';
import type { Prng } from './prng.js';
import { TRIP_TYPE_WEIGHT } from './simulation.js';

export interface SimTenantPartner {
  id: string;
  name: string;
  /** share of the simulated rides */
  weight: number;
  pool: { prefix: string; domain: string };
}

/** One partner per trip type, so that the live trips keep the mix the feeds show (TRIP_TYPE_WEIGHT). */
export const SIM_PARTNERS = [
  { name: 'Fleet Simulator', kind: 'rental', tripType: 'rider', pool: { prefix: 'fleetsim', domain: 'riders.fleet-simulator.example' } },
  { name: 'Fleet Simulator Operations', kind: 'rental', tripType: 'operator', pool: { prefix: 'fleetsim-ops', domain: 'operations.fleet-simulator.example' } },
  { name: 'Fleet Simulator MaaS', kind: 'maas', tripType: 'maas', pool: { prefix: 'fleetsim-maas', domain: 'maas.fleet-simulator.example' } },
] as const;

export const SIM_PARTNER_NAMES: string[] = SIM_PARTNERS.map((p) => p.name);

/** Users registered at a time when every user of a simulator partner is on a ride. */
const USERS_PER_SIGNUP = 10;

/** The simulator's partners (created when missing), without any that is not the simulator's own. */
export async function simTenant(db: Queryable, rng: Prng, at: Date, log: Logger): Promise<SimTenantPartner[]> {
  for (const p of SIM_PARTNERS) await db.query(sql('SimSeedUpsertPartner'), [rng.uuid(), p.name, p.kind, p.tripType, at]);
  const rows = await db.many(sql('SimLiveTenant'), [SIM_PARTNER_NAMES]);
  const out: SimTenantPartner[] = [];
  for (const p of SIM_PARTNERS) {
    const row = rows.find((r) => r.name === p.name);
    if (!row) continue;
    if (row.has_keys || row.kind !== p.kind || row.trip_type !== p.tripType) {
      log.error({ partner: p.name }, 'a partner with the live simulator’s name is not the simulator’s own (it has keys or another kind): not riding with it');
      continue;
    }
    out.push({ id: row.id, name: p.name, weight: TRIP_TYPE_WEIGHT[p.tripType], pool: p.pool });
  }
  return out;
}

/** A user of the simulator's partner without a running rental; signs up new ones when all ride. */
export async function simUser(db: Queryable, rng: Prng, partner: SimTenantPartner, at: Date): Promise<string | undefined> {
  const pick = async () => (await db.many(sql('SimLiveUsers'), [partner.id, String(rng.nextU32()), 1]))[0]?.id as string | undefined;
  const free = await pick();
  if (free) return free;
  const { n } = await db.one(sql('SimSeedUserCount'), [partner.id]);
  await insertUsers(db, rng, partner.id, partner.pool, n, USERS_PER_SIGNUP, at);
  return pick();
}
