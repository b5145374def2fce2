/**
 * The committed JSON export of the documents (docs/openapi/*.json and docs/asyncapi/vehicles.json),
 * for readers of the repository and tools that want a file. Built for the default local addresses
 * (`make run`) and the default GATEWAY_TIMEOUT_MS, so the export does not depend on anyone's
 * environment; the served /openapi/*.json and /asyncapi.json carry the real ones.
 */
import { join } from 'node:path';
import { ROOT } from '../../lib/core/paths.js';
import { DOCUMENT_NAMES, openApiDocuments, vehiclesAsyncApi, type DocumentName } from './documents.js';

export const EXPORT_DIR = join(ROOT, 'docs', 'openapi');
export const ASYNCAPI_EXPORT_DIR = join(ROOT, 'docs', 'asyncapi');
const EXPORT_URLS = { publicBaseUrl: 'http://localhost:8080', publicLegacyUrl: 'http://localhost:8081' } as const;
/** GATEWAY_TIMEOUT_MS's default (lib/core/config.ts; test/asyncapi.test.ts checks they agree) */
export const EXPORT_GATEWAY_TIMEOUT_MS = 5000;

/** File name → content of every exported document. */
export function exportedFiles(): Record<`${DocumentName}.json`, string> {
  const docs = openApiDocuments(EXPORT_URLS);
  return Object.fromEntries(DOCUMENT_NAMES.map((n) => [`${n}.json`, `${JSON.stringify(docs[n], null, 2)}\n`])) as Record<`${DocumentName}.json`, string>;
}

/** File name → content of the exported AsyncAPI document (docs/asyncapi/). */
export function exportedAsyncApiFiles(): Record<'vehicles.json', string> {
  return { 'vehicles.json': `${JSON.stringify(vehiclesAsyncApi({ gateway: { timeoutMs: EXPORT_GATEWAY_TIMEOUT_MS } }), null, 2)}\n` };
}
