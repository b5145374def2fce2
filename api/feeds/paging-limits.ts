/** Page sizes of the paged event windows (api/feeds/paging.ts), also documented in the feeds OpenAPI document. */
export const EVENTS_PAGE_DEFAULT = 1000;
export const EVENTS_PAGE_MAX = 5000;
