/**
 * The demo world: two zones in real cities with realistic areas, two vehicle types and prices.
 * Coordinates are real places ([lng, lat], WGS 84); operations areas are convex so that a straight
 * ride between two points inside stays inside.
 */
import { polygon, rect, type MultiPolygonCoords } from '../sim/geo.js';
import type { KeyScope } from '../../lib/domain/credentials/api-keys.js';

export type AreaType = 'operations' | 'no-parking' | 'parking-spot' | 'slow-zone' | 'no-riding' | 'incentive' | 'free-floating';

export interface DemoArea {
  name: string;
  type: AreaType;
  geom: MultiPolygonCoords;
  capacity?: number;
  maxSpeedKph?: number;
  vehicleTypes?: string[];
}

export interface DemoZone {
  id: string;
  name: string;
  city: string;
  country: string;
  timezone: string;
  currency: string;
  vatRate: number;
  language: string;
  parkingMode: 'free-floating' | 'parking-spot';
  licenceVerificationRequired: boolean;
  maxSpeedKph: number;
  reducedSpeedKph: number;
  minRequiredRides: number;
  sleepWindows: Array<{ start: string; end: string }>;
  supportEmail: string;
  boundary: MultiPolygonCoords;
  areas: DemoArea[];
  /** minor units, VAT included */
  pricing: Record<string, { startPrice: number; pricePerMinute: number }>;
  /** licence plate of the n-th vehicle of the zone (a plain function: handed on to the fleet) */
  plate: (n: number, letters: string) => string;
}

export interface DemoVehicleType {
  id: string;
  formFactor: 'scooter' | 'bicycle';
  propulsionType: 'electric' | 'electric_assist' | 'human';
  name: string;
  make: string;
  model: string;
  color: string;
  maxRangeMeters: number;
  maxSpeedKph: number;
  ratedPowerW: number;
  /** share of the fleet */
  share: number;
}

export const VEHICLE_TYPES: DemoVehicleType[] = [
  {
    id: 'scooter',
    formFactor: 'scooter',
    propulsionType: 'electric',
    name: 'E-Scooter',
    make: 'Voltra',
    model: 'S2 Pro',
    color: 'teal',
    maxRangeMeters: 45000,
    maxSpeedKph: 20,
    ratedPowerW: 350,
    share: 0.7,
  },
  {
    id: 'bicycle',
    formFactor: 'bicycle',
    propulsionType: 'electric_assist',
    name: 'E-Bike',
    make: 'Voltra',
    model: 'B1 City',
    color: 'teal',
    maxRangeMeters: 70000,
    maxSpeedKph: 25,
    ratedPowerW: 250,
    share: 0.3,
  },
];

const BERLIN: DemoZone = {
  id: 'berlin',
  name: 'Berlin',
  city: 'Berlin',
  country: 'DE',
  timezone: 'Europe/Berlin',
  currency: 'EUR',
  vatRate: 0.19,
  language: 'de',
  parkingMode: 'free-floating',
  licenceVerificationRequired: false,
  maxSpeedKph: 20,
  reducedSpeedKph: 15,
  minRequiredRides: 3,
  sleepWindows: [],
  supportEmail: 'support-berlin@example.com',
  boundary: rect(13.405, 52.52, 0.105, 0.05),
  areas: [
    {
      name: 'Berlin inner city',
      type: 'operations',
      geom: polygon([
        [13.33, 52.5],
        [13.36, 52.48],
        [13.45, 52.48],
        [13.48, 52.5],
        [13.48, 52.545],
        [13.45, 52.56],
        [13.36, 52.56],
        [13.33, 52.545],
      ]),
    },
    {
      name: 'Berlin free-floating',
      type: 'free-floating',
      geom: polygon([
        [13.33, 52.5],
        [13.36, 52.48],
        [13.45, 52.48],
        [13.48, 52.5],
        [13.48, 52.545],
        [13.45, 52.56],
        [13.36, 52.56],
        [13.33, 52.545],
      ]),
    },
    { name: 'Pariser Platz', type: 'no-parking', geom: rect(13.3777, 52.5163, 0.0025, 0.0012) },
    { name: 'Museumsinsel', type: 'no-parking', geom: rect(13.3985, 52.519, 0.003, 0.0025) },
    { name: 'Alexanderplatz station forecourt', type: 'no-parking', geom: rect(13.4132, 52.5219, 0.0015, 0.001) },
    { name: 'Memorial to the Murdered Jews of Europe', type: 'no-parking', geom: rect(13.3789, 52.5139, 0.0012, 0.001) },
    { name: 'Großer Tiergarten', type: 'no-riding', geom: rect(13.35, 52.5145, 0.012, 0.004) },
    { name: 'Mauerpark', type: 'no-riding', geom: rect(13.4025, 52.543, 0.002, 0.004), vehicleTypes: ['scooter'] },
    { name: 'Hackescher Markt', type: 'slow-zone', geom: rect(13.4023, 52.5233, 0.002, 0.0012), maxSpeedKph: 10 },
    { name: 'Friedrichstraße', type: 'slow-zone', geom: rect(13.389, 52.513, 0.0008, 0.008), maxSpeedKph: 12 },
    { name: 'Simon-Dach-Kiez', type: 'slow-zone', geom: rect(13.457, 52.51, 0.003, 0.002), maxSpeedKph: 10 },
    { name: 'Berlin Hauptbahnhof', type: 'incentive', geom: rect(13.3694, 52.5251, 0.002, 0.0012) },
    { name: 'Ostbahnhof', type: 'incentive', geom: rect(13.4348, 52.5108, 0.002, 0.0012) },
    { name: 'Warschauer Straße', type: 'incentive', geom: rect(13.449, 52.5058, 0.0015, 0.001) },
  ],
  pricing: { scooter: { startPrice: 100, pricePerMinute: 25 }, bicycle: { startPrice: 100, pricePerMinute: 19 } },
  // German insurance plates of small vehicles: three digits and three letters
  plate: (n, letters) => `${String(100 + (n % 900)).padStart(3, '0')}${letters}`,
};

const spot = (name: string, lng: number, lat: number, capacity: number): DemoArea => ({
  name,
  type: 'parking-spot',
  geom: rect(lng, lat, 0.0004, 0.0002),
  capacity,
});

const COPENHAGEN: DemoZone = {
  id: 'copenhagen',
  name: 'København',
  city: 'Copenhagen',
  country: 'DK',
  timezone: 'Europe/Copenhagen',
  currency: 'DKK',
  vatRate: 0.25,
  language: 'da',
  parkingMode: 'parking-spot',
  licenceVerificationRequired: true,
  maxSpeedKph: 20,
  reducedSpeedKph: 12,
  minRequiredRides: 3,
  sleepWindows: [{ start: '01:00', end: '05:00' }],
  supportEmail: 'support-copenhagen@example.com',
  boundary: rect(12.57, 55.68, 0.07, 0.04),
  areas: [
    {
      name: 'Indre By and surroundings',
      type: 'operations',
      geom: polygon([
        [12.535, 55.66],
        [12.555, 55.652],
        [12.6, 55.655],
        [12.615, 55.67],
        [12.605, 55.692],
        [12.575, 55.7],
        [12.545, 55.695],
        [12.53, 55.68],
      ]),
    },
    spot('Rådhuspladsen', 12.5694, 55.6759, 20),
    spot('Nyhavn', 12.589, 55.6799, 15),
    spot('Kongens Nytorv', 12.5855, 55.6809, 15),
    spot('Nørreport', 12.5716, 55.6834, 25),
    spot('Christianshavns Torv', 12.5919, 55.6728, 12),
    spot('Vesterport', 12.5626, 55.6755, 12),
    spot('København H', 12.565, 55.6725, 25),
    spot('Israels Plads', 12.569, 55.684, 10),
    spot('Østerport', 12.587, 55.6925, 15),
    spot('Islands Brygge', 12.578, 55.664, 12),
    { name: 'Kongens Have', type: 'no-riding', geom: rect(12.578, 55.6855, 0.0025, 0.0012) },
    { name: 'Tivoli', type: 'no-riding', geom: rect(12.5681, 55.6737, 0.002, 0.0008) },
    { name: 'Strøget', type: 'slow-zone', geom: rect(12.577, 55.6785, 0.0045, 0.0006), maxSpeedKph: 8 },
    { name: 'Nyhavn quay', type: 'slow-zone', geom: rect(12.5905, 55.68, 0.002, 0.0004), maxSpeedKph: 10 },
    { name: 'Nørreport station', type: 'incentive', geom: rect(12.5716, 55.6834, 0.0015, 0.0008) },
  ],
  pricing: { scooter: { startPrice: 1000, pricePerMinute: 275 }, bicycle: { startPrice: 1000, pricePerMinute: 225 } },
  plate: (n, letters) => `DK${letters.slice(0, 2)}${String(n % 100000).padStart(5, '0')}`,
};

export const DEMO_ZONES: DemoZone[] = [BERLIN, COPENHAGEN];

export interface DemoPartner {
  name: string;
  kind: 'rental' | 'maas' | 'insurer' | 'operator';
  tripType: 'rider' | 'maas' | 'operator';
  /** key, scope */
  keys: Array<{ key: string; scope: KeyScope }>;
  /** users created for the partner; prefix of their external ids and e-mail domain */
  users?: { count: number; prefix: string; domain: string };
}

export const DEMO_PARTNERS: DemoPartner[] = [
  {
    name: 'Demo Partner App',
    kind: 'rental',
    tripType: 'rider',
    keys: [{ key: 'demo-partner-key', scope: 'partner' }],
    users: { count: 60, prefix: 'dpa', domain: 'partner-app.example' },
  },
  {
    name: 'Demo Mobility App',
    kind: 'rental',
    tripType: 'operator',
    keys: [{ key: 'demo-mobility-key', scope: 'partner' }],
    users: { count: 40, prefix: 'dma', domain: 'mobility-app.example' },
  },
  {
    name: 'Demo MaaS',
    kind: 'maas',
    tripType: 'maas',
    keys: [{ key: 'demo-maas-key', scope: 'tomp' }],
    users: { count: 30, prefix: 'maas', domain: 'maas.example' },
  },
  { name: 'Demo Insurance', kind: 'insurer', tripType: 'rider', keys: [{ key: 'demo-insurer-key', scope: 'insurance' }] },
  // the operator's own staff: the console at /console (api/console/)
  { name: 'Demo Operations', kind: 'operator', tripType: 'operator', keys: [{ key: 'demo-ops-key', scope: 'ops' }] },
];

export const DEMO_FEED_CLIENTS = [
  { clientId: 'demo-city', secret: 'demo-city-secret', role: 'city' as const, label: 'demo city (every demo zone)' },
  { clientId: 'demo-gbfs', secret: 'demo-gbfs-secret', role: 'gbfs' as const, label: 'demo GBFS consumer' },
  // the insurance feed's deprecated OAuth path (a bearer token of role insurer), beside its X-Access-Token key
  { clientId: 'demo-insurer', secret: 'demo-insurer-secret', role: 'insurer' as const, label: 'demo insurer (deprecated OAuth path of the insurance feed)' },
];
