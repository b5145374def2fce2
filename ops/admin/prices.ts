/**
 * A zone's prices (ops CLI `zone prices`, and the `prices` of a zone file): whole minor units of the
 * zone's currency, VAT included, per vehicle type, as the pricing table holds them. A vehicle whose
 * type has no price in its zone is neither listed nor rentable (partner API) and the simulator puts
 * none into service there, so that state is never left silently: a change that would leave vehicles
 * without a price is refused, and a zone without prices (or with vehicles of an unpriced type
 * already) is reported as a warning.
 */
import { type Db, type Queryable } from '../../lib/core/db.js';
import { sql, type RowOf } from '../../lib/core/sql/typed.js';
import type { Clock } from '../../lib/core/clock.js';
import { AdminError } from './credentials.js';

/** One vehicle type's price in a zone, as the pricing table holds it. */
export type PriceRow = Pick<RowOf<'AdminZonePrices'>, 'vehicle_type_id' | 'start_price' | 'price_per_minute'>;

/**
 * Checks the zones `zoneIds` after a price change: for those in `changed` (their prices were just
 * set), vehicles of an unpriced type are a problem to refuse; for the others, and for a zone without
 * any price, a warning. One line each, naming the fix.
 */
export async function unpricedWarnings(db: Queryable, zoneIds: string[], changed: Set<string>): Promise<{ refused: string[]; warnings: string[] }> {
  const refused: string[] = [];
  const warnings: string[] = [];
  for (const r of await db.many(sql('AdminUnpricedFleet'), [zoneIds])) {
    const fleet = r.types.map((t, i) => `${r.counts[i]} of type ${t}`).join(', ');
    if (r.types.length && changed.has(r.zone_id)) {
      refused.push(
        `zone ${r.zone_id}: the change would leave vehicles without a price (${fleet}), and those are neither listed nor rentable: ${r.types.join(', ')} needs a price while they are in the zone`,
      );
    } else if (r.types.length) {
      warnings.push(
        `zone ${r.zone_id} has vehicles without a price (${fleet}): they are neither listed nor rentable until priced (ops zone prices ${r.zone_id} ${r.types[0]}=<start>,<per minute>)`,
      );
    } else if (!r.has_prices) {
      warnings.push(
        `zone ${r.zone_id} has no prices: it lists no vehicles and the simulator puts none into service there until they are set (a zone file's "prices", or ops zone prices ${r.zone_id} <type>=<start>,<per minute>)`,
      );
    }
  }
  return { refused, warnings };
}

/** The zone's prices with its currency and VAT rate; AdminError for an unknown zone. */
export async function listPrices(db: Queryable, zoneId: string): Promise<{ currency: string | null; vatRate: number | null; prices: PriceRow[] }> {
  const known = (await db.many(sql('AdminListZoneIds'))).map((z) => z.id);
  if (!known.includes(zoneId)) throw new AdminError(`unknown zone ${zoneId}; known zones: ${known.join(', ') || 'none'}`);
  const rows = await db.many(sql('AdminZonePrices'), [zoneId]);
  return {
    currency: rows[0]?.currency ?? null,
    vatRate: rows[0]?.vat_rate ?? null,
    prices: rows.map((r) => ({ vehicle_type_id: r.vehicle_type_id, start_price: r.start_price, price_per_minute: r.price_per_minute })),
  };
}

/**
 * Sets some vehicle types' prices of one zone and removes others', in one transaction; the zone's
 * other prices stay. Refused (nothing changed) for an unknown zone or type, or when vehicles of the
 * zone would be left without a price. Returns the zone's prices after the change and the warnings.
 */
export async function setPrices(db: Db, clock: Clock, zoneId: string, set: PriceRow[], remove: string[]): Promise<{ prices: PriceRow[]; warnings: string[] }> {
  const both = set.filter((p) => remove.includes(p.vehicle_type_id)).map((p) => p.vehicle_type_id);
  if (both.length) throw new AdminError(`vehicle type ${both.join(', ')} is both priced and removed`);
  const twice = set.map((p) => p.vehicle_type_id).filter((t, i, all) => all.indexOf(t) !== i);
  if (twice.length) throw new AdminError(`vehicle type ${twice.join(', ')} is priced twice`);
  if (!set.length && !remove.length) throw new AdminError('nothing to change: give <type>=<start>,<per minute> or --remove <type>');
  const types = (await db.many(sql('AdminListVehicleTypeIds'))).map((t) => t.id);
  const unknown = [...set.map((p) => p.vehicle_type_id), ...remove].filter((t) => !types.includes(t));
  if (unknown.length)
    throw new AdminError(`unknown vehicle type ${unknown.join(', ')}; known: ${types.join(', ') || 'none'} (a zone file's vehicle_types declares new ones)`);
  return db.tx(async (tx) => {
    if (!(await tx.many(sql('AdminLockZones'), [[zoneId]])).length) {
      const known = (await tx.many(sql('AdminListZoneIds'))).map((z) => z.id);
      throw new AdminError(`unknown zone ${zoneId}; known zones: ${known.join(', ') || 'none'}`);
    }
    await tx.query(sql('AdminSetPrices'), [
      zoneId,
      set.map((p) => p.vehicle_type_id),
      set.map((p) => p.start_price),
      set.map((p) => p.price_per_minute),
      clock.now(),
      remove,
    ]);
    const { refused, warnings } = await unpricedWarnings(tx, [zoneId], new Set([zoneId]));
    if (refused.length) throw new AdminError(refused.join('; '));
    return { prices: (await listPrices(tx, zoneId)).prices, warnings };
  });
}
