/**
 * The four OpenAPI 3.1 documents of the platform, built from the families' endpoint tables and the
 * running configuration (their `servers` and OAuth token URLs name this deployment). One document
 * per API and host, each with one server: the partner API, TOMP, the main host's feeds and the
 * legacy MDS host's. Beside them the AsyncAPI 3.0 document of the vehicle protocol (MQTT 5), whose
 * commands' message expiry follows GATEWAY_TIMEOUT_MS. Served by api/docs (GET /openapi/*.json,
 * GET /asyncapi.json) and exported to docs/openapi/ and docs/asyncapi/ by bin/export-openapi.ts.
 */
import type { Config } from '../../lib/core/config.js';
import type { OpenApiDocument } from '../openapi/common.js';
import { partnerDocument } from '../openapi/partner.js';
import { tompDocument } from '../openapi/tomp.js';
import { feedsDocument, legacyFeedsDocument } from '../openapi/feeds.js';
import { PARTNER_ENDPOINTS } from '../partner/endpoints.js';
import { TOMP_ENDPOINTS } from '../tomp/endpoints.js';
import { FEED_ENDPOINTS } from '../feeds/endpoints.js';
import { LEGACY_ENDPOINTS } from '../legacy/endpoints.js';
import { vehiclesAsyncApiDocument, type AsyncApiDocument } from '../openapi/asyncapi.js';

export type { OpenApiDocument } from '../openapi/common.js';
export { operationsOf } from '../openapi/common.js';

export const DOCUMENT_NAMES = ['partner', 'tomp', 'feeds', 'legacy'] as const;
export type DocumentName = (typeof DOCUMENT_NAMES)[number];

export const DOCUMENT_TITLES: Record<DocumentName, string> = {
  partner: 'Partner rental API',
  tomp: 'TOMP booking API',
  feeds: 'Data feeds (MDS 2.0, GBFS, insurance)',
  legacy: 'Legacy MDS feeds (1.2 / 0.4, legacy host)',
};

export function openApiDocuments(config: Pick<Config, 'publicBaseUrl' | 'publicLegacyUrl'>): Record<DocumentName, OpenApiDocument> {
  return {
    partner: partnerDocument(PARTNER_ENDPOINTS, { publicBaseUrl: config.publicBaseUrl }),
    tomp: tompDocument(TOMP_ENDPOINTS, { publicBaseUrl: config.publicBaseUrl }),
    feeds: feedsDocument(FEED_ENDPOINTS, { publicBaseUrl: config.publicBaseUrl, publicLegacyUrl: config.publicLegacyUrl }),
    legacy: legacyFeedsDocument(LEGACY_ENDPOINTS, { publicBaseUrl: config.publicBaseUrl, publicLegacyUrl: config.publicLegacyUrl }),
  };
}

export const ASYNCAPI_TITLE = 'Vehicle protocol (MQTT 5, AsyncAPI)';

export function vehiclesAsyncApi(config: { gateway: Pick<Config['gateway'], 'timeoutMs'> }): AsyncApiDocument {
  return vehiclesAsyncApiDocument({ gatewayTimeoutMs: config.gateway.timeoutMs });
}
