-- GBFS vehicle files are built in 16 blocks per zone (publisher/feeds/gbfs/vehicles.ts, docs/gbfs.md
-- "Vehicle blocks"): a zone's parts are now v3/vehicle_status/{0…f} and v2/free_bike_status/{0…f}.
-- The whole-file parts of the builds before are read by nothing any more.
DELETE FROM gbfs_zone_parts WHERE part IN ('v3/vehicle_status', 'v2/free_bike_status');
