/**
 * One shape per feed record (issue 27): every record the feeds emit has one JSON Schema (schemas/mds,
 * schemas/insurance), its TS type is derived from it, and the feeds' OpenAPI components are built
 * from the same object. Here: each record component is its schema (nested records by `$ref`), no
 * feed answer describes a record of its own beside them, and the declarations that build the MDS
 * records in JS and in SQL (lib/feeds/mds/shape.ts) write exactly the schema's members. That each
 * mapper's record validates against both its schema and its component: test/mappers.test.ts.
 */
import { expect } from 'chai';
import { oas, type Schema } from '../api/openapi/common.js';
import { FEED_RECORD_SCHEMAS, FEED_SCHEMAS } from '../api/openapi/records-feeds.js';
import { MDS_EVENT, MDS_TELEMETRY, MDS_TRIP, MDS_VEHICLE, MDS_VEHICLE_STATUS } from '../lib/feeds/mds/records.js';
import type { Shape } from '../lib/feeds/mds/shape.js';
import { compile } from '../lib/core/validate.js';
import { MdsEventSchema, MdsTelemetrySchema, MdsTripSchema, MdsVehicleSchema, MdsVehicleStatusSchema } from '../schemas/mds/v2.js';
import { describeSpecErrors, specOrSkip } from './support/specs.js';

const COMPONENT = '#/components/schemas/';
const RECORDS = Object.keys(FEED_RECORD_SCHEMAS) as (keyof typeof FEED_RECORD_SCHEMAS)[];
/** the components by any name, as a `$ref` names them */
const COMPONENTS: Record<string, Schema | undefined> = FEED_SCHEMAS;

/** A component with each `$ref` to another component replaced by that component, recursively. */
function inline(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(inline);
  if (!node || typeof node !== 'object') return node;
  const { $ref, ...rest } = node as Record<string, unknown>;
  if (typeof $ref === 'string') {
    expect($ref.startsWith(COMPONENT) && Object.keys(rest).length === 0, $ref).to.equal(true);
    const target = COMPONENTS[$ref.slice(COMPONENT.length)];
    expect(target, `${$ref} resolves`).to.not.equal(undefined);
    return inline(target);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, inline(v)]));
}

/** Every `$ref` target and every object member list (`properties`) under a node. */
function walk(node: unknown, refs: Set<string>, members: string[][]): void {
  if (Array.isArray(node)) node.forEach((n) => walk(n, refs, members));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (typeof o.$ref === 'string') refs.add(o.$ref.slice(COMPONENT.length));
    if (o.properties && typeof o.properties === 'object') members.push(Object.keys(o.properties));
    Object.values(o).forEach((v) => walk(v, refs, members));
  }
}

describe('feed records: one shape each', () => {
  it('each record component is its JSON Schema in the OpenAPI dialect, nested records by $ref', () => {
    expect(RECORDS).to.include.members([
      'MdsTrip',
      'MdsEvent',
      'MdsTelemetry',
      'MdsVehicle',
      'MdsVehicleStatus',
      'InsuranceTrip',
      'Trip12',
      'Trip04',
      'StatusChange12',
      'StatusChange04',
      'Vehicle12',
      'Vehicle04',
    ]);
    for (const name of RECORDS) {
      expect(FEED_SCHEMAS[name], name).to.not.equal(undefined);
      expect(inline(FEED_SCHEMAS[name]), name).to.deep.equal(oas(FEED_RECORD_SCHEMAS[name]));
    }
    const status = FEED_SCHEMAS.MdsVehicleStatus as { properties: Record<string, Schema> };
    expect(status.properties.last_event).to.deep.equal({ $ref: `${COMPONENT}MdsEvent` });
    expect(status.properties.last_telemetry).to.deep.equal({ $ref: `${COMPONENT}MdsTelemetry` });
  });

  it('the feed answers list record components and describe no record of their own', () => {
    const answers = Object.keys(FEED_SCHEMAS).filter((n) => /^(Mds|Insurance|Legacy)/.test(n) && !(n in FEED_RECORD_SCHEMAS));
    expect(answers).to.include.members([
      'MdsTrips',
      'MdsEvents',
      'MdsEventsRecent',
      'MdsTelemetryFile',
      'MdsVehicles',
      'MdsVehiclesStatus',
      'MdsPublications',
      'InsuranceTrips',
      'LegacyTrips',
      'LegacyStatusChanges',
      'LegacyVehicles',
    ]);
    const refs = new Set<string>();
    const members: string[][] = [];
    for (const name of answers) walk(COMPONENTS[name], refs, members);
    expect(
      [...refs].filter((r) => !(r in FEED_RECORD_SCHEMAS)),
      'answers refer only to records',
    ).to.deep.equal([]);
    for (const name of RECORDS) walk(FEED_SCHEMAS[name], refs, []);
    expect(
      RECORDS.filter((r) => !refs.has(r)),
      'every record is in an answer',
    ).to.deep.equal([]);
    // a hand-written copy of a record would show as an object with a record's id members
    const copies = members.filter((m) => m.some((k) => ['device_id', 'trip_id', 'event_id', 'telemetry_id'].includes(k)));
    expect(copies).to.deep.equal([]);
  });

  describe('the MDS record declarations (lib/feeds/mds/shape.ts) write the members of their schemas', () => {
    type ObjectSchema = { required: readonly string[]; properties: Record<string, unknown> };
    /** Members the declaration writes that the schema lacks, required ones it may leave out, and schema members it never writes. */
    function differences(shape: Shape, schema: ObjectSchema, at = ''): string[] {
      const out: string[] = [];
      for (const [key, m] of Object.entries(shape)) {
        if (!(key in schema.properties)) out.push(`${at}${key}: not in the schema`);
        else if (m.kind === 'object') out.push(...differences(m.shape, schema.properties[key] as ObjectSchema, `${at}${key}.`));
      }
      for (const key of schema.required) if (!shape[key] || shape[key].kind === 'optional') out.push(`${at}${key}: required, not always written`);
      for (const key of Object.keys(schema.properties)) if (!(key in shape)) out.push(`${at}${key}: never written`);
      return out;
    }

    const cases: [string, Shape, ObjectSchema, string[]][] = [
      // publication_time is added by the publisher to the hourly files' records (publisher/feeds/hourly.ts)
      ['trip', MDS_TRIP, MdsTripSchema, ['publication_time: never written']],
      ['event', MDS_EVENT, MdsEventSchema, ['publication_time: never written']],
      ['telemetry', MDS_TELEMETRY, MdsTelemetrySchema, []],
      ['vehicle', MDS_VEHICLE, MdsVehicleSchema, []],
      ['vehicle status', MDS_VEHICLE_STATUS, MdsVehicleStatusSchema, ['last_event.publication_time: never written']],
    ];
    for (const [name, shape, schema, expected] of cases) {
      it(name, () => expect(differences(shape, schema)).to.deep.equal(expected));
    }

    it('the comparison sees a missing, an extra and an optional required member', () => {
      const schema = { required: ['a', 'b'], properties: { a: {}, b: {}, c: {} } };
      const shape = { a: { kind: 'provider' }, b: { kind: 'optional', member: { kind: 'int', col: 'b' } }, d: { kind: 'provider' } } as unknown as Shape;
      expect(differences(shape, schema)).to.deep.equal(['d: not in the schema', 'b: required, not always written', 'c: never written']);
    });
  });

  it('telemetry journey_id is a UUID or null, as in the official model', function () {
    const point = {
      telemetry_id: 'cccccccc-1111-4222-8333-444455556666',
      device_id: '0b0b0b0b-1111-4222-8333-444455556666',
      provider_id: '7c1f8d1e-4b7a-4f3e-9a51-2f6f4a8c9b10',
      timestamp: Date.UTC(2026, 10, 21, 9),
      location: { lat: 52.5, lng: 13.4 },
      trip_ids: null,
    };
    const ours = compile(MdsTelemetrySchema);
    const official = specOrSkip(this, 'mds/2.0/telemetry.json');
    for (const [journey_id, valid] of [
      [null, true],
      ['dddddddd-1111-4222-8333-444455556666', true],
      ['not-a-uuid', false],
    ] as const) {
      expect(ours({ ...point, journey_id }), String(journey_id)).to.equal(valid);
      expect(official({ version: '2.0.0', telemetry: [{ ...point, journey_id }] }), `${journey_id} ${describeSpecErrors(official)}`).to.equal(valid);
    }
  });
});
