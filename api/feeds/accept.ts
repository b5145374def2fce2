/**
 * Version negotiation through the Accept header (MDS "Versioning": the version is a media type
 * parameter, e.g. `application/vnd.mds+json;version=2.0`).
 */
import { FeedError } from './errors.js';

export interface MediaOffer<V extends string> {
  /** the version this offer stands for */
  version: V;
  type: string;
  /** the `version` parameter values accepted for it (e.g. 2.0 and 2.0.x patch levels) */
  versions: RegExp;
  /** Content-Type of the response */
  contentType: string;
}

interface MediaRange {
  type: string;
  params: Record<string, string>;
  q: number;
}

function parseAccept(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [type, ...rest] = part.split(';');
    const t = type.trim().toLowerCase();
    if (!t) continue;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
      if (k === 'q') q = Number(v);
      else params[k] = v;
    }
    if (q > 0) out.push({ type: t, params, q });
  }
  return out.sort((a, b) => b.q - a.q);
}

/**
 * The offer the Accept header selects. `fallback` is the offer chosen for an absent header, `*\/*`,
 * `application/*` or `application/json`; when undefined (the legacy host) the client must name a
 * version. Throws 406 listing the supported media types otherwise.
 */
export function negotiate<V extends string>(header: string | undefined, offers: readonly MediaOffer<V>[], fallback: MediaOffer<V> | undefined): MediaOffer<V> {
  const ranges = header && header.trim() ? parseAccept(header) : [];
  if (ranges.length === 0 && fallback && !(header && header.trim())) return fallback;
  for (const r of ranges) {
    for (const o of offers) {
      if (r.type !== o.type) continue;
      const v = r.params.version;
      if (v === undefined) {
        if (fallback && o === fallback) return o;
        continue;
      }
      if (o.versions.test(v)) return o;
    }
    if (fallback && (r.type === '*/*' || r.type === 'application/*' || r.type === 'application/json')) return fallback;
  }
  const supported = offers.map((o) => `${o.type};version=${o.version}`);
  throw new FeedError(406, 'not_acceptable', `unsupported media type or version in Accept; supported: ${supported.join(', ')}`, supported);
}

export const MDS_2_0: MediaOffer<'2.0'> = {
  version: '2.0',
  type: 'application/vnd.mds+json',
  versions: /^2\.0(\.\d+)?$/,
  contentType: 'application/vnd.mds+json;version=2.0',
};

/**
 * MDS 2.1, offered only by the endpoints 2.1 added (/incidents): on that endpoint an absent Accept,
 * `*\/*` or a version-less MDS type means 2.1, and `version=2.0` is a 406 (docs/feeds-access.md).
 */
export const MDS_2_1: MediaOffer<'2.1'> = {
  version: '2.1',
  type: 'application/vnd.mds+json',
  versions: /^2\.1(\.\d+)?$/,
  contentType: 'application/vnd.mds+json;version=2.1',
};

export const MDS_1_2: MediaOffer<'1.2'> = {
  version: '1.2',
  type: 'application/vnd.mds+json',
  versions: /^1\.2(\.\d+)?$/,
  contentType: 'application/vnd.mds+json;version=1.2',
};

export const MDS_0_4: MediaOffer<'0.4'> = {
  version: '0.4',
  type: 'application/vnd.mds.provider+json',
  versions: /^0\.4(\.\d+)?$/,
  contentType: 'application/vnd.mds.provider+json;version=0.4',
};

export const INSURANCE_2_0: MediaOffer<'2.0'> = {
  version: '2.0',
  type: 'application/vnd.insurance+json',
  versions: /^2\.0(\.\d+)?$/,
  contentType: 'application/vnd.insurance+json;version=2.0',
};
