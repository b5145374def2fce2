-- The operator console (api/console/): what the CLI's queries do not already answer.

-- name: ConsolePartners
-- partners with their zones (null: every zone) and how many active keys they hold
SELECT p.id, p.name, p.kind, p.trip_type, p.rate_limit_per_minute, p.created_at,
       (SELECT array_agg(z.zone_id ORDER BY z.zone_id) FROM partner_zones z WHERE z.partner_id = p.id) AS zones,
       (SELECT count(*)::int FROM api_keys k WHERE k.partner_id = p.id AND k.revoked_at IS NULL) AS active_keys,
       (SELECT max(k.last_used_at) FROM api_keys k WHERE k.partner_id = p.id) AS last_used_at
  FROM partners p
 ORDER BY p.name;
