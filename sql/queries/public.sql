-- Public deep-link pages (GBFS rental_uris).

-- name: PublicVehicleByGbfsId
SELECT v.battery_percent, t.name AS vehicle_type_name, z.name AS zone_name
  FROM vehicles v
  JOIN vehicle_types t ON t.id = v.vehicle_type_id
  JOIN zones z ON z.id = v.zone_id
 WHERE v.gbfs_id = $1 AND v.status IN ('ready', 'booked');
