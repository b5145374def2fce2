/**
 * The AsyncAPI 3.0 document of the vehicle protocol (api/openapi/asyncapi.ts), checked by the
 * official parser (@asyncapi/parser: the specification's JSON Schema, the MQTT bindings' schemas and
 * its Spectral rules) and against the declaration it is built from: every channel, topic, QoS,
 * property and payload schema of lib/domain/vehicles/protocol.ts and schemas/vehicles/messages.ts is
 * in it, and nothing else. Also: the committed export (docs/asyncapi/vehicles.json) is up to date,
 * GET /asyncapi.json serves the running configuration's document, and /docs links it.
 */
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Koa from 'koa';
import request from 'supertest';
import { Parser, type AsyncAPIDocumentInterface } from '@asyncapi/parser';
import { ROOT } from '../lib/core/paths.js';
import { testConfig } from '../lib/core/config.js';
import { compile } from '../lib/core/validate.js';
import * as messages from '../schemas/vehicles/messages.js';
import {
  CHANNELS,
  commandExpirySeconds,
  commandTopic,
  INGEST_FILTERS,
  parseVehicleTopic,
  QOS,
  repliesFilter,
  replyTopic,
  stateTopic,
  telemetryTopic,
  TOPIC_PARAMETERS,
} from '../lib/domain/vehicles/protocol.js';
import { vehiclesAsyncApiDocument } from '../api/openapi/asyncapi.js';
import { ASYNCAPI_EXPORT_DIR, EXPORT_GATEWAY_TIMEOUT_MS, exportedAsyncApiFiles } from '../api/docs/export.js';
import { docsRoutes } from '../api/docs/router.js';
import { useTestContext } from './support/context.js';

/** Spectral's severities: 0 error, 1 warning, 2 information, 3 hint. */
const WARNING = 1;

async function parse(
  doc: unknown,
): Promise<{ parsed: AsyncAPIDocumentInterface; diagnostics: Array<{ severity: number; code: string | number; message: string; path: string }> }> {
  const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc));
  const shown = diagnostics.map((d) => ({ severity: d.severity, code: d.code, message: d.message, path: d.path.join('.') }));
  expect(document, JSON.stringify(shown, null, 2)).to.not.equal(undefined);
  return { parsed: document!, diagnostics: shown };
}

/** A parsed schema without the ids the parser adds to each of its (sub)schemas. */
function withoutParserIds(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutParserIds);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (k.startsWith('x-parser-') ? [] : [[k, withoutParserIds(x)]])));
}

/** Every payload schema the protocol module declares (each has a `$id`). */
const SCHEMAS = Object.entries(messages).flatMap(([name, v]) =>
  name.endsWith('Schema') && typeof v === 'object' && v !== null && '$id' in v ? [v as unknown as { $id: string; examples: unknown[] }] : [],
);

describe('AsyncAPI document of the vehicle protocol', function () {
  this.timeout(30_000);
  const TIMEOUT_MS = 5000;
  const doc = vehiclesAsyncApiDocument({ gatewayTimeoutMs: TIMEOUT_MS });
  let parsed: AsyncAPIDocumentInterface;

  before(async () => {
    const r = await parse(doc);
    parsed = r.parsed;
    // neither errors nor warnings; information (a newer AsyncAPI version exists) and hints may stay
    expect(r.diagnostics.filter((d) => d.severity <= WARNING)).to.deep.equal([]);
  });

  it('is AsyncAPI 3.0.0 with the embedded and a production server, MQTT 5, user/password security', () => {
    expect(parsed.version()).to.equal('3.0.0');
    const servers = parsed.servers().all();
    expect(servers.map((s) => s.id()).sort()).to.deep.equal(['embedded', 'production']);
    for (const s of servers) {
      expect(s.protocolVersion()).to.equal('5');
      const schemes = s.security().flatMap((req) => req.all().map((r) => r.scheme().type()));
      expect(schemes).to.deep.equal(['userPassword', 'userPassword']);
    }
    expect(parsed.servers().get('embedded')!.host()).to.equal('127.0.0.1:{port}');
    expect(
      parsed
        .servers()
        .get('production')!
        .variables()
        .all()
        .map((v) => v.id()),
    ).to.have.members(['host', 'port']);
    // the embedded server's default port is scripts/mqtt.sh's
    const script = readFileSync(join(ROOT, 'scripts', 'mqtt.sh'), 'utf8');
    expect(script).to.match(/EMBEDDED_MQTT_PORT:-18830\b/);
    expect(parsed.servers().get('embedded')!.variables().get('port')!.defaultValue()).to.equal('18830');
  });

  it('has every channel of protocol.ts with its address, parameters and message, and no other', () => {
    expect(
      parsed
        .channels()
        .all()
        .map((c) => c.id()),
    ).to.have.members(CHANNELS.map((c) => c.channel));
    for (const c of CHANNELS) {
      const ch = parsed.channels().get(c.channel)!;
      expect(ch.address(), c.channel).to.equal(c.address);
      expect(
        ch
          .parameters()
          .all()
          .map((p) => p.id()),
      ).to.have.members([...c.parameters]);
      for (const p of ch.parameters().all()) expect(p.description()).to.equal(TOPIC_PARAMETERS[p.id() as keyof typeof TOPIC_PARAMETERS].description);
      expect(
        ch
          .messages()
          .all()
          .map((m) => m.id()),
      ).to.deep.equal([c.payload.$id]);
    }
  });

  it('every topic the platform uses is a channel address with its parameters filled in', () => {
    const vehicleId = '0b9c6a1e-3f1d-4a8e-9a53-6d2b8c1f4e70';
    const gatewayId = 'api-host1-4711';
    const fill = (channel: string) => parsed.channels().get(channel)!.address()!.replace('{vehicleId}', vehicleId).replace('{gatewayId}', gatewayId);
    expect(fill('telemetry')).to.equal(telemetryTopic(vehicleId));
    expect(fill('state')).to.equal(stateTopic(vehicleId));
    expect(fill('commands')).to.equal(commandTopic(vehicleId));
    expect(fill('replies')).to.equal(replyTopic(vehicleId, gatewayId));
    for (const c of CHANNELS) expect(parseVehicleTopic(fill(c.channel))).to.deep.equal({ vehicleId, channel: c.channel });
    expect(repliesFilter(gatewayId)).to.equal(parsed.channels().get('replies')!.address()!.replace('{vehicleId}', '+').replace('{gatewayId}', gatewayId));
  });

  it('has every payload schema of schemas/vehicles/messages.ts as a message, as declared, with examples that validate', () => {
    expect(SCHEMAS.map((s) => s.$id)).to.have.members(['VehicleTelemetry', 'VehicleState', 'VehicleCommand', 'VehicleReply']);
    expect(
      parsed
        .components()
        .messages()
        .all()
        .map((m) => m.id()),
    ).to.have.members(SCHEMAS.map((s) => s.$id));
    for (const schema of SCHEMAS) {
      const m = parsed.components().messages().get(schema.$id)!;
      const { $id, ...rest } = schema;
      expect(withoutParserIds(m.payload()!.json()), $id).to.deep.equal({ title: $id, ...rest });
      expect(m.contentType()).to.equal('application/json');
      const valid = compile(schema);
      expect(m.examples().all().length, $id).to.equal(schema.examples.length).and.to.be.above(0);
      for (const ex of m.examples().all()) expect(valid(ex.payload()), `${$id} ${JSON.stringify(ex.payload())}`).to.equal(true);
    }
  });

  it("operations are the platform's: it receives telemetry and state (shared by the ingest), sends commands and gets their replies", () => {
    const ops = parsed.operations().all();
    const byChannel = new Map(ops.map((o) => [o.channels().all()[0].id(), o]));
    expect([...byChannel.keys()]).to.have.members(['telemetry', 'state', 'commands']);
    for (const c of CHANNELS.filter((x) => !x.replyTo)) {
      const op = byChannel.get(c.channel)!;
      expect(op.action(), c.channel).to.equal(c.action);
      const mqtt = op.bindings().get('mqtt')!.value<Record<string, unknown>>();
      expect(mqtt).to.include({ qos: QOS, retain: false });
      expect(
        op
          .messages()
          .all()
          .map((m) => m.id()),
      ).to.deep.equal([c.payload.$id]);
    }
    const shared = ops.flatMap((o) => {
      const x = o.extensions().get('x-shared-subscription');
      return x ? [x.value<string>()] : [];
    });
    expect(shared).to.have.members([...INGEST_FILTERS]);

    const send = byChannel.get('commands')!;
    expect(send.isSend()).to.equal(true);
    expect(send.bindings().get('mqtt')!.value<Record<string, unknown>>().messageExpiryInterval).to.equal(commandExpirySeconds(TIMEOUT_MS));
    const reply = send.reply()!;
    expect(reply.channel()!.id()).to.equal('replies');
    expect(reply.address()!.location()).to.equal('$message.header#/responseTopic');
    expect(
      reply
        .messages()
        .all()
        .map((m) => m.id()),
    ).to.deep.equal(['VehicleReply']);
  });

  it('commands carry the MQTT 5 request properties; a reply carries the correlation data back', () => {
    const command = parsed.components().messages().get('VehicleCommand')!;
    expect(command.correlationId()!.location()).to.equal('$message.header#/correlationData');
    const headers = command.headers()!.json<{ required: string[]; properties: Record<string, { const?: unknown }> }>();
    expect(headers.required).to.have.members(['responseTopic', 'correlationData', 'messageExpiryInterval']);
    expect(headers.properties.messageExpiryInterval.const).to.equal(commandExpirySeconds(TIMEOUT_MS));
    const binding = command.bindings().get('mqtt')!.value<Record<string, unknown>>();
    expect(binding).to.include({ responseTopic: CHANNELS.find((c) => c.channel === 'replies')!.address, contentType: 'application/json' });
    expect(binding).to.have.property('correlationData');

    const reply = parsed.components().messages().get('VehicleReply')!;
    expect(reply.correlationId()!.location()).to.equal('$message.header#/correlationData');
    expect(reply.headers()!.json<{ required: string[] }>().required).to.deep.equal(['correlationData']);
  });

  it('the message expiry follows GATEWAY_TIMEOUT_MS, rounded up to whole seconds, at least 1 s', async () => {
    expect([1, 999, 1000, 1001, 2500].map(commandExpirySeconds)).to.deep.equal([1, 1, 1, 2, 3]);
    const { parsed: p, diagnostics } = await parse(vehiclesAsyncApiDocument({ gatewayTimeoutMs: 2500 }));
    expect(diagnostics.filter((d) => d.severity <= WARNING)).to.deep.equal([]);
    const mqtt = p
      .operations()
      .all()
      .find((o) => o.isSend())!
      .bindings()
      .get('mqtt')!
      .value<Record<string, unknown>>();
    expect(mqtt.messageExpiryInterval).to.equal(3);
  });

  it('docs/asyncapi/vehicles.json (the committed export) is up to date, for the default GATEWAY_TIMEOUT_MS', () => {
    expect(EXPORT_GATEWAY_TIMEOUT_MS).to.equal(testConfig({ GATEWAY_TIMEOUT_MS: '' }).gateway.timeoutMs);
    const stale = Object.entries(exportedAsyncApiFiles()).filter(
      ([name, content]) => !existsSync(join(ASYNCAPI_EXPORT_DIR, name)) || readFileSync(join(ASYNCAPI_EXPORT_DIR, name), 'utf8') !== content,
    );
    expect(
      stale.map(([n]) => n),
      'stale export: run `node --import tsx bin/export-openapi.ts`',
    ).to.deep.equal([]);
  });

  describe('GET /asyncapi.json and /docs', () => {
    const t = useTestContext({ config: { GATEWAY_TIMEOUT_MS: '2500' } });
    let app: Koa;
    before(() => {
      app = new Koa();
      app.use(docsRoutes(t.ctx));
    });

    it("serves the document of the running configuration (its commands' expiry from GATEWAY_TIMEOUT_MS)", async () => {
      const res = await request(app.callback())
        .get('/asyncapi.json')
        .expect(200)
        .expect('Content-Type', /application\/json/)
        .expect('Access-Control-Allow-Origin', '*');
      expect(res.body).to.deep.equal(JSON.parse(JSON.stringify(vehiclesAsyncApiDocument({ gatewayTimeoutMs: 2500 }))));
      expect(
        (res.body as { operations: { sendCommands: { bindings: { mqtt: { messageExpiryInterval: number } } } } }).operations.sendCommands.bindings.mqtt
          .messageExpiryInterval,
      ).to.equal(3);
    });

    it('/docs links it beside the OpenAPI documents', async () => {
      const res = await request(app.callback()).get('/docs').expect(200);
      expect(res.text).to.include('href="/asyncapi.json"');
      expect(res.text).to.include('/openapi/partner.json');
    });
  });
});
