/**
 * A city's MDS Policy and Geography API for the tests: a small HTTP server on loopback serving
 * `/policies` and `/geographies` (the shape of reference/policy.yaml and reference/geography.yaml),
 * with ETag / If-None-Match, an optional bearer token or OAuth client-credentials token endpoint,
 * and documents the test swaps at will. The geographies are the official examples of the Geography
 * specification (specs/mds/2.0/policy-and-geography/geography-examples, Louisville KY), read from
 * SPECS_DIR; the policies are written from the Policy specification's own rule examples.
 */
import { createServer, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SPECS_DIR } from '../../lib/core/paths.js';

export interface CityPolicyServer {
  url: string;
  policies: unknown;
  geographies: unknown;
  /** requests per path, and how many were answered 304 */
  hits: Record<string, number>;
  notModified: number;
  /** a bearer token the documents require, or an OAuth client (id, secret) whose tokens they require */
  bearer?: string;
  oauth?: { clientId: string; secret: string };
  /** serve /policies one policy a page, each page with `links.next` (MDS bulk responses) */
  paged?: boolean;
  close(): Promise<void>;
}

/** An official geography example (its `geography` object), by file name without `.json`. */
export function officialGeography(name: string): Record<string, unknown> {
  const doc = JSON.parse(readFileSync(join(SPECS_DIR, 'mds/2.0/policy-and-geography/geography-examples', `${name}.json`), 'utf8')) as {
    geography: Record<string, unknown>;
  };
  return doc.geography;
}

export async function startCityPolicyServer(): Promise<CityPolicyServer> {
  const issued = new Set<string>();
  const state: CityPolicyServer = {
    url: '',
    policies: { version: '2.0.0', last_updated: Date.now(), policies: [] },
    geographies: { version: '2.0.0', last_updated: Date.now(), geographies: [] },
    hits: {},
    notModified: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    state.hits[path] = (state.hits[path] ?? 0) + 1;
    if (path === '/oauth/token' && req.method === 'POST') {
      const basic = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      if (!state.oauth || basic !== `${state.oauth.clientId}:${state.oauth.secret}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      const token = `tok-${issued.size + 1}`;
      issued.add(token);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600 }));
      return;
    }
    const auth = req.headers.authorization;
    if ((state.bearer && auth !== `Bearer ${state.bearer}`) || (state.oauth && !issued.has((auth ?? '').replace(/^Bearer /, '')))) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    let doc = path === '/policies' ? state.policies : path === '/geographies' ? state.geographies : undefined;
    if (path === '/policies' && state.paged && typeof doc === 'object' && doc !== null) {
      const all = (doc as { policies: unknown[] }).policies;
      const page = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('page') ?? 1);
      doc = {
        ...doc,
        policies: all.slice(page - 1, page),
        ...(page < all.length ? { links: { next: `${state.url}/policies?page=${page + 1}` } } : {}),
      };
    }
    if (doc === undefined) {
      res.writeHead(404).end();
      return;
    }
    const body = typeof doc === 'string' ? doc : JSON.stringify(doc);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) {
      state.notModified++;
      res.writeHead(304, { etag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/vnd.mds+json;version=2.0', etag }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}
