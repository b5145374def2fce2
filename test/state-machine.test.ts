import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import {
  EVENT_TYPES_BY_STATE,
  InvalidTransitionError,
  isValidTransition,
  MDS_STATES,
  nextState,
  targets,
  TRANSITIONS,
  type MdsState,
} from '../lib/domain/fleet/state-machine.js';
import { recordEvent } from '../lib/domain/fleet/events.js';
import { recordTelemetry } from '../ops/sim/telemetry.js';
import { SPECS_DIR } from '../lib/core/paths.js';
import { useTestContext } from './support/context.js';
import { insertVehicle, insertZone } from './support/fleet-fixtures.js';

describe('MDS 2.0 state machine', () => {
  it('follows the documented transitions', () => {
    const cases: Array<[MdsState, string[], MdsState]> = [
      ['removed', ['provider_drop_off'], 'available'],
      ['removed', ['agency_drop_off'], 'available'],
      ['available', ['trip_start'], 'on_trip'],
      ['on_trip', ['trip_end'], 'available'],
      ['on_trip', ['trip_cancel'], 'available'],
      ['available', ['reservation_start'], 'reserved'],
      ['reserved', ['reservation_cancel'], 'available'],
      ['reserved', ['trip_start'], 'on_trip'],
      ['available', ['battery_low'], 'non_operational'],
      ['available', ['maintenance'], 'non_operational'],
      ['available', ['off_hours'], 'non_operational'],
      ['available', ['system_suspend'], 'non_operational'],
      ['non_operational', ['battery_charged'], 'available'],
      ['non_operational', ['maintenance'], 'available'],
      ['non_operational', ['on_hours'], 'available'],
      ['non_operational', ['system_resume'], 'available'],
      ['available', ['rebalance_pick_up'], 'removed'],
      ['non_operational', ['maintenance_pick_up'], 'removed'],
      ['available', ['compliance_pick_up'], 'removed'],
      ['non_operational', ['decommissioned'], 'removed'],
      ['on_trip', ['comms_lost'], 'non_contactable'],
      ['removed', ['comms_lost'], 'non_contactable'],
      ['non_contactable', ['comms_restored'], 'available'],
      ['non_contactable', ['not_located'], 'missing'],
      ['missing', ['located'], 'available'],
      ['on_trip', ['trip_leave_jurisdiction'], 'elsewhere'],
      ['elsewhere', ['trip_enter_jurisdiction'], 'on_trip'],
    ];
    for (const [from, types, to] of cases) {
      expect(nextState(from, types), `${from} ${types.join(',')}`).to.equal(to);
      expect(isValidTransition(from, types, to), `${from} ${types.join(',')} ${to}`).to.equal(true);
    }
  });

  it('rejects illegal transitions', () => {
    expect(nextState('removed', ['trip_start'])).to.equal(undefined);
    expect(nextState('on_trip', ['battery_low'])).to.equal(undefined);
    expect(nextState('on_trip', ['rebalance_pick_up'])).to.equal(undefined);
    expect(nextState('available', ['trip_end'])).to.equal(undefined);
    expect(nextState('non_contactable', ['comms_lost'])).to.equal(undefined);
    expect(nextState('available', [])).to.equal(undefined);
    expect(nextState('available', ['no_such_event'])).to.equal(undefined);
    expect(isValidTransition('available', ['trip_start'], 'available')).to.equal(false);
  });

  it('restores a non_contactable vehicle to the state family it was in', () => {
    for (const to of ['available', 'elsewhere', 'non_operational', 'on_trip', 'removed', 'reserved'] as MdsState[]) {
      expect(isValidTransition('non_contactable', ['comms_restored'], to), to).to.equal(true);
      expect(isValidTransition('missing', ['located'], to), to).to.equal(true);
    }
    expect(isValidTransition('non_contactable', ['comms_restored'], 'missing')).to.equal(false);
    expect(targets('non_contactable', 'comms_restored')[0]).to.equal('available');
  });

  it('walks multi-type events but only when every type is allowed into the final state (event.yaml items.enum)', () => {
    // allowed by the walk, but trip_end is not a valid event type for non_operational in event.yaml
    expect(isValidTransition('on_trip', ['trip_end', 'battery_low'], 'non_operational')).to.equal(false);
    expect(isValidTransition('non_contactable', ['comms_restored', 'unspecified'], 'non_operational')).to.equal(true);
    expect(isValidTransition('on_trip', ['trip_end', 'trip_start'], 'on_trip')).to.equal(false);
  });

  it('every table row ends in a state whose event.yaml enum allows the event type', () => {
    for (const t of TRANSITIONS) expect(EVENT_TYPES_BY_STATE[t.to].has(t.event), `${t.event} → ${t.to}`).to.equal(true);
  });

  it('matches the official event.yaml enums', function () {
    const file = join(SPECS_DIR, 'mds/2.0/openapi/models/modes/micromobility/event.yaml');
    if (!existsSync(file)) {
      console.warn(`    skipped: ${file} not found (specs absent)`);
      return this.skip();
    }
    const doc = YAML.parse(readFileSync(file, 'utf8')) as {
      oneOf: Array<{ properties: { vehicle_state: { const: string }; event_types: { items: { enum: string[] } } } }>;
    };
    const official = new Map(doc.oneOf.map((o) => [o.properties.vehicle_state.const, new Set(o.properties.event_types.items.enum)]));
    expect([...official.keys()].sort()).to.deep.equal([...MDS_STATES].sort());
    for (const s of MDS_STATES) expect([...EVENT_TYPES_BY_STATE[s]].sort(), s).to.deep.equal([...official.get(s)!].sort());
  });
});

describe('recordEvent / recordTelemetry', () => {
  const t = useTestContext();
  let zone: string;
  before(async () => {
    zone = await insertZone(t.ctx.db);
  });

  const loc = { lat: 52.52, lng: 13.405 };

  it('writes the event and moves the vehicle state', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    const ts = new Date('2026-03-01T10:00:00Z');
    const id = await recordEvent(t.ctx.db, {
      deviceId: v,
      zoneId: zone,
      eventTypes: ['provider_drop_off'],
      vehicleState: 'available',
      ts,
      location: loc,
      batteryPercent: 90,
    });
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    const row = await t.ctx.db.one(
      `SELECT e.vehicle_state, e.event_types, e.battery_percent, v.mds_state, ST_X(e.location) AS lng
                                      FROM events e JOIN vehicles v ON v.id = e.device_id WHERE e.event_id = $1`,
      [id],
    );
    expect(row).to.deep.equal({ vehicle_state: 'available', event_types: ['provider_drop_off'], battery_percent: 90, mds_state: 'available', lng: 13.405 });
  });

  it('rejects an illegal transition and leaves no trace', async () => {
    const v = await insertVehicle(t.ctx.db, zone);
    let err: unknown;
    try {
      await recordEvent(t.ctx.db, {
        deviceId: v,
        zoneId: zone,
        eventTypes: ['trip_start'],
        vehicleState: 'on_trip',
        ts: new Date(),
        location: loc,
        batteryPercent: 50,
        tripIds: ['0b9e4e0e-8f7e-4c57-9d3f-2a1d1f0e0a01'],
      });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(InvalidTransitionError);
    const { count } = await t.ctx.db.one(`SELECT count(*)::int AS count FROM events WHERE device_id = $1`, [v]);
    expect(count).to.equal(0);
    expect((await t.ctx.db.one(`SELECT mds_state FROM vehicles WHERE id = $1`, [v])).mds_state).to.equal('removed');
  });

  it('requires trip ids on trip events', async () => {
    const v = await insertVehicle(t.ctx.db, zone, { mdsState: 'available' });
    let err: unknown;
    try {
      await recordEvent(t.ctx.db, {
        deviceId: v,
        zoneId: zone,
        eventTypes: ['trip_start'],
        vehicleState: 'on_trip',
        ts: new Date(),
        location: loc,
        batteryPercent: 50,
      });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(InvalidTransitionError);
  });

  it('serialises concurrent state changes on one vehicle: only one trip_start wins', async () => {
    const v = await insertVehicle(t.ctx.db, zone, { mdsState: 'available' });
    const attempts = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        recordEvent(t.ctx.db, {
          deviceId: v,
          zoneId: zone,
          eventTypes: ['trip_start'],
          vehicleState: 'on_trip',
          ts: new Date(),
          location: loc,
          batteryPercent: 50,
          tripIds: [`0b9e4e0e-8f7e-4c57-9d3f-2a1d1f0e0a0${i}`],
        }),
      ),
    );
    expect(attempts.filter((a) => a.status === 'fulfilled')).to.have.length(1);
    expect(attempts.filter((a) => a.status === 'rejected' && a.reason instanceof InvalidTransitionError)).to.have.length(4);
  });

  it('records telemetry and moves the vehicle; last_moved_at only for moves over 5 m', async () => {
    const v = await insertVehicle(t.ctx.db, zone, { mdsState: 'available' });
    const t1 = new Date('2026-03-01T10:00:00Z');
    const t2 = new Date('2026-03-01T10:00:30Z');
    const t3 = new Date('2026-03-01T10:01:00Z');
    await recordTelemetry(t.ctx.db, { deviceId: v, zoneId: zone, ts: t1, location: { lat: 52.521, lng: 13.405 }, batteryPercent: 70 });
    await recordTelemetry(t.ctx.db, { deviceId: v, zoneId: zone, ts: t2, location: { lat: 52.52101, lng: 13.405 }, batteryPercent: 69 }); // ~1 m
    const row = await t.ctx.db.one<{ battery_percent: number; last_seen_at: Date; last_moved_at: Date; lat: number }>(
      `SELECT battery_percent, last_seen_at, last_moved_at, ST_Y(location) AS lat FROM vehicles WHERE id = $1`,
      [v],
    );
    expect(row.battery_percent).to.equal(69);
    expect(row.lat).to.equal(52.52101);
    expect(row.last_seen_at.toISOString()).to.equal(t2.toISOString());
    expect(row.last_moved_at.toISOString()).to.equal(t1.toISOString());
    await recordTelemetry(t.ctx.db, { deviceId: v, zoneId: zone, ts: t3, location: { lat: 52.523, lng: 13.405 }, batteryPercent: 68, tripId: null });
    const moved = await t.ctx.db.one<{ last_moved_at: Date }>(`SELECT last_moved_at FROM vehicles WHERE id = $1`, [v]);
    expect(moved.last_moved_at.toISOString()).to.equal(t3.toISOString());
    const { count } = await t.ctx.db.one(`SELECT count(*)::int AS count FROM telemetry WHERE device_id = $1`, [v]);
    expect(count).to.equal(3);
  });
});
