/**
 * A zone's city Policy source, registered by the ops CLI (`ops policy add`) and the operator console
 * alike: the one check of what a source may be, and the compliance view both show
 * (docs/city-policy.md). The publisher reads the sources (publisher/policy/).
 */
import type { Queryable } from '../../core/db.js';
import { sql, type RowOf } from '../../core/sql/typed.js';
import { seal } from '../../core/seal.js';

/** The purpose a source's secret is sealed for (lib/core/seal.ts). */
export const POLICY_SECRET_PURPOSE = 'city-policy-source';

export const POLICY_AUTH_TYPES = ['none', 'bearer', 'oauth'] as const;
export type PolicyAuthType = (typeof POLICY_AUTH_TYPES)[number];

export interface PolicySourceInput {
  zone: string;
  policyUrl: string;
  geographyUrl: string;
  auth: PolicyAuthType;
  /** bearer: the token; oauth: the client secret */
  secret?: string;
  tokenUrl?: string;
  clientId?: string;
  scope?: string;
}

export class PolicySourceError extends Error {
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

function httpUrl(value: string | undefined, field: string): string {
  let u: URL;
  try {
    u = new URL(value ?? '');
  } catch {
    throw new PolicySourceError(`${field} must be an absolute http(s) URL`, field);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new PolicySourceError(`${field} must be an http(s) URL`, field);
  return u.toString();
}

/** Registers (or replaces) the zone's source; the next minute's read takes it in full. */
export async function savePolicySource(db: Queryable, signingSecret: string, input: PolicySourceInput, now: Date): Promise<{ inserted: boolean }> {
  if (!(await db.maybeOne(sql('PolicyZoneExists'), [input.zone]))) throw new PolicySourceError(`unknown zone ${input.zone}`, 'zone');
  const policyUrl = httpUrl(input.policyUrl, 'policy URL');
  const geographyUrl = httpUrl(input.geographyUrl, 'geography URL');
  if (!POLICY_AUTH_TYPES.includes(input.auth)) throw new PolicySourceError(`auth must be one of ${POLICY_AUTH_TYPES.join(', ')}`, 'auth');
  if (input.auth !== 'none' && !input.secret)
    throw new PolicySourceError(input.auth === 'bearer' ? 'a bearer source needs its token' : 'an OAuth source needs its client secret', 'secret');
  const tokenUrl = input.auth === 'oauth' ? httpUrl(input.tokenUrl, 'token URL') : null;
  if (input.auth === 'oauth' && !input.clientId) throw new PolicySourceError('an OAuth source needs its client id', 'clientId');
  const sealed = input.auth === 'none' ? null : seal(signingSecret, POLICY_SECRET_PURPOSE, input.secret!);
  const row = await db.one(sql('PolicySourceUpsert'), [
    input.zone,
    policyUrl,
    geographyUrl,
    input.auth,
    sealed,
    tokenUrl,
    input.auth === 'oauth' ? input.clientId! : null,
    input.auth === 'oauth' ? (input.scope ?? null) : null,
    now,
  ]);
  return { inserted: row.inserted === true };
}

/** Removes the zone's source, its rules and the city's areas with them. */
export async function removePolicySource(db: Queryable, zone: string): Promise<boolean> {
  return (await db.maybeOne(sql('PolicySourceDelete'), [zone])) !== undefined;
}

export interface ComplianceView {
  sources: Array<RowOf<'PolicyComplianceSources'>>;
  rules: Array<RowOf<'PolicyComplianceRules'>>;
}

/** The compliance view of a zone (or of every zone): the reads, the rules, the commands, the alerts' figures. */
export async function complianceView(db: Queryable, zone: string | null, now: Date): Promise<ComplianceView> {
  const [sources, rules] = await Promise.all([db.many(sql('PolicyComplianceSources'), [zone]), db.many(sql('PolicyComplianceRules'), [zone, now])]);
  return { sources, rules };
}
