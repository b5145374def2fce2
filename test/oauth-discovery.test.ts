/**
 * RFC 8414 discovery on both token hosts (api/feeds/discovery.ts), tried as an integrator does:
 * the hosts listen on loopback ports with their public URLs set to those ports, and openid-client v6,
 * unmodified, configures itself from the issuer alone (`discovery()`), gets a token with
 * `clientCredentialsGrant()` by HTTP Basic and by form credentials, and the token reads a feed of that
 * host. `allowInsecureRequests` only because the test hosts speak http on loopback.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { buildApp, buildLegacyApp, withHotPath } from '../api/app.js';
import { FEED_ENDPOINTS } from '../api/feeds/endpoints.js';
import { LEGACY_ENDPOINTS } from '../api/legacy/endpoints.js';
import type { AppContext } from '../lib/domain/context.js';
import { compile } from '../lib/core/validate.js';
import { AuthorizationServerMetadataSchema } from '../schemas/oauth/metadata.js';
import { useTestContext } from './support/context.js';
import { insertClient, insertFeedZone } from './support/feed-auth.js';

const WELL_KNOWN = '/.well-known/oauth-authorization-server';
const CLIENT_ID = 'discovery-city';
// characters HTTP Basic must form-encode (RFC 6749 §2.3.1): openid-client encodes, the endpoint decodes
const SECRET = 'pä ss:wörd+1/%';

async function listen(): Promise<{ server: Server; base: string }> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const close = (s: Server) => new Promise<void>((resolve) => s.close(() => resolve()));

/** The path of a table's token row: what the metadata must name. */
const tokenPathOf = (rows: readonly { path: string; feed?: { oauth?: boolean } }[]) => rows.find((r) => r.feed?.oauth)!.path;

describe('OAuth 2.0 authorization server metadata (RFC 8414) with openid-client', () => {
  const t = useTestContext();
  const servers: Server[] = [];
  let mainBase: string;
  let legacyBase: string;

  before(async () => {
    await insertFeedZone(t.ctx.db, 'berlin');
    await insertClient(t.ctx.db, CLIENT_ID, 'city', null, SECRET);
    const main = await listen();
    const legacy = await listen();
    servers.push(main.server, legacy.server);
    mainBase = main.base;
    legacyBase = legacy.base;
    // the issuers are the public URLs: they must name the ports the hosts really listen on
    const ctx: AppContext = { ...t.ctx, config: { ...t.ctx.config, publicBaseUrl: mainBase, publicLegacyUrl: legacyBase } };
    main.server.on('request', withHotPath(buildApp(ctx)));
    legacy.server.on('request', withHotPath(buildLegacyApp(ctx)));
  });

  after(async () => {
    await Promise.all(servers.map(close));
  });

  const hosts = [
    {
      name: 'main',
      issuer: () => mainBase,
      tokenPath: tokenPathOf(FEED_ENDPOINTS),
      feed: () => ({ url: `${mainBase}/v1/partner-apis/mds/berlin/vehicles`, accept: 'application/vnd.mds+json;version=2.0' }),
    },
    {
      name: 'legacy',
      issuer: () => legacyBase,
      tokenPath: tokenPathOf(LEGACY_ENDPOINTS),
      feed: () => ({ url: `${legacyBase}/en/berlin/vehicles`, accept: 'application/vnd.mds+json;version=1.2' }),
    },
  ];

  for (const host of hosts) {
    describe(`${host.name} host`, () => {
      const expected = () => ({
        issuer: host.issuer(),
        token_endpoint: `${host.issuer()}${host.tokenPath}`,
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        grant_types_supported: ['client_credentials'],
        response_types_supported: [],
        service_documentation: `${mainBase}/docs`,
      });

      it(`GET ${WELL_KNOWN} answers the metadata, public and cacheable`, async () => {
        const res = await fetch(`${host.issuer()}${WELL_KNOWN}`);
        expect(res.status).to.equal(200);
        expect(res.headers.get('content-type')).to.match(/^application\/json\b/);
        expect(res.headers.get('cache-control')).to.equal('public, max-age=3600');
        expect(res.headers.get('access-control-allow-origin')).to.equal('*');
        const body = await res.json();
        expect(body).to.deep.equal(expected());
        const validate = compile(AuthorizationServerMetadataSchema);
        expect(validate(body), JSON.stringify(validate.errors)).to.equal(true);
        expect((await fetch(`${host.issuer()}${WELL_KNOWN}`, { method: 'HEAD' })).status).to.equal(200);
      });

      it('answers other methods on the path with 405 in the feed error format', async () => {
        const res = await fetch(`${host.issuer()}${WELL_KNOWN}`, { method: 'POST' });
        expect(res.status).to.equal(405);
        expect(res.headers.get('allow')).to.match(/GET/);
        expect(((await res.json()) as { error: string }).error).to.equal('bad_param');
      });

      for (const [method, auth] of [
        ['client_secret_basic', oidc.ClientSecretBasic],
        ['client_secret_post', oidc.ClientSecretPost],
      ] as const) {
        it(`discovery() + clientCredentialsGrant() with ${method}: the token reads a feed of the host`, async () => {
          const config = await oidc.discovery(new URL(host.issuer()), CLIENT_ID, SECRET, auth(SECRET), {
            algorithm: 'oauth2',
            execute: [oidc.allowInsecureRequests],
          });
          expect({ ...config.serverMetadata() }).to.deep.equal(expected());
          const tokens = await oidc.clientCredentialsGrant(config);
          expect(tokens.token_type).to.equal('bearer');
          expect(tokens.expires_in).to.equal(900);
          const { url, accept } = host.feed();
          const res = await fetch(url, { headers: { Authorization: `Bearer ${tokens.access_token}`, Accept: accept } });
          expect(res.status, await res.clone().text()).to.equal(200);
          expect(res.headers.get('content-type')).to.include(accept);
        });
      }

      it('a wrong secret is a 401 invalid_client with a Basic challenge, as openid-client reports it', async () => {
        const config = await oidc.discovery(new URL(host.issuer()), CLIENT_ID, 'wrong', oidc.ClientSecretBasic('wrong'), {
          algorithm: 'oauth2',
          execute: [oidc.allowInsecureRequests],
        });
        const err = await oidc.clientCredentialsGrant(config).then(
          () => expect.fail('a token for a wrong secret'),
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(oidc.WWWAuthenticateChallengeError);
        const challenge = err as oidc.WWWAuthenticateChallengeError;
        expect(challenge.status).to.equal(401);
        expect(challenge.cause.map((c) => c.scheme)).to.deep.equal(['basic']);
        expect(await challenge.response.json()).to.deep.include({ error: 'invalid_client' });
      });
    });
  }

  // RFC 8414 §3.1: an issuer with a path puts the well-known segment between the authority and the
  // path. A proxy serving the main host under /mobility routes that URL to the host's own well-known
  // path (docs/feeds-access.md), and the metadata's URLs carry the prefix.
  describe('main host behind a proxy under a path (PUBLIC_BASE_URL with a path)', () => {
    let upstream: string;
    let issuer: string;

    before(async () => {
      const app = await listen();
      const proxy = await listen();
      servers.push(app.server, proxy.server);
      upstream = app.base;
      issuer = `${proxy.base}/mobility`;
      app.server.on('request', withHotPath(buildApp({ ...t.ctx, config: { ...t.ctx.config, publicBaseUrl: issuer } })));
      proxy.server.on('request', (req, res) => {
        const path = req.url === `${WELL_KNOWN}/mobility` ? WELL_KNOWN : req.url!.startsWith('/mobility/') ? req.url!.slice('/mobility'.length) : undefined;
        if (!path) {
          res.writeHead(404).end();
          return;
        }
        const out = httpRequest(`${upstream}${path}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        });
        req.pipe(out);
      });
    });

    it('discovery() finds the metadata by path insertion and the grant goes through the prefix', async () => {
      const config = await oidc.discovery(new URL(issuer), CLIENT_ID, SECRET, oidc.ClientSecretBasic(SECRET), {
        algorithm: 'oauth2',
        execute: [oidc.allowInsecureRequests],
      });
      expect(config.serverMetadata().issuer).to.equal(issuer);
      expect(config.serverMetadata().token_endpoint).to.equal(`${issuer}/v1/partner-apis/token`);
      const tokens = await oidc.clientCredentialsGrant(config);
      const res = await fetch(`${issuer}/v1/partner-apis/mds/berlin/vehicles`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
      expect(res.status).to.equal(200);
    });
  });
});
