/**
 * HMAC-signed URLs with an expiry, for links handed to partners without their API key: the parking
 * photo upload address and the receipt download. The signature covers a purpose, the path and the
 * expiry, so a receipt link cannot be turned into an upload link, nor its expiry extended.
 * Only the path is signed, not the host, so a change of PUBLIC_BASE_URL keeps old links valid.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignedPurpose = 'photo' | 'receipt';

function mac(secret: string, purpose: SignedPurpose, path: string, expires: number): Buffer {
  return createHmac('sha256', secret).update(`partner-url\n${purpose}\n${path}\n${expires}`).digest();
}

/** `path?expires=<unix seconds>&sig=<base64url>` */
export function signPath(secret: string, purpose: SignedPurpose, path: string, expiresAt: Date): string {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  return `${path}?expires=${expires}&sig=${mac(secret, purpose, path, expires).toString('base64url')}`;
}

export type SignatureCheck = 'ok' | 'invalid' | 'expired';

/**
 * Checks a signature in constant time. `invalid` wins over `expired`: a tampered link never learns
 * whether its expiry would have been fine. One spelling per signature: the text is compared with
 * the canonical one we issue, so a base64url signature with other unused trailing bits (it decodes
 * to the same bytes) or an `expires` with a leading zero is as invalid as any other wrong signature.
 */
export function verifySignedPath(secret: string, purpose: SignedPurpose, path: string, query: { expires?: unknown; sig?: unknown }, now: Date): SignatureCheck {
  const { expires, sig } = query;
  if (typeof expires !== 'string' || !/^(0|[1-9]\d{0,11})$/.test(expires) || typeof sig !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(sig)) {
    return 'invalid';
  }
  const expected = Buffer.from(mac(secret, purpose, path, Number(expires)).toString('base64url'), 'latin1');
  const given = Buffer.from(sig, 'latin1');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  return Number(expires) * 1000 < now.getTime() ? 'expired' : 'ok';
}
