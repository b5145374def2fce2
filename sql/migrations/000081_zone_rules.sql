-- The one decision of where a ride may start, end and pass through, per point and vehicle type.
-- The rental engine (start and end, via the named query ZoneRulesAt) and the GBFS 2.2/3.0
-- geofencing rules (GbfsZones, GbfsAreas) are both read from these functions, so the rules the
-- operator publishes and the rules it enforces cannot disagree.
--
-- GBFS semantics are the model: a point takes the rule of the first applicable area in precedence
-- order (the most restrictive first), else the zone's global rule. An area applies to a vehicle
-- type when its vehicle_types is empty or names the type's id or form factor.

-- Feature order: forbidding areas before permitting ones, parking spots before slow zones.
CREATE FUNCTION zone_area_precedence(p_area_type text) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT array_position(ARRAY['no-riding', 'no-parking', 'parking-spot', 'slow-zone', 'incentive', 'free-floating', 'operations'], p_area_type)
$$;

-- The permissions inside an area of a zone. A ride ends only in a parking spot in a parking-spot
-- zone, anywhere not forbidden in a free-floating one; a no-riding area stops everything.
CREATE FUNCTION zone_area_rule(p_parking_mode text, p_area_type text,
                               OUT ride_start_allowed boolean, OUT ride_end_allowed boolean,
                               OUT ride_through_allowed boolean, OUT station_parking boolean)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT p_area_type <> 'no-riding',
         CASE p_area_type
           WHEN 'no-riding' THEN false
           WHEN 'no-parking' THEN false
           WHEN 'parking-spot' THEN true
           WHEN 'free-floating' THEN true
           ELSE p_parking_mode = 'free-floating'
         END,
         p_area_type <> 'no-riding',
         CASE p_area_type
           WHEN 'parking-spot' THEN true
           WHEN 'slow-zone' THEN p_parking_mode = 'parking-spot'
           WHEN 'incentive' THEN p_parking_mode = 'parking-spot'
           WHEN 'operations' THEN p_parking_mode = 'parking-spot'
           ELSE false
         END
$$;

-- Outside every applicable area. A zone with operations areas operates only inside them: outside,
-- nothing may start or end (riding through is allowed, the vehicle does not stop at the border).
-- A zone without operations areas operates everywhere: the operations rule.
CREATE FUNCTION zone_global_rule(p_zone text,
                                 OUT ride_start_allowed boolean, OUT ride_end_allowed boolean,
                                 OUT ride_through_allowed boolean, OUT station_parking boolean)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT o.ride_start_allowed AND NOT h.has_ops, o.ride_end_allowed AND NOT h.has_ops,
         o.ride_through_allowed, o.station_parking AND NOT h.has_ops
    FROM zones z
   CROSS JOIN LATERAL zone_area_rule(z.parking_mode, 'operations') o
   CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = z.id AND a.area_type = 'operations') AS has_ops) h
   WHERE z.id = p_zone
$$;

-- The rule at a point for a vehicle type: the first applicable area covering it in precedence
-- order, else the global rule. area_type: the deciding area's type (NULL: the global rule).
CREATE FUNCTION zone_rules_at(p_zone text, p_lng float8, p_lat float8, p_vehicle_type text,
                              OUT ride_start_allowed boolean, OUT ride_end_allowed boolean,
                              OUT ride_through_allowed boolean, OUT station_parking boolean, OUT area_type text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  WITH hit AS (
    SELECT a.area_type
      FROM areas a
      LEFT JOIN vehicle_types vt ON vt.id = p_vehicle_type
     WHERE a.zone_id = p_zone
       AND ST_Intersects(a.geom, ST_SetSRID(ST_MakePoint(p_lng, p_lat), 4326))
       AND (cardinality(a.vehicle_types) = 0 OR p_vehicle_type = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))
     ORDER BY zone_area_precedence(a.area_type)
     LIMIT 1
  )
  SELECT r.ride_start_allowed, r.ride_end_allowed, r.ride_through_allowed, r.station_parking, hit.area_type
    FROM zones z
    LEFT JOIN hit ON true
   CROSS JOIN LATERAL zone_area_rule(z.parking_mode, hit.area_type) ar
   CROSS JOIN LATERAL zone_global_rule(z.id) g
   CROSS JOIN LATERAL (SELECT CASE WHEN hit.area_type IS NULL THEN g.ride_start_allowed ELSE ar.ride_start_allowed END AS ride_start_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.ride_end_allowed ELSE ar.ride_end_allowed END AS ride_end_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.ride_through_allowed ELSE ar.ride_through_allowed END AS ride_through_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.station_parking ELSE ar.station_parking END AS station_parking) r
   WHERE z.id = p_zone
$$;
