/**
 * The feed signing keys for the ops CLI (`ops signing-keys …`, docs/feed-signatures.md "Keys"): a
 * rotation, and the list of keys with their states. The rules are lib/feeds/signing-keys.ts's; this
 * module only turns them into what an operator reads. API processes sign with the new key within
 * 30 s of a rotation, without a restart.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { DEFAULT_OVERLAP_MS, listSigningKeys, rotateSigningKeys, SigningKeyError, type ListedKey } from '../../lib/feeds/signing-keys.js';
import { AdminError } from './credentials.js';

const DAY_MS = 24 * 3_600_000;

/** The default overlap, in the CLI's unit. */
export const DEFAULT_OVERLAP_DAYS = DEFAULT_OVERLAP_MS / DAY_MS;

async function asAdmin<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof SigningKeyError) throw new AdminError(err.message);
    throw err;
  }
}

/** One rotation with an overlap of `overlapDays`; the lines to print. */
export async function rotateFeedSigningKeys(ctx: AppContext, overlapDays: number): Promise<string> {
  if (!Number.isFinite(overlapDays) || overlapDays < 0) throw new AdminError('--overlap-days must be a number of days, 0 or more');
  const r = await asAdmin(() => rotateSigningKeys(ctx.db, ctx.config.signingSecret, ctx.clock.now(), overlapDays * DAY_MS));
  return [
    `active (signs within 30 s in every API process): ${r.active}`,
    r.retiring ? `retiring (in the JWKS until ${r.retireAfter.toISOString()}): ${r.retiring}` : 'no key was active before: nothing retiring',
    `next (in the JWKS now, signs from the next rotation): ${r.next}`,
    ...r.retired.map((kid) => `retired (overlap ended, out of the JWKS, private key deleted): ${kid}`),
  ].join('\n');
}

/** Every key, newest first, as rows for console.table. */
export async function listFeedSigningKeys(ctx: AppContext): Promise<Array<Record<string, string>>> {
  const iso = (d: Date | null) => (d ? d.toISOString() : '');
  const keys: ListedKey[] = await asAdmin(() => listSigningKeys(ctx.db, ctx.config.signingSecret, ctx.clock.now()));
  return keys.map((k) => ({
    kid: k.kid,
    state: k.state,
    in_jwks: k.published ? 'yes' : 'no',
    created: iso(k.created_at),
    activated: iso(k.activated_at),
    retiring_since: iso(k.retiring_at),
    leaves_jwks: iso(k.retire_after),
  }));
}
