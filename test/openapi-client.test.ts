/**
 * Typed clients from the served documents need no guess (issue 28): openapi-typescript generates
 * the types of each document GET /openapi/*.json serves, and a small integrator's flow written
 * against openapi-fetch with one base URL per document type-checks against them (the TypeScript
 * compiler API, strict). The flow registers a user (and, marked `@ts-expect-error`, fails to
 * compile without the fields the server requires), starts a rental, books a vehicle through TOMP
 * and asks the main host for a feed token. Every array of every document has a type (no
 * `unknown[]`). Nothing runs against a server here: test/openapi.test.ts checks the answers.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { DOCUMENT_NAMES } from '../api/docs/documents.js';
import { ROOT } from '../lib/core/paths.js';
import { servedDocuments } from './support/openapi-served.js';

/** Written as an integrator would, against the generated types and one base URL per document. */
const FLOW = `
import createClient from 'openapi-fetch';
import type { paths as Partner } from './partner.js';
import type { paths as Tomp } from './tomp.js';
import type { paths as Feeds } from './feeds.js';
import type { paths as Legacy } from './legacy.js';

const partner = createClient<Partner>({ baseUrl: 'https://api.mobility.test', headers: { 'X-Auth-Token': 'partner-key' } });
const tomp = createClient<Tomp>({ baseUrl: 'https://api.mobility.test/edge/tomp', headers: { 'X-Access-Token': 'maas-key' } });
const feeds = createClient<Feeds>({ baseUrl: 'https://api.mobility.test' });
const legacy = createClient<Legacy>({ baseUrl: 'https://mds.mobility.test' });

export async function rentalFlow(vehicleId: string): Promise<string> {
  // @ts-expect-error email and externalId are required (the server answers EmptyUserEmailID / ErrEmptyUserExternalID without them)
  await partner.POST('/v1/user/register', { body: {} });
  // @ts-expect-error likewise with one of them
  await partner.POST('/v1/user/register', { body: { email: 'rider@example.com' } });

  const registered = await partner.POST('/v1/user/register', { body: { email: 'rider@example.com', externalId: 'partner-user-42' } });
  if (!registered.data) throw new Error(registered.error.errors[0].code);
  const userId: string = registered.data.data.id;

  const started = await partner.POST('/v1/rental/start', {
    body: { userId, vehicleId, userStartLocation: { latitude: 40.4168, longitude: -3.7038 } },
  });
  if (!started.data) {
    const code: 'InvalidRequestBody' | 'UserTooFarFromVehicle' | string = started.error.errors[0].code;
    throw new Error(code);
  }
  const rental = started.data.data[0];
  const state: 'RUNNING' | 'ENDED' | 'ENDED_WITH_NO_CHARGE' | 'ENDED_INTERNALLY' = rental.attributes.state;
  const ended = await partner.POST('/v1/rental/{rentalId}/end', { params: { path: { rentalId: rental.id } }, body: {} });
  const photoUrl: string | undefined = ended.data?.data[0].attributes.photoUploadURL;
  return \`\${state} \${photoUrl ?? ''}\`;
}

export async function bookingFlow(vehicleId: string): Promise<number> {
  const booked = await tomp.POST('/bookings/one-stop', {
    params: { header: { 'Accept-Language': 'en' } },
    body: { from: { coordinates: { lng: -3.7038, lat: 40.4168 } }, useAssets: [vehicleId], customer: { externalId: 'rider-42' } },
  });
  if (!booked.data) throw new Error(booked.error.detail);
  const legId: string = booked.data.legs[0].id;
  const finished = await tomp.POST('/legs/{id}/events', { params: { path: { id: legId } }, body: { event: 'FINISH' } });
  if (!finished.data) throw new Error(finished.error.detail);
  return finished.data.pricing?.parts.reduce((sum, p) => sum + p.amount, 0) ?? 0;
}

const form = (body: Record<string, string | undefined>) => new URLSearchParams(Object.entries(body).filter((e): e is [string, string] => e[1] !== undefined)).toString();

export async function feedFlow(clientId: string, secret: string): Promise<number> {
  const basic = \`Basic \${btoa(\`\${clientId}:\${secret}\`)}\`;
  const token = await feeds.POST('/v1/partner-apis/token', {
    body: { grant_type: 'client_credentials' },
    bodySerializer: form,
    headers: { Authorization: basic, 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  if (!token.data) throw new Error(token.error.error);
  const bearer = { Authorization: \`Bearer \${token.data.access_token}\` };
  const trips = await feeds.GET('/v1/partner-apis/mds/{zoneID}/trips', {
    params: { path: { zoneID: 'madrid' }, query: { end_time: '2026-11-21T09' } },
    headers: bearer,
    parseAs: 'json',
  });
  // a closed hour not yet published is a 202 with the feed error body: both are "data"
  const count = trips.data && 'trips' in trips.data ? trips.data.trips.length : 0;
  const legacyToken = await legacy.POST('/token', { body: { grant_type: 'client_credentials' }, bodySerializer: form, headers: { Authorization: basic } });
  const expiresIn: number | undefined = legacyToken.data?.expires_in;
  return count + (expiresIn ?? 0);
}
`;

describe('typed clients generated from the served documents', function () {
  this.timeout(60000);
  let dir: string;
  const generated: Record<string, string> = {};

  before(async () => {
    const docs = await servedDocuments();
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    // under the repository, so that the flow resolves openapi-fetch from its node_modules
    dir = mkdtempSync(join(ROOT, 'test-artifacts', 'openapi-client-'));
    for (const name of DOCUMENT_NAMES) {
      generated[name] = astToString(await openapiTS(docs[name]));
      writeFileSync(join(dir, `${name}.d.ts`), generated[name]);
    }
    writeFileSync(join(dir, 'flow.ts'), FLOW);
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every array has a type', () => {
    for (const name of DOCUMENT_NAMES) expect(generated[name], name).not.to.match(/unknown\[\]/);
  });

  it('a partner, TOMP and feed flow type-checks against them (and fails without the register fields)', () => {
    const program = ts.createProgram([join(dir, 'flow.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: [],
      skipLibCheck: true,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file && d.start !== undefined ? `${d.file.fileName.split('/').pop()}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1} ` : '';
      return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).to.deep.equal([]);
  });
});
