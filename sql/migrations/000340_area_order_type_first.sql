-- Where a city's area and the zone file's overlap, the stricter type decides, and between areas of
-- one type the city's (migration 000300 put every city area before every operator area). A city
-- rule speaks only of what its type says: a city slow zone over an operator no-riding or no-parking
-- area must not lift that ban, and over a parking spot must not forbid ending in the spot (it did:
-- a slow-zone area ends rides only in free-floating zones, so the spots in a city's slow centre of a
-- parking-spot zone refused every end). A city no-parking area still beats a parking spot, a city
-- no-riding area everything, and a city slow zone an operator slow zone (its limit is the one shown).
-- zone_rules_at, GbfsAreas and the TOMP areas order by this, so the engine and the files agree.
CREATE OR REPLACE FUNCTION zone_area_order(p_source text, p_area_type text) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT zone_area_precedence(p_area_type) * 2 + CASE WHEN p_source = 'city' THEN 0 ELSE 1 END
$$;
