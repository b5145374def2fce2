/** The fleet simulator: bulk history (`simulateHistory`) and live mode (`startLiveSimulator` in live.ts). */
export { simulateHistory, SimulationRepeatedError, type SimSummary } from './history.js';
