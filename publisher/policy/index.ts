/**
 * The publisher's rounds of the cities' rules (publisher/index.ts): a read round every minute, a
 * rules round every CITY_RULES_SECONDS. Both end with the rules applied and the speed commands sent,
 * so a changed document reaches the vehicles within one read interval plus the commands.
 */
import type { AppContext } from '../../lib/domain/context.js';
import type { CityPolicyJob } from '../../lib/publication/policy-queue.js';
import { readCityPolicies } from './read.js';
import { applyCityRules } from './apply.js';
import { enforceSpeeds } from './speed.js';

/** How often the rules' state, the city's areas and the speed commands are brought up to date. */
export const CITY_RULES_SECONDS = 10;

export async function cityRulesRound(ctx: AppContext): Promise<void> {
  await applyCityRules(ctx);
  await enforceSpeeds(ctx);
}

/** The sources due (or, from the console, one zone's now: lib/publication/policy-queue.ts), then the rules round when a read changed something. */
export async function cityPolicyRound(ctx: AppContext, job: CityPolicyJob = {}): Promise<void> {
  const reads = await readCityPolicies(ctx, job);
  if (reads.some((r) => r.outcome === 'ok')) await cityRulesRound(ctx);
}
