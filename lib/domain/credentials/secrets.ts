/**
 * Credentials at rest. API keys are long random strings, so sha256 is enough to store them (a
 * lookup by hash stays an index scan). Client secrets of the feeds' OAuth clients are stored as
 * salted scrypt, `scrypt$N$r$p$saltB64$hashB64`, and compared in constant time.
 */
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (secret: string, salt: Buffer, keylen: number, opts: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(secret, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));

const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** `${prefix}_${43 base64url chars}` (256 random bits); the prefix tells a reader what the key is for. */
export function generateApiKey(prefix: string): string {
  if (!/^[A-Za-z0-9-]{1,32}$/.test(prefix)) throw new Error('api key prefix must be 1-32 of [A-Za-z0-9-]');
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** A random client secret (256 bits, base64url). */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

function memFor(n: number, r: number): number {
  return 256 * n * r + 1024 * 1024;
}

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, KEYLEN, { N, r: R, p: P, maxmem: memFor(N, R) });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/**
 * True when `secret` matches `stored`. A malformed stored value, or parameters beyond what we would
 * ever write (a planted row must not make us burn a gigabyte), is false, not an exception.
 */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/.exec(stored ?? '');
  if (!m || typeof secret !== 'string') return false;
  const n = Number(m[1]);
  const r = Number(m[2]);
  const p = Number(m[3]);
  const salt = Buffer.from(m[4], 'base64');
  const expected = Buffer.from(m[5], 'base64');
  if (n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  if (salt.length < 8 || expected.length < KEYLEN || expected.length > 64) return false;
  try {
    const actual = await scrypt(secret, salt, expected.length, { N: n, r, p, maxmem: memFor(n, r) });
    return timingSafeEqual(actual, expected);
  } catch {
    return false;
  }
}
