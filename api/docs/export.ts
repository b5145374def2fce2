/**
 * The committed JSON export of the documents (docs/openapi/*.json), for readers of the repository
 * and tools that want a file. Built for the default local addresses (`make run`), so the export
 * does not depend on anyone's environment; the served /openapi/*.json carry the real ones.
 */
import { join } from 'node:path';
import { ROOT } from '../../lib/core/paths.js';
import { DOCUMENT_NAMES, openApiDocuments, type DocumentName } from './documents.js';

export const EXPORT_DIR = join(ROOT, 'docs', 'openapi');
const EXPORT_URLS = { publicBaseUrl: 'http://localhost:8080', publicLegacyUrl: 'http://localhost:8081' } as const;

/** File name → content of every exported document. */
export function exportedFiles(): Record<`${DocumentName}.json`, string> {
  const docs = openApiDocuments(EXPORT_URLS);
  return Object.fromEntries(DOCUMENT_NAMES.map((n) => [`${n}.json`, `${JSON.stringify(docs[n], null, 2)}\n`])) as Record<`${DocumentName}.json`, string>;
}
