-- The distance of a ride, decided once for the rental engine's end and the running rental's live
-- figures (sql/queries/rentals.sql): the length on the spheroid of the line from where the vehicle
-- stood at the start, through the trip's telemetry in time order, to where it stands at the end,
-- rounded up to whole meters. Before, the line was the telemetry alone, so a ride was short by the
-- stretches before its first and after its last point, and could be shorter than the straight line
-- from start to end.
CREATE FUNCTION ride_distance_m(p_trip uuid, p_start geometry, p_end geometry) RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT COALESCE(ceil(ST_Length(ST_MakeLine(p.geom ORDER BY p.ord, p.ts)::geography)), 0)::int
    FROM (SELECT p_start AS geom, 0 AS ord, NULL::timestamptz AS ts WHERE p_start IS NOT NULL
          UNION ALL
          SELECT t.location, 1, t.ts FROM telemetry t WHERE t.trip_id = p_trip
          UNION ALL
          SELECT p_end, 2, NULL WHERE p_end IS NOT NULL) p
$$;
