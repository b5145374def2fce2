/**
 * The vehicle ingest alone (ingest/index.ts): the vehicles' telemetry and state reports from the
 * broker (MQTT_URL) into Postgres, in batches. Any number of ingest processes may run against one
 * broker and one Postgres: the shared subscription splits the reports between them. Each needs its
 * own stable INGEST_ID (default: the host name): the broker keeps what a process has not yet
 * acknowledged for the next process of that id, so a supervisor restarts it under the same id.
 *
 * SIGINT/SIGTERM: write and acknowledge what it holds, leave the shared group, exit 0
 * (ingest/main.ts).
 *
 * Its Prometheus metrics (ingest_*: reports by outcome, refusals by reason, batch times, the age of
 * what it stores; RSS and event-loop lag) are on METRICS_HOST:INGEST_METRICS_PORT.
 */
import { exitOnStartError, loadConfigOrExit } from '../lib/core/config.js';
import { runIngestProcess } from '../ingest/main.js';

runIngestProcess(loadConfigOrExit().config).catch(exitOnStartError);
