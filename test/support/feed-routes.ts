/**
 * The feed routes of both hosts with the roles that may read them, for the tests that walk every
 * route with every credential (test/feeds-auth.test.ts: tokens; test/feeds-keys.test.ts: API keys).
 * Their files are published for HOUR, their realtime windows end at NOW.
 */
import type { Role } from '../../lib/feeds/roles.js';

export const NOW = Date.parse('2026-11-21T10:30:00Z');
export const HOUR = '2026-11-21T08';
const V12 = 'application/vnd.mds+json;version=1.2';

export interface Route {
  name: string;
  host: 'main' | 'legacy';
  method: 'get' | 'post';
  path: (zone: string) => string;
  accept?: string;
  roles: Role[];
  /** false: not zone-scoped in the path (GBFS 2.2 is scoped by the token) */
  zoned: boolean;
  /** the official MDS schema the 200 body must satisfy */
  spec?: string;
}

export const ROUTES: Route[] = [
  {
    name: 'MDS trips',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/trips?end_time=${HOUR}`,
    roles: ['city'],
    zoned: true,
    spec: '2.0/micromobility/trips',
  },
  {
    name: 'MDS historical events',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/events/historical?event_time=${HOUR}`,
    roles: ['city'],
    zoned: true,
    spec: '2.0/micromobility/events_historical',
  },
  {
    name: 'MDS recent events',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/events/recent?start_time=${NOW - 3600_000}&end_time=${NOW}`,
    roles: ['city'],
    zoned: true,
    spec: '2.0/micromobility/events_recent',
  },
  {
    name: 'MDS vehicles',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/vehicles`,
    roles: ['city', 'data'],
    zoned: true,
    spec: '2.0/micromobility/vehicles',
  },
  {
    name: 'MDS vehicle status',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/mds/${z}/vehicles/status`,
    roles: ['city', 'data'],
    zoned: true,
    spec: '2.0/micromobility/vehicles_status',
  },
  {
    name: 'GBFS 3.0 file',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/gbfs/${z}/vehicle_status.json`,
    roles: ['city', 'gbfs', 'data'],
    zoned: true,
  },
  {
    name: 'GBFS 3.0 discovery',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/gbfs/${z}/gbfs.json`,
    roles: ['city', 'gbfs', 'data'],
    zoned: true,
  },
  { name: 'GBFS 2.2 file', host: 'main', method: 'get', path: () => `/gbfs/v2/free_bike_status.json`, roles: ['city', 'gbfs', 'data'], zoned: false },
  {
    name: 'insurance trips (bearer)',
    host: 'main',
    method: 'get',
    path: (z) => `/v1/partner-apis/insurance/${z}/trips?end_time=${HOUR}`,
    roles: ['insurer'],
    zoned: true,
  },
  {
    name: 'legacy trips',
    host: 'legacy',
    method: 'get',
    path: (z) => `/en/${z}/trips?end_time=${HOUR}`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/trips',
  },
  {
    name: 'legacy status changes',
    host: 'legacy',
    method: 'get',
    path: (z) => `/en/${z}/status_changes?event_time=${HOUR}`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/status_changes',
  },
  {
    name: 'legacy events',
    host: 'legacy',
    method: 'post',
    path: (z) => `/en/${z}/events?start_time=${NOW - 3600_000}&end_time=${NOW}`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/events',
  },
  {
    name: 'legacy vehicles',
    host: 'legacy',
    method: 'get',
    path: (z) => `/en/${z}/vehicles`,
    accept: V12,
    roles: ['city'],
    zoned: true,
    spec: '1.2.0/vehicles',
  },
];
