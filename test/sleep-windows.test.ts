/**
 * One sleep-window grammar (schemas/common.ts LOCAL_TIME_SCHEMA): the zone file accepts exactly the
 * times the rental engine reads (lib/domain/zones.ts localTimeMinutes), and the engine, GBFS
 * (lib/feeds/gbfs/time.ts) and the simulator (ops/sim/model.ts) put a window at the same instants.
 */
import { expect } from 'chai';
import { compile } from '../lib/core/validate.js';
import { isSleeping, localTimeMinutes } from '../lib/domain/zones.js';
import { currentSleepWindow } from '../lib/feeds/gbfs/time.js';
import { ZONE_PROPERTIES_SCHEMA } from '../ops/admin/zone-file.js';
import { sleepIntervals, type ZoneModel } from '../ops/sim/model.js';

const zoneFile = compile(ZONE_PROPERTIES_SCHEMA.properties.sleep_windows);
const TZ = 'Europe/Berlin';

describe('one sleep-window grammar', () => {
  const accepted = ['0:00', '00:00', '1:00', '01:00', '9:05', '12:30', '23:59', '24:00'];
  const refused = ['24:01', '25:00', '1:99', '12:60', '12:5', ':30', '123:00', '12:00:00', ' 1:00', '24:00 ', '', '-1:00'];

  it('the zone file accepts a time exactly when the engine reads it', () => {
    for (const t of accepted) {
      expect(zoneFile([{ start: t, end: '06:00' }]), `zone file, ${t}`).to.equal(true);
      expect(localTimeMinutes(t), `engine, ${t}`).to.be.a('number');
    }
    for (const t of refused) {
      expect(zoneFile([{ start: t, end: '06:00' }]), `zone file, ${JSON.stringify(t)}`).to.equal(false);
      expect(localTimeMinutes(t), `engine, ${JSON.stringify(t)}`).to.equal(undefined);
    }
    expect(localTimeMinutes('1:00')).to.equal(60);
    expect(localTimeMinutes('24:00')).to.equal(24 * 60);
  });

  it('the engine, GBFS and the simulator put a window ending at 24:00 at the same instants', () => {
    const windows = [{ start: '22:00', end: '24:00' }];
    // 2026-11-21 23:30 in Berlin (UTC+1)
    const inside = new Date('2026-11-21T22:30:00Z');
    expect(isSleeping({ timezone: TZ, sleepWindows: windows }, inside)).to.equal(true);
    expect(isSleeping({ timezone: TZ, sleepWindows: windows }, new Date('2026-11-21T23:00:00Z'))).to.equal(false);
    const gbfs = currentSleepWindow(windows, TZ, inside);
    expect(gbfs).to.deep.equal({ start: new Date('2026-11-21T21:00:00Z'), end: new Date('2026-11-21T23:00:00Z') });
    const sim = sleepIntervals({ timezone: TZ, sleepWindows: windows } as ZoneModel, new Date('2026-11-21T00:00:00Z'), new Date('2026-11-22T00:00:00Z'));
    expect(sim.map(([s, e]) => [new Date(s), new Date(e)])).to.deep.include([gbfs!.start, gbfs!.end]);
  });

  it('a one-digit hour and a window over midnight read alike everywhere', () => {
    const windows = [{ start: '23:00', end: '1:00' }];
    const at = new Date('2026-11-21T23:30:00Z'); // 00:30 in Berlin
    expect(isSleeping({ timezone: TZ, sleepWindows: windows }, at)).to.equal(true);
    const gbfs = currentSleepWindow(windows, TZ, at)!;
    expect(gbfs).to.deep.equal({ start: new Date('2026-11-21T22:00:00Z'), end: new Date('2026-11-22T00:00:00Z') });
    const sim = sleepIntervals({ timezone: TZ, sleepWindows: windows } as ZoneModel, new Date('2026-11-21T00:00:00Z'), new Date('2026-11-22T12:00:00Z'));
    expect(sim.map(([s, e]) => [new Date(s), new Date(e)])).to.deep.include([gbfs.start, gbfs.end]);
  });
});
