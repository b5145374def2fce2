/**
 * Record mappers: MDS 2.0, legacy 1.2 / 0.4 (with the vocabulary mapping) and insurance, each checked
 * field by field, against our schema of the record and its component in the feeds' OpenAPI document
 * (test/feed-record-shapes.test.ts: the two are one), and against the official schema of its version
 * (skipped when specs are absent).
 */
import { expect } from 'chai';
import { Readable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { toInsuranceTrip, averageSpeedKmh } from '../publisher/feeds/insurance.js';
import { jsonEnvelope, mds20Head, insuranceHead } from '../lib/feeds/mds/envelope.js';
import {
  toStatusChange04,
  toStatusChange12,
  toTrip04,
  toTrip12,
  toVehicle04,
  toVehicle12,
  toLegacy04Event,
  toLegacy12Vocabulary,
} from '../lib/feeds/mds/legacy.js';
import { toMdsEvent, toMdsTelemetry, toMdsTrip, toMdsVehicle, toMdsVehicleStatus } from '../lib/feeds/mds/records.js';
import { type EventRow, type TripRow, type VehicleRow, type VehicleStatusRow } from '../lib/feeds/mds/rows.js';
import { compile } from '../lib/core/validate.js';
import { FEED_RECORD_SCHEMAS, FEED_SCHEMAS } from '../api/openapi/records-feeds.js';
import { describeSpecErrors, specOrSkip } from './support/specs.js';

const P = { providerId: '7c1f8d1e-4b7a-4f3e-9a51-2f6f4a8c9b10', providerName: 'Demo Mobility' };
const DEV = '0b0b0b0b-1111-4222-8333-444455556666';
const TRIP = 'aaaaaaaa-1111-4222-8333-444455556666';
const T0 = Date.UTC(2026, 10, 21, 9, 10);

const trip: TripRow = {
  trip_id: TRIP,
  device_id: DEV,
  vehicle_code: 'AB12',
  license_plate: 'B-AB12',
  license_plate_id: 'PL-7',
  form_factor: 'scooter',
  propulsion_type: 'electric',
  trip_type: 'maas',
  start_ms: T0,
  end_ms: T0 + 600_000,
  start_lat: 52.5,
  start_lng: 13.4,
  end_lat: 52.51,
  end_lng: 13.41,
  distance_m: 2500,
  duration_s: 600,
  is_group_ride: true,
  ride_type: 'group-host',
  user_ride_count: 7,
  city: 'Berlin',
  country: 'DE',
  recorded_ms: T0 + 600_000,
};

type State = EventRow['vehicle_state'];

function event(state: State, types: string[], tripIds: string[] | null = null, battery: number | null = 55): EventRow {
  return {
    event_id: 'eeeeeeee-1111-4222-8333-444455556666',
    device_id: DEV,
    event_types: types,
    vehicle_state: state,
    ts_ms: T0,
    lat: 52.5,
    lng: 13.4,
    battery_percent: battery,
    trip_ids: tripIds,
    vehicle_code: 'AB12',
    form_factor: 'scooter',
    propulsion_type: 'electric',
    recorded_ms: T0 + 1000,
  };
}

function status(state: State, types: string[], tripIds: string[] | null = null): VehicleStatusRow {
  // a vehicle status row has the event's columns but not when the event was recorded
  const { recorded_ms: _, ...last } = event(state, types, tripIds);
  return {
    ...last,
    telemetry_id: 'cccccccc-1111-4222-8333-444455556666',
    telemetry_ms: T0 + 5000,
    telemetry_lat: 52.6,
    telemetry_lng: 13.5,
    telemetry_battery_percent: 54,
    telemetry_trip_id: tripIds?.[0] ?? null,
    telemetry_incident_ids: null,
    vehicle_battery_percent: 54,
    vehicle_lat: 52.6,
    vehicle_lng: 13.5,
  };
}

/** The feeds' OpenAPI components as one 2020-12 document, for `$ref`s to `#/components/schemas/…`. */
const DOC_ID = 'https://feeds.test/openapi.json';
const documented = new Ajv2020({ strict: false, allErrors: true });
documented.addSchema({ $id: DOC_ID, components: { schemas: FEED_SCHEMAS } });

/** The record validates against our schema of it (what the publisher checks) and its documented component. */
function expectValid(name: keyof typeof FEED_RECORD_SCHEMAS, record: unknown): void {
  const ours = compile(FEED_RECORD_SCHEMAS[name]);
  expect(ours(record), `${name} schema: ${JSON.stringify(ours.errors)} ${JSON.stringify(record)}`).to.equal(true);
  const doc = documented.getSchema(`${DOC_ID}#/components/schemas/${name}`)!;
  expect(doc(record), `${name} component: ${JSON.stringify(doc.errors)} ${JSON.stringify(record)}`).to.equal(true);
}

async function text(r: Readable): Promise<string> {
  let s = '';
  for await (const c of r) s += c.toString();
  return s;
}

describe('MDS 2.0 mappers', () => {
  it('maps a trip: ids, ms times, meters, seconds, rider trip_type', function () {
    const t = toMdsTrip(trip, P);
    expect(t).to.deep.equal({
      provider_id: P.providerId,
      device_id: DEV,
      trip_id: TRIP,
      start_time: T0,
      end_time: T0 + 600_000,
      start_location: { lat: 52.5, lng: 13.4 },
      end_location: { lat: 52.51, lng: 13.41 },
      duration: 600,
      distance: 2500,
      accessibility_attributes: [],
      trip_type: ['rider'],
    });
    expectValid('MdsTrip', t);
    const v = specOrSkip(this, 'mds/2.0/micromobility/trips.json');
    const body = { ...mds20Head(T0), trips: [t] };
    expect(v(body), describeSpecErrors(v)).to.equal(true);
  });

  it('maps events of every state and validates them against the official schema', function () {
    const rows = [
      event('on_trip', ['trip_start'], [TRIP]),
      event('available', ['trip_end'], [TRIP]),
      event('non_operational', ['battery_low']),
      event('reserved', ['reservation_start']),
      event('removed', ['rebalance_pick_up']),
      event('non_contactable', ['comms_lost'], null, null),
      event('missing', ['not_located']),
      event('elsewhere', ['trip_leave_jurisdiction'], [TRIP]),
    ];
    const events = rows.map((r) => toMdsEvent(r, P));
    expect(events[0]).to.include({ vehicle_state: 'on_trip', timestamp: T0, battery_percent: 55 });
    expect(events[0].trip_ids).to.deep.equal([TRIP]);
    expect(events[3].trip_ids).to.deep.equal([]);
    expect(events[5]).to.not.have.property('battery_percent');
    for (const e of events) expectValid('MdsEvent', e);
    const v = specOrSkip(this, 'mds/2.0/micromobility/events_historical.json');
    expect(v({ ...mds20Head(T0), events, links: {} }), describeSpecErrors(v)).to.equal(true);
  });

  it('maps vehicles and vehicle status (last event + last telemetry)', function () {
    const vrow: VehicleRow = {
      device_id: DEV,
      vehicle_code: 'AB12',
      form_factor: 'scooter',
      propulsion_type: 'electric',
      max_speed_kph: 20,
      make: 'Acme',
      model: 'S1',
    };
    const veh = toMdsVehicle(vrow, P);
    expect(veh).to.include({ vehicle_id: 'AB12', vehicle_type: 'scooter_standing', maximum_speed: 20 });
    expect(veh.propulsion_types).to.deep.equal(['electric']);
    expect(toMdsVehicle({ ...vrow, form_factor: 'bicycle' }, P).vehicle_type).to.equal('bicycle');
    const st = toMdsVehicleStatus(status('on_trip', ['trip_start'], [TRIP]), P);
    expect(st.last_event.event_types).to.deep.equal(['trip_start']);
    expect(st.last_telemetry).to.include({ timestamp: T0 + 5000, journey_id: null, battery_percent: 54 });
    expect(st.last_telemetry.trip_ids).to.deep.equal([TRIP]);
    const free = toMdsTelemetry({ ...status('available', ['trip_end'], null), recorded_ms: T0 + 6000 }, P);
    expect(free.trip_ids).to.equal(null);
    // MDS 2.1 incident_ids: only on a point an incident names, and the official 2.0 model still admits the record
    expect(free).to.not.have.property('incident_ids');
    const incident = 'dddddddd-1111-4222-8333-444455556666';
    const marked = toMdsVehicleStatus({ ...status('on_trip', ['trip_start'], [TRIP]), telemetry_incident_ids: [incident] }, P);
    expect(marked.last_telemetry.incident_ids).to.deep.equal([incident]);
    expectValid('MdsVehicleStatus', marked);
    expectValid('MdsVehicle', veh);
    expectValid('MdsVehicleStatus', st);
    expectValid('MdsTelemetry', st.last_telemetry);
    expectValid('MdsTelemetry', free);
    const vs = specOrSkip(this, 'mds/2.0/micromobility/vehicles_status.json');
    // records only: the official 2.0 vehicles responses carry last_updated/ttl as plain integers
    expect(vs({ version: '2.0.0', last_updated: T0, ttl: 0, vehicles_status: [st, marked] }), describeSpecErrors(vs)).to.equal(true);
    const vv = specOrSkip(this, 'mds/2.0/micromobility/vehicles.json');
    expect(vv({ version: '2.0.0', last_updated: T0, ttl: 0, vehicles: [veh] }), describeSpecErrors(vv)).to.equal(true);
  });
});

describe('legacy vocabulary', () => {
  it('1.2: non_contactable and missing become unknown; not_located becomes missing', () => {
    expect(toLegacy12Vocabulary('non_contactable', ['comms_lost'])).to.deep.equal({ vehicle_state: 'unknown', event_types: ['comms_lost'] });
    expect(toLegacy12Vocabulary('missing', ['not_located'])).to.deep.equal({ vehicle_state: 'unknown', event_types: ['missing'] });
    expect(toLegacy12Vocabulary('on_trip', ['changed_geographies'])).to.deep.equal({ vehicle_state: 'on_trip', event_types: ['unspecified'] });
    expect(toLegacy12Vocabulary('available', ['trip_end', 'battery_charged'])).to.deep.equal({
      vehicle_state: 'available',
      event_types: ['trip_end', 'battery_charged'],
    });
  });

  it('1.2: adds unspecified when no mapped event is valid for the state', () => {
    expect(toLegacy12Vocabulary('non_operational', ['trip_end', 'charging_start']).event_types).to.deep.equal(['trip_end', 'unspecified']);
  });

  it('0.4: trip start/end are user pick-up/drop-off; other states by reason', () => {
    const cases: [string, string[], boolean, string | undefined, string | undefined][] = [
      ['on_trip', ['trip_start'], true, 'reserved', 'user_pick_up'],
      ['on_trip', ['trip_start'], false, undefined, undefined],
      ['on_trip', ['changed_geographies'], true, undefined, undefined],
      ['available', ['trip_end'], true, 'available', 'user_drop_off'],
      ['available', ['trip_end'], false, 'available', 'service_start'],
      ['available', ['provider_drop_off'], false, 'available', 'rebalance_drop_off'],
      ['available', ['agency_drop_off'], false, 'available', 'agency_drop_off'],
      ['available', ['battery_charged'], false, 'available', 'maintenance_drop_off'],
      ['available', ['on_hours'], false, 'available', 'service_start'],
      ['reserved', ['reservation_start'], false, undefined, undefined],
      ['reserved', ['reservation_start'], true, 'reserved', 'user_pick_up'],
      ['non_operational', ['battery_low'], false, 'unavailable', 'low_battery'],
      ['non_operational', ['trip_end', 'battery_low'], true, 'unavailable', 'low_battery'],
      ['non_operational', ['maintenance'], false, 'unavailable', 'maintenance'],
      ['non_operational', ['off_hours'], false, 'removed', 'service_end'],
      ['removed', ['rebalance_pick_up'], false, 'removed', 'rebalance_pick_up'],
      ['removed', ['maintenance_pick_up'], false, 'removed', 'maintenance_pick_up'],
      ['removed', ['compliance_pick_up'], false, 'removed', 'agency_pick_up'],
      ['removed', ['decommissioned'], false, 'removed', 'service_end'],
      ['non_contactable', ['comms_lost'], false, 'unavailable', 'maintenance'],
      ['missing', ['not_located'], false, 'unavailable', 'maintenance'],
      ['elsewhere', ['trip_leave_jurisdiction'], true, 'removed', 'service_end'],
    ];
    for (const [state, types, hasTrip, type, reason] of cases) {
      const got = toLegacy04Event(state, types, hasTrip);
      expect(got?.event_type, `${state} ${types.join(',')}`).to.equal(type);
      expect(got?.event_type_reason, `${state} ${types.join(',')}`).to.equal(reason);
    }
  });
});

describe('legacy mappers', () => {
  const all = [
    event('on_trip', ['trip_start'], [TRIP]),
    event('available', ['trip_end'], [TRIP]),
    event('non_operational', ['battery_low']),
    event('reserved', ['reservation_start']),
    event('removed', ['rebalance_pick_up']),
    event('non_contactable', ['comms_lost'], null, null),
    event('missing', ['not_located']),
    event('elsewhere', ['trip_leave_jurisdiction'], [TRIP]),
    event('available', ['provider_drop_off']),
    event('on_trip', ['changed_geographies'], [TRIP]),
    event('non_operational', ['off_hours']),
  ];

  it('1.2 status changes: battery as a fraction, one trip_id, GeoJSON point, official schema', function () {
    const sc = all.map((r) => toStatusChange12(r, P));
    expect(sc[0]).to.include({
      vehicle_state: 'on_trip',
      trip_id: TRIP,
      battery_pct: 0.55,
      vehicle_id: 'AB12',
      vehicle_type: 'scooter',
      provider_name: 'Demo Mobility',
      event_time: T0,
    });
    expect(sc[0].event_location).to.deep.equal({ type: 'Feature', properties: { timestamp: T0 }, geometry: { type: 'Point', coordinates: [13.4, 52.5] } });
    expect(sc[5]).to.include({ vehicle_state: 'unknown', battery_pct: null });
    expect(sc[3]).to.not.have.property('trip_id');
    for (const s of sc) expectValid('StatusChange12', s);
    const v = specOrSkip(this, 'mds/1.2.0/status_changes.json');
    expect(v({ version: '1.2.0', data: { status_changes: sc } }), describeSpecErrors(v)).to.equal(true);
  });

  it('0.4 status changes: associated_trip on pick-up/drop-off, no record without an equivalent, official schema', function () {
    const sc = all.map((r) => toStatusChange04(r, P));
    expect(sc[0]).to.include({ event_type: 'reserved', event_type_reason: 'user_pick_up', associated_trip: TRIP });
    expect(sc[1]).to.include({ event_type: 'available', event_type_reason: 'user_drop_off', associated_trip: TRIP });
    expect(sc[3]).to.equal(undefined); // reservation without a trip
    expect(sc[9]).to.equal(undefined); // position update during a trip
    expect(sc[2]!.propulsion_type).to.deep.equal(['electric']);
    const kept = sc.filter((s) => s !== undefined);
    for (const s of kept) expectValid('StatusChange04', s);
    const v = specOrSkip(this, 'mds/0.4.1/status_changes.json');
    expect(v({ version: '0.4.1', data: { status_changes: kept } }), describeSpecErrors(v)).to.equal(true);
  });

  it('1.2 and 0.4 trips: start/end route, accuracy, seconds and meters', function () {
    const t12 = toTrip12(trip, P);
    expect(t12).to.include({ trip_duration: 600, trip_distance: 2500, vehicle_id: 'AB12', start_time: T0, end_time: T0 + 600_000 });
    expect(t12.route.features).to.have.length(2);
    expect(t12.route.features[1].geometry.coordinates).to.deep.equal([13.41, 52.51]);
    const t04 = toTrip04(trip, P);
    expect(t04).to.not.have.property('propulsion_types');
    expect(t04.propulsion_type).to.deep.equal(['electric']);
    expectValid('Trip12', t12);
    expectValid('Trip04', t04);
    const v12 = specOrSkip(this, 'mds/1.2.0/trips.json');
    expect(v12({ version: '1.2.0', data: { trips: [t12] } }), describeSpecErrors(v12)).to.equal(true);
    const v04 = specOrSkip(this, 'mds/0.4.1/trips.json');
    expect(v04({ version: '0.4.1', data: { trips: [t04] } }), describeSpecErrors(v04)).to.equal(true);
  });

  it('legacy vehicles: only available / unavailable / reserved vehicles; official schemas', function () {
    const rows = [
      status('available', ['trip_end'], [TRIP]),
      status('on_trip', ['trip_start'], [TRIP]),
      status('reserved', ['reservation_start']),
      status('non_operational', ['off_hours']),
      status('missing', ['not_located']),
      status('removed', ['decommissioned']),
      status('elsewhere', ['trip_leave_jurisdiction'], [TRIP]),
    ];
    const v12 = rows.map((r) => toVehicle12(r, P));
    const v04 = rows.map((r) => toVehicle04(r, P));
    expect(v12.slice(5)).to.deep.equal([undefined, undefined]);
    expect(v04.slice(5)).to.deep.equal([undefined, undefined]);
    expect(v04.slice(0, 5).map((v) => v!.last_event_type)).to.deep.equal(['available', 'reserved', 'reserved', 'unavailable', 'unavailable']);
    expect(v12[4]!.last_vehicle_state).to.equal('unknown');
    expect(v12[0]!.current_location!.geometry.coordinates).to.deep.equal([13.5, 52.6]);
    expect(v12[1]).to.not.have.property('current_location'); // on a trip
    for (const v of v12.slice(0, 5)) expectValid('Vehicle12', v);
    for (const v of v04.slice(0, 5)) expectValid('Vehicle04', v);
    const s12 = specOrSkip(this, 'mds/1.2.0/vehicles.json');
    expect(s12({ version: '1.2.0', last_updated: T0, ttl: 0, data: { vehicles: v12.slice(0, 5) } }), describeSpecErrors(s12)).to.equal(true);
    const s04 = specOrSkip(this, 'mds/0.4.1/vehicles.json');
    expect(s04({ version: '0.4.1', last_updated: T0, ttl: 0, data: { vehicles: v04.slice(0, 5) } }), describeSpecErrors(s04)).to.equal(true);
  });
});

describe('insurance mapper', () => {
  it('carries every field of requirement §2.6', () => {
    const t = toInsuranceTrip(trip, P);
    expect(t).to.deep.equal({
      trip_id: TRIP,
      device_id: DEV,
      provider_id: P.providerId,
      accessibility_attributes: [],
      city: 'Berlin',
      country: 'DE',
      distance: 2500,
      duration: 600,
      average_ride_speed: 15,
      start_location: { lat: 52.5, lng: 13.4 },
      end_location: { lat: 52.51, lng: 13.41 },
      start_time: T0,
      end_time: T0 + 600_000,
      is_group_ride: true,
      license_plate: 'B-AB12',
      license_plate_id: 'PL-7',
      ride_type: 'group-host',
      trip_type: ['maas'],
      user_ride_count: 7,
      vehicle_short_id: 'AB12',
    });
    expectValid('InsuranceTrip', t);
  });

  it('average speed in km/h with two decimals, 0 for a zero-length ride', () => {
    expect(averageSpeedKmh(1000, 300)).to.equal(12);
    expect(averageSpeedKmh(1234, 457)).to.equal(9.72);
    expect(averageSpeedKmh(10, 0)).to.equal(0);
  });
});

describe('jsonEnvelope', () => {
  /** an async record source, as a database cursor is: each record arrives after an await */
  async function* gen(n: number) {
    for (let i = 0; i < n; i++) {
      await Promise.resolve();
      yield { i };
    }
  }

  it('writes the MDS 2.0 envelope with records in order', async () => {
    const s = await text(jsonEnvelope(mds20Head(5), 'trips', gen(3)));
    expect(s).to.equal('{"version":"2.0.0","last_updated":{"last_updated":5},"ttl":{"ttl":0},"trips":[{"i":0},{"i":1},{"i":2}]}');
  });

  it('writes a tail, nested legacy arrays, the insurance head and skips undefined records', async () => {
    expect(await text(jsonEnvelope(mds20Head(5), 'events', [], { links: {} }))).to.equal(
      '{"version":"2.0.0","last_updated":{"last_updated":5},"ttl":{"ttl":0},"events":[],"links":{}}',
    );
    expect(await text(jsonEnvelope({ version: '1.2.0' }, 'data.trips', [{ a: 1 }, undefined, { a: 2 }]))).to.equal(
      '{"version":"1.2.0","data":{"trips":[{"a":1},{"a":2}]}}',
    );
    expect(JSON.parse(await text(jsonEnvelope(insuranceHead(7), 'trips', gen(1))))).to.deep.equal({ last_updated: 7, version: '2.0.0', trips: [{ i: 0 }] });
    expect(await text(jsonEnvelope({}, 'x', []))).to.equal('{"x":[]}');
  });

  it('streams many records as valid JSON', async () => {
    const parsed = JSON.parse(await text(jsonEnvelope({ version: '2.0.0' }, 'trips', gen(20000))));
    expect(parsed.trips).to.have.length(20000);
    expect(parsed.trips[19999]).to.deep.equal({ i: 19999 });
  });

  it('propagates an error of the record source', async () => {
    async function* bad() {
      yield { a: 1 };
      // the cursor's next read fails
      await Promise.reject(new Error('cursor died'));
    }
    let err: unknown;
    try {
      await text(jsonEnvelope({}, 'x', bad()));
    } catch (e) {
      err = e;
    }
    expect((err as Error)?.message).to.equal('cursor died');
  });
});
