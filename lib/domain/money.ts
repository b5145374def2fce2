/**
 * Money is stored in integer minor units; TOMP amounts and GBFS prices are in the currency's major
 * unit with decimals (9.95 EUR). The number of decimals comes from ISO 4217 via Intl (JPY 0, EUR 2,
 * BHD 3). The one conversion for every API family.
 */
const digitsCache = new Map<string, number>();

export function currencyDigits(currency: string): number {
  let d = digitsCache.get(currency);
  if (d === undefined) {
    try {
      d = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    } catch {
      d = 2;
    }
    digitsCache.set(currency, d);
  }
  return d;
}

/** Minor units → major units of the currency (2 decimals for EUR, 0 for JPY …). */
export function toMajor(minor: number, currency: string): number {
  const digits = currencyDigits(currency);
  return Number((minor / 10 ** digits).toFixed(digits));
}
