/**
 * Putting vehicles into service: unique printed codes, licence plates, a parking place inside the
 * zone, and the provider_drop_off event that makes them available. Used by the demo seed and by the
 * simulator when it needs more vehicles than exist.
 */
import { type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { Prng } from './prng.js';
import { parkingPlace, type ZoneModel } from './model.js';

const CODE_SPACE = 36 ** 4;

/**
 * The printed code of the n-th vehicle: a bijection of n onto the 36^4 codes (multiplier coprime
 * with 36^4), so that consecutive vehicles do not get consecutive, guessable codes.
 */
export function vehicleCode(n: number): string {
  const x = ((((n % CODE_SPACE) * 1000003 + 424242) % CODE_SPACE) + CODE_SPACE) % CODE_SPACE;
  return x.toString(36).toUpperCase().padStart(4, '0');
}

const LETTERS = 'ABCDEFGHJKLMNPRSTUVWXYZ';

export interface NewVehicleSpec {
  zone: ZoneModel;
  /** vehicle type id → share of the new vehicles */
  types: Array<{ id: string; share: number }>;
  count: number;
  /** plate of the n-th vehicle given three random letters */
  plate?: (n: number, letters: string) => string;
}

/**
 * Inserts `count` vehicles per spec, numbered from `firstIndex` (codes follow the index), all
 * available since `at`. Deterministic for the PRNG state. Returns the number inserted.
 */
export async function insertVehicles(db: Queryable, rng: Prng, specs: NewVehicleSpec[], firstIndex: number, at: Date): Promise<number> {
  const cols = {
    id: [] as string[],
    code: [] as string[],
    zone: [] as string[],
    type: [] as string[],
    battery: [] as number[],
    lng: [] as number[],
    lat: [] as number[],
    plate: [] as string[],
    plateId: [] as string[],
    eventId: [] as string[],
    gbfsId: [] as string[],
  };
  let n = firstIndex;
  for (const spec of specs) {
    const totalShare = spec.types.reduce((s, t) => s + t.share, 0);
    for (let i = 0; i < spec.count; i++, n++) {
      let r = rng.next() * totalShare;
      const type = spec.types.find((t) => (r -= t.share) < 0) ?? spec.types[spec.types.length - 1];
      const letters = Array.from({ length: 3 }, () => LETTERS[rng.int(0, LETTERS.length - 1)]).join('');
      const [lng, lat] = parkingPlace(rng, spec.zone, i);
      cols.id.push(rng.uuid());
      cols.code.push(vehicleCode(n));
      cols.zone.push(spec.zone.id);
      cols.type.push(type.id);
      cols.battery.push(rng.int(55, 100));
      cols.lng.push(lng);
      cols.lat.push(lat);
      cols.plate.push(spec.plate ? spec.plate(n, letters) : `${letters}${String(n % 10000).padStart(4, '0')}`);
      cols.plateId.push(`LP-${spec.zone.id.toUpperCase().slice(0, 3)}-${String(n).padStart(6, '0')}`);
      cols.eventId.push(rng.uuid());
      cols.gbfsId.push(rng.uuid());
    }
  }
  let inserted = 0;
  const CHUNK = 5000;
  for (let s = 0; s < cols.id.length; s += CHUNK) {
    const sl = <T>(a: T[]) => a.slice(s, s + CHUNK);
    const res = await db.query(sql('SimInsertVehicles'), [
      sl(cols.id),
      sl(cols.code),
      sl(cols.zone),
      sl(cols.type),
      sl(cols.battery),
      sl(cols.lng),
      sl(cols.lat),
      sl(cols.plate),
      sl(cols.plateId),
      sl(cols.eventId),
      sl(cols.gbfsId),
      at,
    ]);
    inserted += res.rowCount ?? 0;
  }
  return inserted;
}

/** Creates `count` users for a partner (deterministic ids, e-mails and external ids). */
export async function insertUsers(
  db: Queryable,
  rng: Prng,
  partnerId: string,
  pool: { prefix: string; domain: string },
  from: number,
  count: number,
  at: Date,
): Promise<void> {
  const ids: string[] = [];
  const emails: string[] = [];
  const exts: string[] = [];
  for (let i = from; i < from + count; i++) {
    const n = String(i + 1).padStart(5, '0');
    ids.push(rng.uuid());
    emails.push(`rider${n}@${pool.domain}`);
    exts.push(`${pool.prefix}-${n}`);
  }
  for (let s = 0; s < ids.length; s += 5000) {
    await db.query(sql('SimInsertUsers'), [ids.slice(s, s + 5000), partnerId, emails.slice(s, s + 5000), exts.slice(s, s + 5000), at]);
  }
}
