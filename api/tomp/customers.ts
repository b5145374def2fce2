/**
 * A TOMP customer is a user of the MaaS partner, known by the partner's `customer.externalId`.
 * The first booking creates the user; later bookings find it again. `users` has no unique key on
 * external_id (the partner API may register duplicates), so concurrent first bookings of one
 * customer are serialised by a transaction-scoped advisory lock on (partner, externalId).
 */
import { type Db } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';

/** TOMP users have no e-mail of their own; the placeholder is unroutable by construction (RFC 2606 .invalid). */
function placeholderEmail(externalId: string): string {
  return `${externalId.replace(/[^A-Za-z0-9._+-]/g, '_').slice(0, 180) || 'customer'}@maas.invalid`;
}

export async function findOrCreateCustomer(db: Db, partnerId: string, externalId: string, now: Date): Promise<{ id: string; blocked: boolean }> {
  return db.tx(async (tx) => {
    await tx.query(sql('TompLockCustomer'), [partnerId, externalId]);
    const found = await tx.maybeOne(sql('TompFindCustomer'), [partnerId, externalId]);
    if (found) return found;
    return tx.one(sql('TompInsertCustomer'), [partnerId, placeholderEmail(externalId), externalId, now]);
  });
}
