-- A pending TOMP booking remembers whether the customer's licence (customer.licenses) was verified
-- when it was made, so its COMMIT starts the rental with the same verification.
ALTER TABLE tomp_bookings ADD COLUMN licence_verified boolean NOT NULL DEFAULT false;
