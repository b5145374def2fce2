/** MDS record mappers, streaming sources and the envelope writer, shared by publisher and API. */
export * from './rows.js';
export * from './records.js';
export * from './legacy.js';
export * from './envelope.js';
export * from './sources.js';
export { toInsuranceTrip, averageSpeedKmh } from '../insurance/records.js';
