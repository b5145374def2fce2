/**
 * Licence verification through TOMP 1.6.1 `customer.licenses`. TOMP gives the MaaS provider no other
 * way to vouch for its customer's driving licence, so in a zone that requires licence verification
 * (Copenhagen) a booking is verified when the customer carries a licence that:
 *
 * - is for the booked asset's class (`assetClass`: STEP for kick scooters, BICYCLE for bicycles, as
 *   api/tomp/views.ts reports `assetType.assetClass`), and
 * - is not expired: `validUntil` (a date) is today or later in UTC; a licence without `validUntil`
 *   does not expire (many national licences carry none).
 *
 * `number`, `licenseCode` and `issuingCountry` are accepted and not judged. Without such a licence
 * the booking is refused with 406 and a detail that says what is missing (missingLicence).
 */

export interface TompLicence {
  assetClass: string;
  validUntil?: string;
  number?: string;
  licenseCode?: string;
  issuingCountry?: string;
}

/** The TOMP assetClass of a vehicle form factor (same mapping as the leg's assetType). */
export const assetClassOf = (formFactor: string): 'STEP' | 'BICYCLE' => (formFactor === 'scooter' ? 'STEP' : 'BICYCLE');

const today = (now: Date): string => now.toISOString().slice(0, 10);

/** True when one of the licences is for `assetClass` and not expired at `now`. */
export function hasValidLicence(licences: readonly TompLicence[] | undefined, assetClass: string, now: Date): boolean {
  return (licences ?? []).some((l) => l.assetClass === assetClass && (l.validUntil === undefined || l.validUntil >= today(now)));
}

/** The 406 detail of a zone requiring licence verification: what the customer's licences lack. */
export function missingLicence(licences: readonly TompLicence[] | undefined, assetClass: string, now: Date): string {
  const base = `this zone requires a verified driving licence: send customer.licenses with a licence for assetClass ${assetClass} whose validUntil is ${today(now)} or later (or absent)`;
  const list = licences ?? [];
  if (list.length === 0) return `${base}; the request has no customer.licenses`;
  const forClass = list.filter((l) => l.assetClass === assetClass);
  if (forClass.length === 0) return `${base}; the licences sent are for ${[...new Set(list.map((l) => l.assetClass))].join(', ')}`;
  const latest = forClass
    .map((l) => l.validUntil!)
    .sort()
    .at(-1);
  return `${base}; the ${assetClass} licence expired on ${latest}`;
}
