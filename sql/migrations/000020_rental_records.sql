-- The rental as the engine and the partner API read it: the row, the printed vehicle code and the
-- four locations as plain coordinates, so that every reader shares one column list.
CREATE VIEW rental_records AS
SELECT r.id, r.partner_id, r.user_id, r.vehicle_id, v.code AS vehicle_code, r.zone_id, r.trip_id, r.source, r.state,
       r.beginners_mode, r.licence_validated, r.group_id, r.ride_type, r.currency, r.vat_rate,
       r.start_price, r.price_per_minute, r.started_at, r.ended_at,
       ST_X(r.user_start_location) AS user_start_lng, ST_Y(r.user_start_location) AS user_start_lat,
       ST_X(r.user_end_location) AS user_end_lng, ST_Y(r.user_end_location) AS user_end_lat,
       ST_X(r.vehicle_start_location) AS vehicle_start_lng, ST_Y(r.vehicle_start_location) AS vehicle_start_lat,
       ST_X(r.vehicle_end_location) AS vehicle_end_lng, ST_Y(r.vehicle_end_location) AS vehicle_end_lat,
       r.start_battery_percent, r.end_battery_percent, r.duration_min, r.distance_m,
       r.subtotal, r.total_amount, r.vat_amount, r.receipt_key, r.photo_key, r.photo_decision, r.photo_decided_at
  FROM rentals r
  JOIN vehicles v ON v.id = r.vehicle_id;

-- the auto-end sweep reads running rentals by start time
CREATE INDEX rentals_running_started ON rentals (started_at) WHERE state = 'RUNNING';
