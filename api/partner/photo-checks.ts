/**
 * Checks of a parking photo (requirement: JPEG only, portrait orientation only, regular lens only).
 *
 * - JPEG: sharp must read it as `jpeg` and decode every pixel of it (fullyDecodes). Valid headers are
 *   not a photo: a file whose headers promise an image but whose scan data is missing or cut off is
 *   refused, as the headers alone (`metadata()`) would not notice.
 * - Portrait: height > width after applying the EXIF orientation (tags 5–8 rotate by 90°), so a phone
 *   photo stored landscape with orientation 6 counts as portrait. A square photo is not portrait.
 * - Regular lens: EXIF FocalLengthIn35mmFormat below WIDE_ANGLE_BELOW_MM (24 mm) is a wide-angle
 *   lens. Main phone cameras are 24–28 mm equivalent, ultra-wide ones 13–16 mm. A photo without the
 *   tag (stripped metadata) is accepted: we cannot tell, and refusing would punish privacy-minded apps.
 */
import sharp from 'sharp';
import exifr from 'exifr';

const WIDE_ANGLE_BELOW_MM = 24;

/**
 * True when the whole image decodes. libjpeg reports missing scan data only as a warning ("premature
 * end of data segment") and fills the rest with grey, so a strict decode (failOn: 'warning') runs
 * first; a photo it refuses is still accepted when a decode that tolerates warnings succeeds and the
 * warning is not about missing data (cameras write harmless irregularities such as extraneous bytes
 * before a marker).
 */
async function fullyDecodes(bytes: Buffer): Promise<boolean> {
  try {
    await sharp(bytes, { failOn: 'warning' }).raw().toBuffer();
    return true;
  } catch (strict) {
    if (/premature end|truncat/i.test(String((strict as Error)?.message))) return false;
  }
  try {
    await sharp(bytes, { failOn: 'truncated' }).raw().toBuffer();
    return true;
  } catch {
    return false;
  }
}

export type PhotoCheck =
  | { ok: true; width: number; height: number; focalLength35mm: number | undefined }
  | { ok: false; reason: 'not-jpeg' }
  | { ok: false; reason: 'not-portrait' | 'wide-angle'; width: number; height: number; focalLength35mm: number | undefined };

export async function checkPhoto(bytes: Buffer): Promise<PhotoCheck> {
  let meta: Awaited<ReturnType<ReturnType<typeof sharp>['metadata']>>;
  try {
    meta = await sharp(bytes, { failOn: 'error' }).metadata();
  } catch {
    return { ok: false, reason: 'not-jpeg' };
  }
  if (meta.format !== 'jpeg' || !meta.width || !meta.height) return { ok: false, reason: 'not-jpeg' };
  if (!(await fullyDecodes(bytes))) return { ok: false, reason: 'not-jpeg' };
  const rotated = meta.orientation !== undefined && meta.orientation >= 5 && meta.orientation <= 8;
  const width = rotated ? meta.height : meta.width;
  const height = rotated ? meta.width : meta.height;
  let focalLength35mm: number | undefined;
  try {
    // exifr types its result `any`: only the one tag asked for is read, and checked below
    const exif: unknown = await exifr.parse(bytes, { pick: ['FocalLengthIn35mmFormat'] });
    const v = (exif as { FocalLengthIn35mmFormat?: unknown } | null | undefined)?.FocalLengthIn35mmFormat;
    if (typeof v === 'number' && v > 0) focalLength35mm = v;
  } catch {
    // unreadable EXIF: treated like absent EXIF
  }
  if (height <= width) return { ok: false, reason: 'not-portrait', width, height, focalLength35mm };
  if (focalLength35mm !== undefined && focalLength35mm < WIDE_ANGLE_BELOW_MM) return { ok: false, reason: 'wide-angle', width, height, focalLength35mm };
  return { ok: true, width, height, focalLength35mm };
}
