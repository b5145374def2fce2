/**
 * Small HTTP helpers for serving stored representations: conditional requests (RFC 9110 §13) and
 * Accept-Encoding negotiation (RFC 9110 §12.5.3).
 */

/** Parses `If-None-Match` into entity tags (weak prefix stripped), or '*' . */
function parseEtags(header: string): string[] | '*' {
  if (header.trim() === '*') return '*';
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .filter(Boolean);
}

/**
 * True when the client's copy is current: If-None-Match (weak comparison) wins over
 * If-Modified-Since, which is evaluated only without If-None-Match, at one-second resolution.
 */
export function isNotModified(headers: { ifNoneMatch?: string | undefined; ifModifiedSince?: string | undefined }, etag: string, lastModified: Date): boolean {
  if (headers.ifNoneMatch) {
    const tags = parseEtags(headers.ifNoneMatch);
    if (tags === '*') return true;
    const ours = etag.replace(/^W\//, '');
    return tags.includes(ours);
  }
  if (headers.ifModifiedSince) {
    const since = Date.parse(headers.ifModifiedSince);
    if (Number.isNaN(since)) return false;
    return Math.floor(lastModified.getTime() / 1000) <= Math.floor(since / 1000);
  }
  return false;
}

/**
 * Whether `coding` (e.g. gzip) is acceptable under the Accept-Encoding header: listed (or `*`)
 * with a q-value above zero. An absent header means any coding is acceptable, but we only pass a
 * coding through when the client asked for it, which is what clients expect in practice.
 */
export function acceptsEncoding(header: string | undefined, coding: string): boolean {
  if (!header) return false;
  let star: boolean | undefined;
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().split(';');
    const token = name.trim().toLowerCase();
    let qv = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) qv = Number(m[1]);
    }
    if (token === coding || (coding === 'gzip' && token === 'x-gzip')) return qv > 0;
    if (token === '*') star = qv > 0;
  }
  return star ?? false;
}
