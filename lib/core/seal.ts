/**
 * Secrets the platform must send again and so cannot keep as hashes (a city's Policy API bearer token
 * or OAuth client secret, the feed-signing private keys) are kept sealed: AES-256-GCM under a key
 * derived from the configured signing secret and the secret's purpose (HKDF-SHA256), so a database dump
 * alone reveals none of them and a value sealed for one purpose never opens as another. The sealed
 * form is one text: `v1.<iv>.<tag>.<ciphertext>`, base64url parts.
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

/** `plaintext` sealed for `purpose` under the signing secret. */
export function seal(secret: string, purpose: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, purpose), iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
}

/**
 * The plaintext of a value `seal` made for `purpose`; throws when it was sealed under another secret
 * or purpose or was altered (GCM's tag), so a rotated signing secret is a clear error, not garbage.
 */
export function unseal(secret: string, purpose: string, sealed: string): string {
  const parts = sealed.split('.');
  if (parts.length !== 4 || parts[0] !== 'v1') throw new Error('not a sealed value');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, purpose), Buffer.from(parts[1], 'base64url'));
  decipher.setAuthTag(Buffer.from(parts[2], 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(parts[3], 'base64url')), decipher.final()]).toString('utf8');
}
