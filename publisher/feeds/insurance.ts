/**
 * Insurance trip record (data-feeds requirement §2.6): the MDS 2.0 trip plus what an insurer needs to
 * identify the ride, the vehicle and the rider's experience.
 */
import type { InsuranceTrip } from '../../schemas/insurance/trips.js';
import type { Provider, TripRow } from '../../lib/feeds/mds/rows.js';

// The record type is its schema's (schemas/insurance/trips.ts), the one description of the record.
export type { InsuranceTrip } from '../../schemas/insurance/trips.js';

/** km/h, two decimals; 0 for a zero-length ride */
export function averageSpeedKmh(distanceM: number, durationS: number): number {
  if (durationS <= 0) return 0;
  return Math.round((distanceM / durationS) * 3.6 * 100) / 100;
}

export function toInsuranceTrip(row: TripRow, p: Provider): InsuranceTrip {
  return {
    trip_id: row.trip_id,
    device_id: row.device_id,
    provider_id: p.providerId,
    accessibility_attributes: [],
    city: row.city,
    country: row.country,
    distance: row.distance_m,
    duration: row.duration_s,
    average_ride_speed: averageSpeedKmh(row.distance_m, row.duration_s),
    start_location: { lat: Number(row.start_lat), lng: Number(row.start_lng) },
    end_location: { lat: Number(row.end_lat), lng: Number(row.end_lng) },
    start_time: Number(row.start_ms),
    end_time: Number(row.end_ms),
    is_group_ride: row.is_group_ride,
    license_plate: row.license_plate,
    license_plate_id: row.license_plate_id,
    ride_type: row.ride_type,
    trip_type: [row.trip_type],
    user_ride_count: row.user_ride_count,
    vehicle_short_id: row.vehicle_code,
  };
}
