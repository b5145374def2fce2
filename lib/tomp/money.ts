/**
 * TOMP amounts are in the currency's base unit with decimals (9.95 EUR); we store integer minor
 * units. The number of decimals comes from ISO 4217 via Intl (JPY 0, EUR 2, BHD 3).
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

export function toMajor(minor: number, currency: string): number {
  const digits = currencyDigits(currency);
  return Number((minor / 10 ** digits).toFixed(digits));
}

