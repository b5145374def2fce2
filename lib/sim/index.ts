/** The fleet simulator: bulk history (`simulateHistory`) and live mode (`startLiveSimulator` in live.ts). */
export { simulateHistory, SimulationRepeatedError, type SimOptions, type SimSummary } from './history.js';
