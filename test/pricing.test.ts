import { expect } from 'chai';
import { computeCost, durationMinutes, vatOf } from '../lib/domain/pricing.js';

const base = { startPrice: 100, pricePerMinute: 25, vatRate: 0.19, distanceMeters: 1200, endedAt: new Date('2026-11-21T10:00:00Z'), charge: true };

describe('pricing', () => {
  it('rounds every started minute up, from the exact duration', () => {
    expect(durationMinutes(0)).to.equal(0);
    expect(durationMinutes(0.2)).to.equal(1);
    expect(durationMinutes(60)).to.equal(1);
    expect(durationMinutes(60.2)).to.equal(2);
    expect(computeCost({ ...base, durationSeconds: 0.2 })).to.deep.equal({ durationMin: 1, total: 125, vat: 20, subtotal: 105 });
  });

  it('VAT is the included share: total − round(total / (1 + rate)); subtotal + vat = total', () => {
    const c = computeCost({ ...base, durationSeconds: 7 * 60 + 1 }); // 8 minutes
    expect(c.total).to.equal(100 + 25 * 8);
    expect(c.vat).to.equal(300 - Math.round(300 / 1.19));
    expect(c.subtotal + c.vat).to.equal(c.total);
    expect(vatOf(1000, 0.25)).to.equal(200);
  });

  it('charges nothing for ENDED_WITH_NO_CHARGE, and short rides only before 2024', () => {
    expect(computeCost({ ...base, durationSeconds: 600, charge: false }).total).to.equal(0);
    expect(computeCost({ ...base, durationSeconds: 90, distanceMeters: 500, endedAt: new Date('2023-12-31T23:00:00Z') }).total).to.equal(0);
    expect(computeCost({ ...base, durationSeconds: 600, distanceMeters: 50, endedAt: new Date('2023-06-01T00:00:00Z') }).total).to.equal(0);
    expect(computeCost({ ...base, durationSeconds: 90, distanceMeters: 50, endedAt: new Date('2024-01-01T00:00:00Z') }).total).to.equal(150);
  });
});
