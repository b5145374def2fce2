/**
 * How each hourly file is rendered: the source query, the record mapper, our schema for the records
 * and the envelope around them. The official-schema check of the same files is in the tests.
 */
import type { ValidateFunction } from 'ajv';
import { compile } from '../../lib/validate.js';
import { q, type NamedQuery } from '../../lib/db.js';
import type { HourlyFeed } from '../../lib/feeds/publications.js';
import type { EventRow, Provider, TripRow } from '../../lib/feeds/mds/rows.js';
import { toMdsEvent, toMdsTrip } from '../../lib/feeds/mds/records.js';
import { toStatusChange04, toStatusChange12, toTrip04, toTrip12 } from '../../lib/feeds/mds/legacy.js';
import { insuranceHead, mds20Head } from '../../lib/feeds/mds/envelope.js';
import { toInsuranceTrip } from '../../lib/feeds/insurance/records.js';
import { MdsEventSchema, MdsEventsHeadSchema, MdsTripSchema, MdsTripsHeadSchema } from '../../schemas/mds/v2.js';
import { LegacyHeadSchema, StatusChange04Schema, StatusChange12Schema, Trip04Schema, Trip12Schema } from '../../schemas/mds/legacy.js';
import { InsuranceHeadSchema, InsuranceTripSchema } from '../../schemas/insurance/trips.js';

export interface Rendering {
  rowsQuery: NamedQuery;
  statsQuery: NamedQuery;
  map: (row: any, p: Provider) => object | undefined;
  record: ValidateFunction;
  head: (lastUpdatedMs: number) => object;
  headSchema: ValidateFunction;
  arrayKey: string;
  tail?: object;
}

const trips = () => ({ rowsQuery: q('MdsTripsOfHour'), statsQuery: q('PubTripStats') });
const events = () => ({ rowsQuery: q('MdsEventsOfHour'), statsQuery: q('PubEventStats') });

export function renderingOf(f: HourlyFeed): Rendering {
  switch (f.id) {
    case 'mds-2.0-trips':
      return { ...trips(), map: (r: TripRow, p) => toMdsTrip(r, p), record: compile(MdsTripSchema), head: (ms) => mds20Head(ms), headSchema: compile(MdsTripsHeadSchema), arrayKey: 'trips' };
    case 'mds-2.0-events':
      return {
        ...events(), map: (r: EventRow, p) => toMdsEvent(r, p), record: compile(MdsEventSchema), head: (ms) => mds20Head(ms), headSchema: compile(MdsEventsHeadSchema),
        arrayKey: 'events', tail: { links: {} },
      };
    case 'mds-1.2-trips':
      return { ...trips(), map: (r: TripRow, p) => toTrip12(r, p), record: compile(Trip12Schema), head: () => ({ version: '1.2.0' }), headSchema: compile(LegacyHeadSchema), arrayKey: 'data.trips' };
    case 'mds-1.2-status_changes':
      return { ...events(), map: (r: EventRow, p) => toStatusChange12(r, p), record: compile(StatusChange12Schema), head: () => ({ version: '1.2.0' }), headSchema: compile(LegacyHeadSchema), arrayKey: 'data.status_changes' };
    case 'mds-0.4-trips':
      return { ...trips(), map: (r: TripRow, p) => toTrip04(r, p), record: compile(Trip04Schema), head: () => ({ version: '0.4.1' }), headSchema: compile(LegacyHeadSchema), arrayKey: 'data.trips' };
    case 'mds-0.4-status_changes':
      return { ...events(), map: (r: EventRow, p) => toStatusChange04(r, p), record: compile(StatusChange04Schema), head: () => ({ version: '0.4.1' }), headSchema: compile(LegacyHeadSchema), arrayKey: 'data.status_changes' };
    case 'insurance-2.0-trips':
      return { ...trips(), map: (r: TripRow, p) => toInsuranceTrip(r, p), record: compile(InsuranceTripSchema), head: (ms) => insuranceHead(ms), headSchema: compile(InsuranceHeadSchema), arrayKey: 'trips' };
    default:
      throw new Error(`no rendering for feed ${f.id}`);
  }
}
