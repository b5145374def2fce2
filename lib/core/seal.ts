/**
 * Secrets the platform must use again and so cannot keep as hashes (a city's Policy API bearer token
 * or OAuth client secret, lib/domain/policy/sources.ts; the feed-signing private keys,
 * lib/feeds/signing-keys.ts) are kept sealed: AES-256-GCM under a key derived from the configured
 * signing secret and the secret's purpose (HKDF-SHA256), so a database dump alone reveals none of them
 * and a value sealed for one purpose never opens as another. `bound`, when given, is authenticated
 * with the value (GCM's associated data): a value sealed for one row (a key id) cannot be moved to
 * another. Bytes: iv (12) ‖ tag (16) ‖ ciphertext; text: `v1.` and those bytes in base64url.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const keys = new Map<string, Buffer>();

function keyFor(secret: string, purpose: string): Buffer {
  const id = `${purpose}\0${secret}`;
  let k = keys.get(id);
  if (!k) {
    k = Buffer.from(hkdfSync('sha256', secret, 'platform-seal', `seal/v1/${purpose}`, 32));
    keys.set(id, k);
  }
  return k;
}

/** `plain` sealed for `purpose` (and `bound`) under the signing secret. */
export function sealBytes(secret: string, purpose: string, plain: Buffer, bound?: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, purpose), iv);
  if (bound !== undefined) cipher.setAAD(Buffer.from(bound, 'utf8'));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/**
 * The plaintext of what `sealBytes` made for `purpose` (and `bound`); throws when it was sealed under
 * another secret, purpose or binding, or was altered (GCM's tag), so a changed signing secret is a
 * clear error, not garbage.
 */
export function unsealBytes(secret: string, purpose: string, sealed: Buffer, bound?: string): Buffer {
  if (sealed.length < 28) throw new Error('not a sealed value');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, purpose), sealed.subarray(0, 12));
  if (bound !== undefined) decipher.setAAD(Buffer.from(bound, 'utf8'));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
}

/** `plaintext` sealed for `purpose`, as text. */
export function seal(secret: string, purpose: string, plaintext: string): string {
  return `v1.${sealBytes(secret, purpose, Buffer.from(plaintext, 'utf8')).toString('base64url')}`;
}

/** The plaintext of a text `seal` made for `purpose`; throws as `unsealBytes` does. */
export function unseal(secret: string, purpose: string, sealed: string): string {
  if (!sealed.startsWith('v1.')) throw new Error('not a sealed value');
  return unsealBytes(secret, purpose, Buffer.from(sealed.slice(3), 'base64url')).toString('utf8');
}
