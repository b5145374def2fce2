/**
 * Parking photo upload over HTTP with real JPEGs made by sharp: portrait, landscape, landscape stored
 * with EXIF orientation 6 (a portrait photo), wide-angle via EXIF FocalLengthIn35mmFormat, not a JPEG;
 * signatures, window, decisions.
 */
import { expect } from 'chai';
import request from 'supertest';
import sharp from 'sharp';
import { useTestContext } from './support/context.js';
import { buildApp } from '../api/app.js';
import {
  expectError,
  insertArea,
  insertPartner,
  insertUser,
  insertVehicle,
  insertZone,
  type PartnerFixture,
  type ZoneFixture,
} from './support/partner-fixtures.js';
import { startRental } from '../lib/domain/rentals/engine.js';
import { signPath } from '../api/partner/signed-urls.js';
import { checkPhoto } from '../api/partner/photo-checks.js';
import { expirePhotoWindows } from '../publisher/jobs/rentals.js';

async function jpeg(width: number, height: number, opts: { orientation?: number; focal35?: number } = {}): Promise<Buffer> {
  let img = sharp({ create: { width, height, channels: 3, background: { r: 90, g: 120, b: 60 } } }).jpeg({ quality: 80 });
  if (opts.focal35 !== undefined) img = img.withExif({ IFD2: { FocalLengthIn35mmFilm: String(opts.focal35) } });
  if (opts.orientation !== undefined) img = img.withMetadata({ orientation: opts.orientation });
  return img.toBuffer();
}

describe('parking photo', function () {
  const t = useTestContext({ now: '2026-06-01T09:00:00Z', config: { MAX_PHOTO_BYTES: '20000' } });
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let zone: ZoneFixture;
  const photos: Record<string, Buffer> = {};

  before(async () => {
    server = buildApp(t.ctx).callback();
    p = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db);
    photos.portrait = await jpeg(300, 400, { focal35: 26 });
    photos.landscape = await jpeg(400, 300);
    photos.rotated = await jpeg(400, 300, { orientation: 6 });
    photos.wide = await jpeg(300, 400, { focal35: 13 });
    photos.png = await sharp({ create: { width: 30, height: 40, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
    // a noisy portrait so the scan data is most of the file
    const noise = Buffer.from(Array.from({ length: 90 * 120 * 3 }, (_v, i) => (i * 7919) % 251));
    const full = await sharp(noise, { raw: { width: 90, height: 120, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer();
    photos.cut = full.subarray(0, Math.floor(full.length * 0.4));
    photos.headersOnly = headersOnly(full);
  });

  /** The JPEG's segments up to and including the start of scan, then end of image: valid headers, no image data. */
  function headersOnly(full: Buffer): Buffer {
    let i = 2;
    while (i < full.length) {
      const marker = full[i + 1];
      i += 2 + full.readUInt16BE(i + 2);
      if (marker === 0xda) break;
    }
    return Buffer.concat([full.subarray(0, i), Buffer.from([0xff, 0xd9])]);
  }

  /** Starts and ends a rental of a vehicle `eastM` east of the zone centre; returns its id and upload path. */
  async function endedRental(eastM = 0): Promise<{ id: string; path: string }> {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { eastM });
    const r = await startRental(t.ctx, { partnerId: p.id, userId: user, vehicleId: v.id, source: 'partner' });
    t.ctx.clock.advance(60_000);
    const res = await request(server).post(`/v1/rental/${r.id}/end`).set('X-Auth-Token', p.key).send({});
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const url = new URL(res.body.data[0].attributes.photoUploadURL);
    return { id: r.id, path: url.pathname + url.search };
  }
  const put = (path: string, body: Buffer, type = 'image/jpeg') => request(server).put(path).set('Content-Type', type).send(body);

  it('checks photos: portrait, EXIF-rotated, landscape, wide-angle, not a JPEG', async () => {
    expect((await checkPhoto(photos.portrait)).ok).to.equal(true);
    expect(await checkPhoto(photos.rotated)).to.deep.include({ ok: true, width: 300, height: 400 });
    expect(await checkPhoto(photos.landscape)).to.deep.include({ ok: false, reason: 'not-portrait' });
    expect(await checkPhoto(photos.wide)).to.deep.include({ ok: false, reason: 'wide-angle', focalLength35mm: 13 });
    expect(await checkPhoto(photos.png)).to.deep.equal({ ok: false, reason: 'not-jpeg' });
    expect(await checkPhoto(Buffer.from('hello'))).to.deep.equal({ ok: false, reason: 'not-jpeg' });
    expect(await checkPhoto(photos.cut)).to.deep.equal({ ok: false, reason: 'not-jpeg' });
    expect(await checkPhoto(photos.headersOnly)).to.deep.equal({ ok: false, reason: 'not-jpeg' });
  });

  it('a JPEG with headers but no or cut-off image data: 400 InvalidParkingPhoto, nothing recorded, window stays open', async () => {
    const r = await endedRental(150);
    expect(photos.headersOnly.length).to.be.below(1000);
    expectError(await put(r.path, photos.headersOnly), 400, 'InvalidParkingPhoto');
    expectError(await put(r.path, photos.cut), 400, 'InvalidParkingPhoto');
    expect((await t.ctx.db.one(`SELECT photo_decision FROM rentals WHERE id = $1`, [r.id])).photo_decision).to.equal(null);
    expect((await put(r.path, photos.portrait)).body).to.deep.equal({ decision: 'good-parking' });
  });

  it('GET /v1/rental/{id} and the user lists carry photoUploadURL while the window is open, after a retried end too', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { eastM: 450 });
    const r = await startRental(t.ctx, { partnerId: p.id, userId: user, vehicleId: v.id, source: 'partner' });
    const get = (path: string) => request(server).get(path).set('X-Auth-Token', p.key);
    expect((await get(`/v1/rental/${r.id}`)).body.data[0].attributes.photoUploadURL).to.equal(undefined);
    expect((await request(server).post(`/v1/rental/${r.id}/end`).set('X-Auth-Token', p.key).send({})).status).to.equal(200);
    // the end response was lost: the retry says RentalAlreadyEnded, the read still hands out the upload
    expectError(await request(server).post(`/v1/rental/${r.id}/end`).set('X-Auth-Token', p.key).send({}), 400, 'RentalAlreadyEnded');
    t.ctx.clock.advance(10 * 60_000);
    const read = await get(`/v1/rental/${r.id}`);
    const url: string = read.body.data[0].attributes.photoUploadURL;
    expect(url).to.be.a('string');
    const listed = (await get(`/v1/rental/user/${user}`)).body.data[0].attributes.photoUploadURL;
    expect(listed).to.equal(url);
    // another partner cannot read the rental at all
    const other = await insertPartner(t.ctx.db);
    expectError(await request(server).get(`/v1/rental/${r.id}`).set('X-Auth-Token', other.key), 404, 'RentalIDDoesNotExist');
    const u = new URL(url);
    expect((await put(u.pathname + u.search, photos.portrait)).body).to.deep.equal({ decision: 'good-parking' });
    t.ctx.clock.advance(21 * 60_000);
    expect((await get(`/v1/rental/${r.id}`)).body.data[0].attributes.photoUploadURL).to.equal(undefined);
  });

  it('good-parking for a portrait photo where parking is allowed, stored; a second upload is 409', async () => {
    const r = await endedRental();
    const res = await put(r.path, photos.portrait);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.equal({ decision: 'good-parking' });
    const row = await t.ctx.db.one<{ photo_key: string; photo_decision: string }>(`SELECT photo_key, photo_decision FROM rentals WHERE id = $1`, [r.id]);
    expect(row.photo_decision).to.equal('good-parking');
    expect((await t.ctx.store.head(row.photo_key))?.contentType).to.equal('image/jpeg');
    expectError(await put(r.path, photos.portrait), 409, 'ParkingPhotoAlreadyDecided');
  });

  it('an EXIF-rotated landscape is a portrait photo', async () => {
    const r = await endedRental(300);
    expect((await put(r.path, photos.rotated)).body).to.deep.equal({ decision: 'good-parking' });
  });

  it('bad-parking where the vehicle stands outside the permitted places (operator end in a no-parking area)', async () => {
    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { northM: 700 });
    await insertArea(t.ctx.db, zone, 'no-parking', { northM: 700, halfM: 20 });
    const r = await startRental(t.ctx, { partnerId: p.id, userId: user, vehicleId: v.id, source: 'partner' });
    const { endRental } = await import('../lib/domain/rentals/engine.js');
    const ended = await endRental(t.ctx, { rentalId: r.id, endState: 'ENDED_INTERNALLY' });
    const path = `/v1/rental/${r.id}/photo`;
    const signed = signPath(t.ctx.config.signingSecret, 'photo', path, new Date(ended.endedAt!.getTime() + 30 * 60_000));
    expect((await put(signed, photos.portrait)).body).to.deep.equal({ decision: 'bad-parking' });
  });

  it('landscape and wide-angle JPEGs: 422 ValidateParkingPhotoFailed, bad-photo recorded, replaceable', async () => {
    const r = await endedRental(600);
    const res1 = await put(r.path, photos.landscape);
    const e1 = expectError(res1, 422, 'ValidateParkingPhotoFailed');
    expect(e1.meta).to.deep.equal({ decision: 'bad-photo' });
    // the decision is where a client reads it, as on a successful upload
    expect(res1.body.decision).to.equal('bad-photo');
    expect((await t.ctx.db.one(`SELECT photo_decision FROM rentals WHERE id = $1`, [r.id])).photo_decision).to.equal('bad-photo');
    expectError(await put(r.path, photos.wide), 422, 'ValidateParkingPhotoFailed');
    expect((await put(r.path, photos.portrait)).body).to.deep.equal({ decision: 'good-parking' });
  });

  it('refuses wrong content type, non-JPEG bytes, empty and oversized bodies', async () => {
    const r = await endedRental(900);
    expectError(await put(r.path, photos.portrait, 'image/png'), 415, 'InvalidParkingPhoto');
    expectError(await put(r.path, photos.png), 400, 'InvalidParkingPhoto');
    expectError(await put(r.path, Buffer.alloc(0)), 400, 'InvalidParkingPhoto');
    expectError(await put(r.path, Buffer.alloc(30000, 1)), 413, 'InvalidParkingPhoto');
    expect((await t.ctx.db.one(`SELECT photo_decision FROM rentals WHERE id = $1`, [r.id])).photo_decision).to.equal(null);
  });

  it('refuses tampered signatures, expired windows and running rentals', async () => {
    const r = await endedRental(1200);
    expectError(await put(r.path.replace(/sig=[^&]+/, 'sig=abc'), photos.portrait), 403, 'ErrInvalidURLSignature');
    expectError(
      await put(
        r.path.replace(/expires=(\d+)/, (_m, d) => `expires=${Number(d) + 600}`),
        photos.portrait,
      ),
      403,
      'ErrInvalidURLSignature',
    );
    expectError(await put(r.path.split('?')[0], photos.portrait), 403, 'ErrInvalidURLSignature');
    // another rental's signature, or a receipt signature of this path, does not open the upload
    const other = await endedRental(1300);
    expectError(await put(other.path.replace(other.id, r.id), photos.portrait), 403, 'ErrInvalidURLSignature');
    const receiptSigned = signPath(t.ctx.config.signingSecret, 'receipt', `/v1/rental/${r.id}/photo`, new Date(t.ctx.clock.now().getTime() + 60_000));
    expectError(await put(receiptSigned, photos.portrait), 403, 'ErrInvalidURLSignature');

    const user = await insertUser(t.ctx.db, p.id);
    const v = await insertVehicle(t.ctx.db, zone, { eastM: 1400 });
    const running = await startRental(t.ctx, { partnerId: p.id, userId: user, vehicleId: v.id, source: 'partner' });
    const signed = signPath(t.ctx.config.signingSecret, 'photo', `/v1/rental/${running.id}/photo`, new Date(t.ctx.clock.now().getTime() + 60_000));
    expectError(await put(signed, photos.portrait), 409, 'ErrRentalIsNotEnded');

    t.ctx.clock.advance(31 * 60_000);
    expectError(await put(r.path, photos.portrait), 410, 'ParkingPhotoUploadWindowExpired');
    // no photo: the sweep decides bad-parking
    await expirePhotoWindows(t.ctx);
    expect((await t.ctx.db.one(`SELECT photo_decision FROM rentals WHERE id = $1`, [r.id])).photo_decision).to.equal('bad-parking');
  });
});
