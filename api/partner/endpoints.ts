/**
 * The partner rental API's endpoint table: every operation, once. The router (./router.ts) mounts
 * it, the OpenAPI document (api/openapi/partner.ts) describes it; order is route precedence.
 */
import type { PartnerEndpoint } from './endpoint.js';
import { USER_ENDPOINTS } from './users.js';
import { RENTAL_ENDPOINTS } from './rentals.js';
import { CATALOG_ENDPOINTS } from './catalog.js';

export const PARTNER_ENDPOINTS: readonly PartnerEndpoint[] = [...USER_ENDPOINTS, ...RENTAL_ENDPOINTS, ...CATALOG_ENDPOINTS];
