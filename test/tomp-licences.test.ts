/**
 * TOMP bookings in a zone that requires licence verification (customer.licenses) and the `radius`
 * of a booking. The README's TOMP walkthrough is run as written by test/readme-walkthrough.test.ts.
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { buildApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone } from './support/tomp-fixtures.js';

const P = '/edge/tomp';

describe('TOMP: licences and radius', () => {
  // 10:00 UTC: Copenhagen (sleep window 01:00–05:00 local) is awake
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  let api: supertest.Agent;
  let zoneId: string;
  let maas: { id: string; key: string };

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    zoneId = await insertTompZone(t.ctx.db);
    await t.ctx.db.query(`UPDATE zones SET licence_verification_required = true WHERE id = $1`, [zoneId]);
    maas = await insertMaasPartner(t.ctx.db);
  });

  const book = (v: { id: string; lat: number; lng: number }, customer: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    api
      .post(`${P}/bookings/one-stop`)
      .set('X-Access-Token', maas.key)
      .send({ from: { coordinates: { lng: v.lng, lat: v.lat } }, useAssets: [v.id], customer, ...extra });

  it('406 UserLicenceVerificationRequired saying what is missing; a licence of the asset class, not expired, books', async () => {
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const none = await book(v, { externalId: 'lic-1' });
    expect(none.status).to.equal(406);
    expect(none.body.type).to.equal('UserLicenceVerificationRequired');
    expect(none.body.detail)
      .to.match(/assetClass STEP/)
      .and.match(/no customer\.licenses/);
    const other = await book(v, { externalId: 'lic-1', licenses: [{ assetClass: 'CAR', validUntil: '2030-01-01' }] });
    expect(other.status).to.equal(406);
    expect(other.body.detail).to.match(/for CAR/);
    const expired = await book(v, { externalId: 'lic-1', licenses: [{ assetClass: 'STEP', validUntil: '2026-11-20' }] });
    expect(expired.status).to.equal(406);
    expect(expired.body.detail).to.match(/expired on 2026-11-20/);
    const bad = await book(v, { externalId: 'lic-1', licenses: [{ validUntil: '2030-01-01' }] });
    expect(bad.status).to.equal(400);
    // valid through its last day
    const ok = await book(v, { externalId: 'lic-1', licenses: [{ assetClass: 'STEP', validUntil: '2026-11-21', number: 'DK-1', issuingCountry: 'DK' }] });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    expect(ok.body.state).to.equal('CONFIRMED');
    const r = await t.ctx.db.one(`SELECT licence_validated FROM rentals r JOIN tomp_bookings b ON b.rental_id = r.id WHERE b.id = $1`, [ok.body.id]);
    expect(r.licence_validated).to.equal(true);
    const noExpiry = await book(await insertTompVehicle(t.ctx.db, zoneId), { externalId: 'lic-2', licenses: [{ assetClass: 'STEP' }] });
    expect(noExpiry.status).to.equal(201);
  });

  it('postponed commit: the licence is checked when booking and carried to the COMMIT', async () => {
    const late = await insertMaasPartner(t.ctx.db, { postponedCommit: true });
    const v = await insertTompVehicle(t.ctx.db, zoneId);
    const send = (customer: Record<string, unknown>) =>
      api
        .post(`${P}/bookings/one-stop`)
        .set('X-Access-Token', late.key)
        .send({ from: { coordinates: { lng: v.lng, lat: v.lat } }, useAssets: [v.id], customer });
    const refused = await send({ externalId: 'p-1' });
    expect(refused.status).to.equal(406);
    expect(refused.body.type).to.equal('UserLicenceVerificationRequired');
    const pending = await send({ externalId: 'p-1', licenses: [{ assetClass: 'STEP', validUntil: '2030-01-01' }] });
    expect(pending.status, JSON.stringify(pending.body)).to.equal(201);
    expect(pending.body.state).to.equal('PENDING');
    const commit = await api.post(`${P}/bookings/${pending.body.id}/events`).set('X-Access-Token', late.key).send({ operation: 'COMMIT' });
    expect(commit.status, JSON.stringify(commit.body)).to.equal(200);
    expect(commit.body.state).to.equal('CONFIRMED');
  });

  it('`from` must be within the unlock distance of the vehicle; `radius` can only narrow it', async () => {
    await t.ctx.db.query(`UPDATE zones SET licence_verification_required = false WHERE id = $1`, [zoneId]);
    try {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      // about 30 m north of the vehicle
      const near = { id: v.id, lat: v.lat + 30 / 111_320, lng: v.lng };
      const narrow = await book(near, { externalId: 'r-1' }, { radius: 20 });
      expect(narrow.status).to.equal(406);
      expect(narrow.body.type).to.equal('UserTooFarFromVehicle');
      expect(narrow.body.detail).to.match(/beyond the requested radius of 20 m/);
      const far = await book({ id: v.id, lat: v.lat + 80 / 111_320, lng: v.lng }, { externalId: 'r-1' }, { radius: 500 });
      expect(far.status).to.equal(406);
      expect(far.body.type).to.equal('UserTooFarFromVehicle');
      const ok = await book(near, { externalId: 'r-1' }, { radius: 40 });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    } finally {
      await t.ctx.db.query(`UPDATE zones SET licence_verification_required = true WHERE id = $1`, [zoneId]);
    }
  });
});
