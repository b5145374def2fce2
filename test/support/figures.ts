/**
 * Figures of the reliability tests (hostile input, access, logs, races): how many inputs were tried,
 * races run, faults injected, and how many answers broke a rule. The suite runs in parallel (mocha
 * workers, one test file at a time each): after every file the root hook of test/support/global.ts
 * writes the figures that file counted into the run's folder (FIGURES_DIR, set by the global setup
 * in the main process before the workers start), and the global teardown adds them up, prints them
 * as a short table (visible in CI logs) and writes test-artifacts/reliability-figures.json.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import fc from 'fast-check';
import { ROOT } from '../../lib/core/paths.js';

export type Figure = 'inputs' | 'races' | 'faults' | 'failures';

const rows = new Map<string, Record<Figure, number>>();

/** Adds `n` to figure `what` of row `row` (a family or a test area, e.g. "hostile tomp"). */
export function count(row: string, what: Figure, n = 1): void {
  let r = rows.get(row);
  if (!r) rows.set(row, (r = { inputs: 0, races: 0, faults: 0, failures: 0 }));
  r[what] += n;
}

type Row = { row: string } & Record<Figure, number>;

function figures(): Row[] {
  return [...rows.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([row, r]) => ({ row, ...r }));
}

/** Writes what this process counted since the last flush into `dir` (one file each), and forgets it. */
export function flushFigures(dir: string): void {
  const all = figures();
  rows.clear();
  if (all.length === 0) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${process.pid}-${randomBytes(4).toString('hex')}.json`), JSON.stringify(all));
}

/** The sum of every flush in `dir`, printed as a table and written to test-artifacts/reliability-figures.json. */
export function printFigures(dir: string): void {
  const sum = new Map<string, Row>();
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return; // nothing was counted
  }
  for (const f of files) {
    for (const r of JSON.parse(readFileSync(join(dir, f), 'utf8')) as Row[]) {
      const t = sum.get(r.row) ?? { row: r.row, inputs: 0, races: 0, faults: 0, failures: 0 };
      for (const k of ['inputs', 'races', 'faults', 'failures'] as const) t[k] += r[k];
      sum.set(r.row, t);
    }
  }
  const all = [...sum.values()].sort((a, b) => a.row.localeCompare(b.row));
  if (all.length === 0) return;
  const total: Row = { row: 'total', inputs: 0, races: 0, faults: 0, failures: 0 };
  for (const r of all) for (const k of ['inputs', 'races', 'faults', 'failures'] as const) total[k] += r[k];
  const lines = [...all, total].map(
    (r) =>
      `  ${r.row.padEnd(28)} ${String(r.inputs).padStart(8)} ${String(r.races).padStart(7)} ${String(r.faults).padStart(7)} ${String(r.failures).padStart(9)}`,
  );
  const header = `  ${'reliability figures'.padEnd(28)} ${'inputs'.padStart(8)} ${'races'.padStart(7)} ${'faults'.padStart(7)} ${'failures'.padStart(9)}`;
  console.log(['', header, `  ${'-'.repeat(header.length - 2)}`, ...lines, ''].join('\n'));
  try {
    const out = join(ROOT, 'test-artifacts');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'reliability-figures.json'), JSON.stringify({ at: new Date().toISOString(), rows: all, total }, null, 2));
  } catch {
    // a read-only checkout still shows the table in the log
  }
}

/** What must never appear in an answer: stack frames, SQL text, driver internals. */
const LEAK = /at .*\.ts:|SELECT |INSERT |syntax error|pg_|stack/i;

/**
 * Asserts that `res` is no 5xx and leaks nothing; counts the input, and a failure when a rule broke
 * (then rethrows, so fast-check shrinks and reports the input).
 */
export function expectSafe(row: string, res: { status: number; text?: string; body?: unknown }, what: string, extra?: () => void): void {
  count(row, 'inputs');
  try {
    expect(res.status, `${what} → ${res.status} ${res.text?.slice(0, 300)}`).to.be.below(500);
    // a signed URL's signature is random base64url: it may spell `pg_` or `stack` by chance
    const text = (res.text ?? JSON.stringify(res.body ?? '')).replace(/([?&](?:sig|signature)=)[A-Za-z0-9_-]*/g, '$1');
    expect(LEAK.test(text), `${what} leaked: ${text.slice(0, 300)}`).to.equal(false);
    extra?.();
  } catch (err) {
    count(row, 'failures');
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Hostile inputs shared by the hostile-*.test.ts files (fast-check arbitraries, fixed seed).
// ---------------------------------------------------------------------------------------------
/** One seed for every property, so a failure reproduces; bounded runs keep the suite fast. */
export const FC = { seed: 20261121, numRuns: 60, endOnFailure: true } as const;

const NON_V4_UUIDS = [
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '6ba7b810-9dad-11d1-80b4-00c04fd430c8', // v1
  '6ba7b810-9dad-31d1-80b4-00c04fd430c8', // v3
  '6ba7b810-9dad-51d1-80b4-00c04fd430c8', // v5
  '0190f5a2-7c1e-7b3a-9c2d-4e5f6a7b8c9d', // v7
  'a0eebc99-9c0b-4ef8-cb6d-6bb9bd380a11', // v4 digit, wrong variant
  '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}',
  'a0eebc999c0b4ef8bb6d6bb9bd380a11',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111',
  'g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
];

export const IMPOSSIBLE_TIMES = [
  '2026-02-30T10',
  '2026-13-01T00',
  '2026-01-01T24',
  '2026-01-32T00',
  '2025-02-29T10',
  '0000-00-00T00',
  '2026-1-1T1',
  '2026-01-01T10:00',
  '2026-01-01 10',
  '2026-01-01T23:59:60Z',
  '9999-12-31T23',
  '-001-01-01T00',
  '2026-02-30T10:00:00Z',
  '2026-01-01T24:00:00Z',
];

export const NUMBERISH = ['1e308', '-1', 'NaN', 'Infinity', '-Infinity', '-0', '0x10', '1.5', '9'.repeat(400), '1e-400', '+1', ' 1', '1 ', '١٢٣'];

const SQLISH = [
  "' OR '1'='1",
  "'; DROP TABLE rentals; --",
  '" OR 1=1 --',
  "Robert'); DROP TABLE users;--",
  '$1',
  "1' UNION SELECT password FROM partners--",
  '\\',
  "E'\\x00'",
  '/*',
  '--',
];

const ODD_STRINGS = [
  '',
  ' ',
  '\t',
  '..',
  '../../etc/passwd',
  '..\\..\\windows',
  '\u0000',
  'a\u0000b',
  '%00',
  '%s%s%n',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '𝓤𝓷𝓲𝓬𝓸𝓭𝓮',
  'zône-ß-中文-🚲',
  '\u202egnp.exe',
  '\ud800',
  '\uffff',
  'x'.repeat(5000),
  'null',
  'true',
  '[]',
  '{}',
  'undefined',
  '__proto__',
  'constructor',
];

const HOSTILE_STRINGS = [...NON_V4_UUIDS, ...IMPOSSIBLE_TIMES, ...NUMBERISH, ...SQLISH, ...ODD_STRINGS];

/** Already-encoded path segments: traversal, NUL, broken percent-encoding, overlong UTF-8, unicode, very long. */
const HOSTILE_SEGMENTS = [
  '..%2F..%2Fetc%2Fpasswd',
  '..%2f',
  '%2e%2e',
  '%2e%2e%2f%2e%2e',
  '..',
  '.',
  '%00',
  'a%00b',
  '%',
  '%ZZ',
  '%E0%A4%A',
  '%C0%AE%C0%AE',
  '%F0%9F%98%80',
  '%E2%80%AE',
  '%ED%A0%80',
  'x'.repeat(3000),
  '%27%20OR%20%271%27%3D%271',
  '%27%3B%20DROP%20TABLE%20zones%3B--',
  '1e308',
  '-1',
  'NaN',
  '%20',
  '%0A',
  '%0D%0A',
  'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
  ...NON_V4_UUIDS.map((u) => encodeURIComponent(u)),
];

const safeEncode = (s: string): string => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80'; // a lone surrogate cannot be encoded: send its (invalid) UTF-8 bytes instead
  }
};

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.uuid({ version: [1, 2, 3, 5, 6, 7, 8] }) },
);

export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_SEGMENTS) },
  { weight: 2, arbitrary: hostileString.map(safeEncode).filter((s) => s.length > 0) },
);

/** A header value Node will send (visible ASCII): hostile strings squeezed to it. */
export const hostileHeader: fc.Arbitrary<string> = hostileString.map((s) => s.replace(/[^\x20-\x7e]/g, '?').slice(0, 1000));

/** Any JSON value a hostile client may put where a field is expected. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(1e308, -1e308, -1, 0, -0, 2 ** 53 + 1, 0.5, null, true, false, [], {}, [null], { $gt: '' }) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), hostileString, { maxKeys: 3 }) },
);

type Json = Record<string, unknown>;

function setPath(obj: unknown, path: string[], value: unknown, remove: boolean): unknown {
  if (path.length === 0) return value;
  const copy: Json = obj && typeof obj === 'object' && !Array.isArray(obj) ? { ...(obj as Json) } : {};
  const [head, ...rest] = path as [string, ...string[]];
  if (rest.length === 0 && remove) delete copy[head];
  else copy[head] = setPath(copy[head], rest, value, remove);
  return copy;
}

/** Every path to a leaf (and to each object) of a JSON object. */
function pathsOf(obj: unknown, prefix: string[] = []): string[][] {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return [prefix];
  const out: string[][] = prefix.length ? [prefix] : [];
  for (const [k, v] of Object.entries(obj as Json)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

/**
 * A valid body turned hostile: one field replaced by a hostile value (wrong type, odd string, huge
 * number), one field removed, extra fields added, or the whole body replaced by a non-object.
 */
export function mutatedBody(valid: Json): fc.Arbitrary<unknown> {
  const paths = pathsOf(valid);
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...paths), hostileValue).map(([p, v]) => setPath(valid, p, v, false)) },
    { weight: 2, arbitrary: fc.constantFrom(...paths).map((p) => setPath(valid, p, undefined, true)) },
    {
      weight: 1,
      arbitrary: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), hostileValue, { minKeys: 1, maxKeys: 4 }).map((extra) => ({ ...extra, ...valid })),
    },
    { weight: 1, arbitrary: hostileValue },
  );
}

/** Text that is not JSON (or is truncated JSON) sent as application/json. */
export const malformedJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '{',
    '{"a":',
    '{"a":1,}',
    "{'a':1}",
    '[1,2',
    'NaN',
    'undefined',
    '{"a":1}{"b":2}',
    '\u0000',
    '{"a":"\\u00"}',
    '{"a": 01}',
    '\ufeff{}x',
    '{"__proto__":',
  ),
  fc.string({ maxLength: 60 }).filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
);

/**
 * POSTs `bytes` with chunked transfer encoding (no Content-Length), so a size limit must be counted
 * while reading. supertest always sets Content-Length; this talks to a real listening server.
 */
export async function postChunked(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  path: string,
  headers: Record<string, string>,
  bytes: Buffer,
  method = 'POST',
): Promise<{ status: number; text: string; body: any; type: string }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, method, headers: { ...headers, 'Transfer-Encoding': 'chunked' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: any;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, body, type: String(res.headers['content-type'] ?? '').split(';')[0] });
        });
      });
      // the server may answer 413 and close before we finish writing: that is the point
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
      for (let i = 0; i < bytes.length; i += 16384) req.write(bytes.subarray(i, i + 16384));
      req.end();
    });
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

/** Values that broke real services: NUL (Postgres text), lone surrogates, leap seconds, huge numbers. */
const NASTY_VALUES: unknown[] = [
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x'.repeat(20000),
  '2026-01-01T23:59:60Z',
  '2026-02-30T10:00:00Z',
  1e308,
  -1,
  'NaN',
  [],
  {},
  null,
];

/** `valid` with each field in turn (objects included) replaced by each of `values`: an exhaustive, small list. */
export function everyField(valid: Record<string, unknown>, values: unknown[] = NASTY_VALUES): unknown[] {
  return pathsOf(valid).flatMap((p) => values.map((v) => setPath(valid, p, v, false)));
}
