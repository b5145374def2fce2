/**
 * Receipts of ended rentals: a one-page PDF (pdfkit) stored in the object store under
 * `receipts/{rentalId}.pdf`. The engine records the key when the rental ends; the receipt route
 * renders and stores the PDF on its first download (rendering costs ~8 ms of CPU, too much for the
 * end path) and streams the stored object afterwards. An ended rental never changes, so the PDF
 * rendered later is the same document.
 */
import PDFDocument from 'pdfkit';
import type { AppContext } from '../context.js';
import { currencyDigits } from '../money.js';
import type { RentalRecord } from './types.js';

export function receiptKey(rentalId: string): string {
  return `receipts/${rentalId}.pdf`;
}

/** The amount in the currency's major unit with its own decimals (lib/domain/money.ts): `9.95 EUR`, `995 JPY`. */
function money(minor: number | null, currency: string): string {
  const digits = currencyDigits(currency);
  return `${((minor ?? 0) / 10 ** digits).toFixed(digits)} ${currency}`;
}

/** Renders the receipt PDF of an ended rental. */
function renderReceipt(r: RentalRecord, issuer: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // fixed dates so the same rental always renders the same bytes
    const doc = new PDFDocument({ size: 'A4', margin: 56, info: { Title: `Receipt ${r.id}`, Author: issuer, CreationDate: r.endedAt ?? r.startedAt } });
    const chunks: Buffer[] = [];
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
    doc.fontSize(20).text(issuer);
    doc.moveDown(0.5).fontSize(14).text('Rental receipt');
    doc.moveDown().fontSize(10);
    const rows: Array<[string, string]> = [
      ['Rental', r.id],
      ['Vehicle', r.vehicleCode],
      ['Zone', r.zoneId],
      ['State', r.state],
      ['Started (UTC)', r.startedAt.toISOString()],
      ['Ended (UTC)', r.endedAt?.toISOString() ?? '-'],
      ['Duration', `${r.durationMin ?? 0} min`],
      ['Distance', `${r.distanceM ?? 0} m`],
      ['Unlock fee', money(r.startPrice, r.currency)],
      ['Price per minute', money(r.pricePerMinute, r.currency)],
      ['Subtotal (excl. VAT)', money(r.subtotal, r.currency)],
      [`VAT ${(r.vatRate * 100).toFixed(2)} %`, money(r.vatAmount, r.currency)],
      ['Total (incl. VAT)', money(r.totalAmount, r.currency)],
    ];
    for (const [k, v] of rows) doc.text(`${k}: ${v}`);
    doc.end();
  });
}

/** Renders and stores the receipt; returns its key. */
export async function storeReceipt(ctx: Pick<AppContext, 'store' | 'config'>, r: RentalRecord): Promise<string> {
  const key = receiptKey(r.id);
  const pdf = await renderReceipt(r, ctx.config.providerName);
  await ctx.store.put(key, pdf, { contentType: 'application/pdf' });
  return key;
}
