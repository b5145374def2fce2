/**
 * The floor of BENCH=ingest (bench/ingest.bench.ts): a bare MQTT 5 subscriber of every vehicle's
 * telemetry that does what any consumer must (receive, acknowledge, parse the JSON) and nothing more,
 * in a process of its own so that its CPU is its own. Prints `ready` once subscribed and, on SIGTERM,
 * the number of reports it received.
 *
 *   node --import tsx bench/ingest-floor-subscriber.ts URL USER PASSWORD
 */
import mqtt from 'mqtt';
import { QOS, telemetryTopic } from '../lib/domain/vehicles/protocol.js';

const [url, username, password] = process.argv.slice(2);
let received = 0;
let parsed = 0;
const client = await mqtt.connectAsync(url, { protocolVersion: 5, username, password, clientId: `floor-${process.pid}`, reconnectPeriod: 0 });
client.on('message', (_topic, payload) => {
  received++;
  if ((JSON.parse(payload.toString('utf8')) as { ts?: number }).ts) parsed++;
});
await client.subscribeAsync(telemetryTopic('+'), { qos: QOS });
console.log('ready');
process.on('SIGTERM', () => {
  console.log(JSON.stringify({ received, parsed }));
  void client.endAsync(true).then(() => process.exit(0));
});
