/**
 * The streaming sources the realtime routes use (vehicles, vehicle status, recent events, legacy
 * vehicles) on rows we insert, and the time-hour parser.
 */
import { expect } from 'chai';
import { sql } from '../lib/core/sql/typed.js';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTelemetry, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { toVehicle04 } from '../lib/feeds/mds/legacy.js';
import { toMdsVehicleStatus } from '../lib/feeds/mds/records.js';
import { streamEventsOfHour, streamLegacyVehicles, streamTrips, streamVehicleStatus, streamVehicles } from '../lib/feeds/mds/sources.js';
import { formatHour, parseHour } from '../lib/feeds/hours.js';
import { latestDueHour } from '../publisher/schedule.js';

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('time-hour', () => {
  it('accepts real UTC hours only', () => {
    expect(parseHour('2026-11-05T07')?.toISOString()).to.equal('2026-11-05T07:00:00.000Z'); // November (the spec pattern rejects it)
    expect(parseHour('2024-02-29T23')?.toISOString()).to.equal('2024-02-29T23:00:00.000Z');
    for (const bad of [
      '2026-02-29T00',
      '2026-04-31T10',
      '2026-11-05T24',
      '2026-13-01T00',
      '2026-11-5T07',
      '2026-11-05 07',
      'x2026-11-05T07',
      '2026-11-05T07:00',
      '',
    ])
      expect(parseHour(bad), bad).to.equal(undefined);
    expect(formatHour(new Date('2026-11-05T07:59:59Z'))).to.equal('2026-11-05T07');
    // an hour is due once closed for the lateness (publisher/schedule.ts)
    expect(formatHour(latestDueHour(new Date('2026-11-05T08:04:59Z'), 300))).to.equal('2026-11-05T06');
    expect(formatHour(latestDueHour(new Date('2026-11-05T08:05:00Z'), 300))).to.equal('2026-11-05T07');
  });
});

describe('streaming sources', () => {
  const t = useTestContext({ now: '2026-11-21T12:00:00Z' });
  let zone: string;
  let a: { id: string; code: string };
  let b: { id: string; code: string };
  let c: { id: string; code: string };

  before(async () => {
    const db = t.ctx.db;
    zone = await feedZone(db);
    a = await feedVehicle(db, zone);
    b = await feedVehicle(db, zone);
    c = await feedVehicle(db, zone); // no events yet: no MDS state
    await feedEvent(db, { deviceId: a.id, zoneId: zone, ts: new Date('2026-11-21T09:00:00Z'), eventTypes: ['provider_drop_off'], state: 'available' });
    await feedEvent(db, { deviceId: a.id, zoneId: zone, ts: new Date('2026-11-21T10:00:00Z'), eventTypes: ['battery_low'], state: 'non_operational' });
    await feedTelemetry(db, { deviceId: a.id, zoneId: zone, ts: new Date('2026-11-21T10:01:00Z') });
    await feedEvent(db, { deviceId: b.id, zoneId: zone, ts: new Date('2026-11-21T09:30:00Z'), eventTypes: ['decommissioned'], state: 'removed' });
  });

  it('vehicles: every vehicle of the zone, or one device', async () => {
    expect((await all(streamVehicles(t.ctx.db, zone))).map((v) => v.device_id).sort()).to.deep.equal([a.id, b.id, c.id].sort());
    const one = await all(streamVehicles(t.ctx.db, zone, b.id));
    expect(one.map((v) => v.vehicle_code)).to.deep.equal([b.code]);
    expect(await all(streamVehicles(t.ctx.db, 'other-zone', b.id))).to.deep.equal([]);
  });

  it('vehicle status: last event and last telemetry; synthetic telemetry when none was reported', async () => {
    const rows = await all(streamVehicleStatus(t.ctx.db, zone, new Date('2026-11-21T10:30:00Z')));
    expect(rows.map((r) => r.device_id).sort()).to.deep.equal([a.id, b.id].sort());
    const sa = toMdsVehicleStatus(
      rows.find((r) => r.device_id === a.id)!,
      t.ctx.config,
    );
    expect(sa.last_event).to.include({ vehicle_state: 'non_operational', timestamp: Date.parse('2026-11-21T10:00:00Z') });
    expect(sa.last_telemetry).to.include({ timestamp: Date.parse('2026-11-21T10:01:00Z'), battery_percent: 66 });
    const sb = toMdsVehicleStatus(
      rows.find((r) => r.device_id === b.id)!,
      t.ctx.config,
    );
    expect(sb.last_telemetry.telemetry_id).to.match(/^[0-9a-f-]{36}$/);
    const again = toMdsVehicleStatus((await all(streamVehicleStatus(t.ctx.db, zone, new Date('2026-11-21T10:30:00Z'), b.id)))[0], t.ctx.config);
    expect(again.last_telemetry.telemetry_id).to.equal(sb.last_telemetry.telemetry_id);
  });

  it('legacy vehicles leave out removed vehicles', async () => {
    const rows = await all(streamLegacyVehicles(t.ctx.db, zone));
    expect(rows.map((r) => r.device_id)).to.deep.equal([a.id]);
    expect(toVehicle04(rows[0], t.ctx.config)).to.include({ last_event_type: 'unavailable', last_event_type_reason: 'low_battery' });
  });

  it('events by [from, to) and by hour; trips of an empty hour', async () => {
    const win = await t.ctx.db.many(sql('MdsEventsPage'), [
      zone,
      new Date('2026-11-21T09:00:00Z'),
      new Date('2026-11-21T10:00:00Z'),
      0,
      '00000000-0000-0000-0000-000000000000',
      Number.MAX_SAFE_INTEGER,
      100,
      0,
    ]);
    expect(win.map((e) => e.event_types[0])).to.deep.equal(['provider_drop_off', 'decommissioned']);
    const hour = await all(streamEventsOfHour(t.ctx.db, zone, parseHour('2026-11-21T10')!));
    expect(hour.map((e) => e.event_types)).to.deep.equal([['battery_low']]);
    expect(await all(streamTrips(t.ctx.db, zone, parseHour('2026-11-21T10')!))).to.deep.equal([]);
  });

  it('stopping a stream early returns its connection to a usable state', async () => {
    for (let i = 0; i < 40; i++) {
      for await (const _row of streamVehicles(t.ctx.db, zone)) break;
    }
    expect((await t.ctx.db.one('SELECT 1 AS ok')).ok).to.equal(1);
  });
});
