/**
 * Who may read which feed. A feed client has one role and a zone scope (null = every zone); the role
 * decides the feeds, the scope the zones. One table here, read by the token route, the file route,
 * the realtime routes, gbfs.json (which lists only what the caller may read) and the GBFS 2.2
 * publisher (one snapshot per distinct region scope).
 */
export type Role = 'city' | 'insurer' | 'gbfs' | 'data';
export const ROLES: readonly Role[] = ['city', 'insurer', 'gbfs', 'data'];

/** A readable thing: an MDS endpoint of a version, an insurance feed, or a GBFS file of a version. */
export type FeedAccess =
  | { family: 'mds'; version: '2.1' | '2.0' | '1.2' | '0.4'; endpoint: MdsEndpoint }
  | { family: 'insurance'; endpoint: 'trips' }
  | { family: 'gbfs'; version: '2.2' | '3.0'; file: string };

export type MdsEndpoint = 'trips' | 'events' | 'status_changes' | 'vehicles' | 'vehicles_status' | 'telemetry' | 'reports' | 'publications' | 'incidents';

const ALL_MDS: readonly MdsEndpoint[] = [
  'trips',
  'events',
  'status_changes',
  'vehicles',
  'vehicles_status',
  'telemetry',
  'reports',
  'publications',
  'incidents',
];

interface RoleRule {
  mds: readonly MdsEndpoint[];
  insurance: boolean;
  /** GBFS files readable (by name without .json); `gbfs`, `gbfs_versions` are always implied */
  gbfs: 'all' | readonly string[];
}

const RULES: Record<Role, RoleRule> = {
  // cities: every MDS feed of every version (2.0 only: telemetry, monthly reports, the publications index; 2.1: incidents), and GBFS
  city: { mds: ALL_MDS, insurance: false, gbfs: 'all' },
  insurer: { mds: [], insurance: true, gbfs: [] },
  // public data consumers: GBFS only
  gbfs: { mds: [], insurance: false, gbfs: 'all' },
  // research/data partners: realtime fleet state (MDS 2.0 vehicles and status) and GBFS
  data: { mds: ['vehicles', 'vehicles_status'], insurance: false, gbfs: 'all' },
};

export function canRead(role: Role, access: FeedAccess): boolean {
  const rule = RULES[role];
  switch (access.family) {
    case 'mds':
      return rule.mds.includes(access.endpoint) && (role === 'city' || access.version === '2.0');
    case 'insurance':
      return rule.insurance;
    case 'gbfs':
      if (rule.gbfs === 'all') return true;
      if (rule.gbfs.length === 0) return false;
      return access.file === 'gbfs' || access.file === 'gbfs_versions' || rule.gbfs.includes(access.file);
  }
}

export function hasGbfs(role: Role): boolean {
  const g = RULES[role].gbfs;
  return g === 'all' || g.length > 0;
}

/** Zone scope check: null scope means every zone. */
export function inScope(zones: readonly string[] | null, zoneId: string): boolean {
  return zones === null || zones.includes(zoneId);
}

/**
 * GBFS 2.2 is region-scoped: one snapshot per distinct (role, zone set). The scope id is safe as an
 * object-key segment: the role alone for every zone, else the role and a short hash of the zones.
 */
export function gbfsV2Scope(role: Role, zones: readonly string[] | null): string {
  if (zones === null) return role;
  const sorted = [...new Set(zones)].sort().join(',');
  let h = 0x811c9dc5;
  for (let i = 0; i < sorted.length; i++) h = Math.imul(h ^ sorted.charCodeAt(i), 0x01000193) >>> 0;
  return `${role}-${h.toString(16).padStart(8, '0')}`;
}
