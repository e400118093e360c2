// An OpenID Connect provider on loopback for the tests, built from panva's oidc-provider: it issues JWT access
// tokens (RS256, with a kid) to clients by the client-credentials grant, for one resource server (the
// scan-planner's audience), with each client's groups as a `groups` claim. tests/oidc_provider.py starts it;
// scripts/setup.sh installs oidc-provider (8.8.x, which supports Node.js 18 to 22) into .venv/oidc-provider.
//
//   node provider.mjs --port PORT --clients CLIENTS.json --jwks JWKS.json [--audience scan-planner]
//                     [--ttl 3600] [--garbage-jwks] [--modules DIR/node_modules]
//   node provider.mjs keygen        (prints a new private RSA JWK, its kid the key's thumbprint)
//
// CLIENTS.json: [{"client_id": "...", "client_secret": "...", "groups": ["..."]}, ...]
// JWKS.json: {"keys": [private JWKs]}; the first key signs, all of them are published at /jwks.
// --garbage-jwks: /jwks answers 200 with a body that is not a JWKS (tests of an unusable key endpoint).
// Each request is logged to stdout as `request METHOD PATH STATUS`.
import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

if (process.argv[2] === 'keygen') {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  const thumbprint = JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n }); // RFC 7638
  const kid = crypto.createHash('sha256').update(thumbprint).digest('base64url');
  process.stdout.write(`${JSON.stringify({ ...jwk, kid, alg: 'RS256', use: 'sig' })}\n`);
  process.exit(0);
}

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    clients: { type: 'string' },
    jwks: { type: 'string' },
    audience: { type: 'string', default: 'scan-planner' },
    ttl: { type: 'string', default: '3600' },
    'garbage-jwks': { type: 'boolean', default: false },
    modules: {
      type: 'string',
      default: process.env.OIDC_PROVIDER_MODULES
        ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.venv', 'oidc-provider', 'node_modules'),
    },
  },
});
for (const required of ['port', 'clients', 'jwks']) {
  if (args[required] === undefined) {
    console.error(`provider.mjs: --${required} is required`);
    process.exit(2);
  }
}

// oidc-provider is ESM only and lives outside this directory (in .venv), so it is imported by its file path
const entry = pathToFileURL(join(resolve(args.modules), 'oidc-provider', 'lib', 'index.js')).href;
const { default: Provider, errors } = await import(entry);

const port = Number(args.port);
const ttl = Number(args.ttl);
const { audience } = args;
// a resource indicator must be an absolute URI: the audience itself when it is one, else urn:<audience>
const resource = URL.canParse(audience) ? audience : `urn:${audience}`;
const clients = JSON.parse(readFileSync(args.clients, 'utf8'));
const groups = new Map(clients.map((client) => [client.client_id, client.groups ?? []]));
const jwks = JSON.parse(readFileSync(args.jwks, 'utf8'));

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: clients.map((client) => ({
    client_id: client.client_id,
    client_secret: client.client_secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    // either method is accepted at the token endpoint (form fields or HTTP Basic); this is what is registered
    token_endpoint_auth_method: 'client_secret_post',
  })),
  jwks,
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A request without `resource` (PyIceberg and Iceberg Java send only `scope=catalog`) gets this resource
      // server: without a default, oidc-provider would issue an opaque token, for no audience. Scopes other than
      // `catalog` are dropped from the token, not refused.
      defaultResource: async (_ctx, _client, oneOf) => oneOf ?? resource,
      getResourceServerInfo: async (_ctx, resourceIndicator) => {
        if (resourceIndicator !== resource) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: 'catalog',
          audience,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: async (_ctx, token) => ({ groups: groups.get(token.clientId) ?? [] }),
  ttl: { ClientCredentials: ttl, AccessToken: ttl },
});

provider.use(async (ctx, next) => {
  if (args['garbage-jwks'] && ctx.path === '/jwks') {
    ctx.type = 'application/json';
    ctx.body = 'this is not a JWKS';
  } else {
    await next();
  }
  process.stdout.write(`request ${ctx.method} ${ctx.path} ${ctx.status}\n`);
});

provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${provider.issuer}\n`);
});
const shutdown = () => process.exit(0);
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
