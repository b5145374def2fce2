import { expect } from 'chai';
import { currentSleepWindow, openingHours, posix } from '../lib/feeds/gbfs/time.js';
import { rfc3339Utc } from '../lib/core/clock.js';
import { gbfsSnapshotRef } from '../lib/feeds/gbfs/files.js';
import { areaVehicleTypeIds } from '../lib/feeds/gbfs/geofencing.js';
import { priceDescription, zoneLanguages } from '../lib/feeds/gbfs/common.js';
import { toMajor } from '../lib/domain/money.js';
import type { GbfsArea, GbfsVehicleType } from '../lib/feeds/gbfs/model.js';

describe('GBFS helpers: time, names, texts', () => {
  it('formats 3.0 times as RFC 3339 in UTC with no fraction, 2.2 as POSIX seconds', () => {
    const d = new Date('2026-07-01T10:15:30.987Z');
    expect(rfc3339Utc(d)).to.equal('2026-07-01T10:15:30Z');
    expect(posix(d)).to.equal(1782900930);
  });

  it('finds the sleep window the zone is in, over midnight and on either side of it', () => {
    const w = [{ start: '22:00', end: '06:00' }];
    // 23:30 CET: started today 22:00, ends tomorrow 06:00
    expect(currentSleepWindow(w, 'Europe/Berlin', new Date('2026-11-21T22:30:00Z'))).to.deep.equal({
      start: new Date('2026-11-21T21:00:00Z'),
      end: new Date('2026-11-22T05:00:00Z'),
    });
    // 03:00 CET: started yesterday 22:00
    expect(currentSleepWindow(w, 'Europe/Berlin', new Date('2026-11-22T02:00:00Z'))).to.deep.equal({
      start: new Date('2026-11-21T21:00:00Z'),
      end: new Date('2026-11-22T05:00:00Z'),
    });
    expect(currentSleepWindow(w, 'Europe/Berlin', new Date('2026-11-22T05:00:00Z'))).to.equal(undefined);
    expect(currentSleepWindow([{ start: '01:00', end: '05:00' }], 'Europe/Berlin', new Date('2026-11-22T00:30:00Z'))).to.deep.equal({
      start: new Date('2026-11-22T00:00:00Z'),
      end: new Date('2026-11-22T04:00:00Z'),
    });
    expect(
      currentSleepWindow(
        [
          { start: 'x', end: '05:00' },
          { start: '03:00', end: '03:00' },
        ],
        'UTC',
        new Date('2026-11-22T03:30:00Z'),
      ),
    ).to.equal(undefined);
    // DST change night in Berlin (2026-03-29, 02:00 → 03:00): the window still ends at 06:00 local = 04:00Z
    expect(currentSleepWindow([{ start: '01:00', end: '06:00' }], 'Europe/Berlin', new Date('2026-03-29T02:00:00Z'))?.end).to.deep.equal(
      new Date('2026-03-29T04:00:00Z'),
    );
  });

  it('derives OSM opening hours from the sleep windows', () => {
    expect(openingHours([])).to.equal('24/7');
    expect(openingHours([{ start: '01:00', end: '05:00' }])).to.equal('Mo-Su 05:00-01:00');
    expect(openingHours([{ start: '22:00', end: '06:00' }])).to.equal('Mo-Su 06:00-22:00');
    expect(openingHours([{ start: '00:00', end: '24:00' }])).to.equal('Mo-Su off');
    expect(
      openingHours([
        { start: '12:00', end: '13:00' },
        { start: '23:00', end: '05:00' },
      ]),
    ).to.equal('Mo-Su 05:00-12:00,13:00-23:00');
  });

  it('names the snapshot the file route serves: 3.0 discovery per role, 2.2 per scope', () => {
    expect(gbfsSnapshotRef('3.0', 'berlin', 'gbfs', 'city')).to.deep.equal({
      version: '3.0',
      scope: 'berlin',
      file: 'gbfs.city',
      objectKey: 'gbfs/3.0/berlin/gbfs.city.json.gz',
    });
    expect(gbfsSnapshotRef('3.0', 'berlin', 'vehicle_status', 'city').objectKey).to.equal('gbfs/3.0/berlin/vehicle_status.json.gz');
    expect(gbfsSnapshotRef('2.2', 'gbfs', 'gbfs', 'gbfs')).to.deep.equal({
      version: '2.2',
      scope: 'gbfs',
      file: 'gbfs',
      objectKey: 'gbfs/2.2/gbfs/gbfs.json.gz',
    });
  });

  it('resolves area vehicle restrictions by form factor or type id', () => {
    const types = [
      { id: 'scoot', formFactor: 'scooter' },
      { id: 'ebike', formFactor: 'bicycle' },
    ] as GbfsVehicleType[];
    const area = (vehicleTypes: string[]) => ({ vehicleTypes }) as GbfsArea;
    expect(areaVehicleTypeIds(area([]), types)).to.equal(undefined);
    expect(areaVehicleTypeIds(area(['bicycle']), types)).to.deep.equal(['ebike']);
    expect(areaVehicleTypeIds(area(['scoot']), types)).to.deep.equal(['scoot']);
    expect(areaVehicleTypeIds(area(['car']), types)).to.deep.equal([]);
  });

  it('writes generated sentences in the zone language when it has them, else in English tagged en', () => {
    expect(priceDescription(100, 25, 'EUR', 'de')).to.deep.equal({ text: '1,00\u00a0€ zum Entsperren, dann 0,25\u00a0€ pro Minute', language: 'de' });
    expect(priceDescription(1000, 225, 'DKK', 'da').language).to.equal('da');
    expect(priceDescription(100, 25, 'EUR', 'fr').language).to.equal('en');
    expect(zoneLanguages('de')).to.deep.equal(['de']);
    expect(zoneLanguages('fr')).to.deep.equal(['fr', 'en']);
  });

  it('converts minor units by the currency digits', () => {
    expect(toMajor(150, 'EUR')).to.equal(1.5);
    expect(toMajor(150, 'JPY')).to.equal(150);
    expect(toMajor(1000, 'DKK')).to.equal(10);
  });
});
