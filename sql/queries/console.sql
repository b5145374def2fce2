-- The operator console (api/console/): what the CLI's queries do not already answer.

-- name: ConsolePartners
-- partners with their zones (null: every zone) and how many active keys they hold
SELECT p.id, p.name, p.kind, p.trip_type, p.rate_limit_per_minute, p.created_at,
       (SELECT array_agg(z.zone_id ORDER BY z.zone_id) FROM partner_zones z WHERE z.partner_id = p.id) AS zones,
       (SELECT count(*)::int FROM api_keys k WHERE k.partner_id = p.id AND k.revoked_at IS NULL) AS active_keys,
       (SELECT max(k.last_used_at) FROM api_keys k WHERE k.partner_id = p.id) AS last_used_at
  FROM partners p
 ORDER BY p.name;

-- name: ConsoleZoneMap
-- a zone's boundary and its areas as GeoJSON (the console's Fleet map); null when no such zone
SELECT z.id, z.name, ST_AsGeoJSON(z.boundary)::json AS boundary,
       coalesce((SELECT json_agg(json_build_object('type', 'Feature', 'geometry', ST_AsGeoJSON(a.geom)::json,
                                                   'properties', json_build_object('name', a.name, 'area_type', a.area_type, 'capacity', a.capacity, 'max_speed_kph', a.max_speed_kph,
                                                                                 'source', a.source))
                                 ORDER BY a.source = 'city', a.area_type, a.name)
                   FROM areas a WHERE a.zone_id = z.id), '[]'::json) AS areas
  FROM zones z WHERE z.id = $1;

-- name: ConsoleZoneVehicles
-- every vehicle of a zone with its running rental, if any (one per vehicle by a unique index)
SELECT v.id, v.code, v.status, v.battery_percent, ST_Y(v.location) AS lat, ST_X(v.location) AS lon,
       r.id AS rental_id, r.started_at AS rental_started_at
  FROM vehicles v
  LEFT JOIN rentals r ON r.vehicle_id = v.id AND r.state = 'RUNNING'
 WHERE v.zone_id = $1
 ORDER BY v.code;
