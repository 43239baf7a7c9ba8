// Development OpenID Connect provider for the Profile & Poke API, built on oidc-provider.
// Used by `make dev`, the integration tests and the browser tests. NEVER use it in production.
// It behaves like a Keycloak realm: issuer with a path, Keycloak-style endpoint paths, JWT access
// tokens for the API audience, public PKCE login clients, confidential client-credentials clients,
// rotating refresh tokens, rp-initiated logout, DPoP-bound tokens (RFC 9449) when the token request
// carries a proof, demo accounts from accounts.json.
//
// Environment variables (all optional except IDP_API_CLIENT_SECRET):
//   IDP_HOST                       listen address and issuer host (default 127.0.0.1)
//   IDP_PORT                       listen port (default 9000; 0 picks a free port, see the ready line)
//                                  issuer = http://IDP_HOST:IDP_PORT/realms/dev
//   IDP_REDIRECT_URIS              comma-separated redirect URIs of every login client, exact match
//                                  (default http://127.0.0.1:8000/auth/callback,http://127.0.0.1:8000/)
//   IDP_POST_LOGOUT_REDIRECT_URIS  comma-separated post-logout redirect URIs of every login client
//                                  (default http://127.0.0.1:8000/)
//   IDP_API_CLIENT_SECRET          client secret of the confidential clients (required, never printed)
//   IDP_ACCESS_TOKEN_TTL           access token lifetime, seconds (default 300)
//   IDP_SHORT_ACCESS_TOKEN_TTL     access token lifetime of profile-poke-web-short (default 62)
//   IDP_REFRESH_TOKEN_TTL          refresh token lifetime, seconds from the login; rotation keeps the
//                                  remaining time (default 28800)
//   IDP_ID_TOKEN_TTL               ID token lifetime, seconds (default 300)
//   IDP_SESSION_TTL                provider (SSO) session lifetime, seconds (default 28800)
//   IDP_DEMO_PASSWORD              password of every demo account (default demo)
//   IDP_BACKCHANNEL_LOGOUT_URI     back-channel logout URI of every login client (default: none); with
//                                  it, ID tokens carry `sid` and ending a provider session POSTs a
//                                  logout token there (OpenID Connect Back-Channel Logout 1.0)
//   IDP_TOKEN_SHAPE                whose access tokens to imitate, for the provider-profile tests:
//                                  keycloak (default), okta (`scp` array, `cid`, `uid`, login in `sub`)
//                                  or auth0 (issuer ending in `/`, `aud` list, `gty` and `<client>@clients`
//                                  on client-credentials tokens)
//   IDP_INTROSPECTION_WITHOUT_SUB  1: introspection answers name no subject, like providers that send
//                                  `username` and `client_id` only (RFC 7662 makes `sub` optional):
//                                  `sub`, `azp`, `name` and `preferred_username` go, `username` comes;
//                                  and userinfo answers for the API's access tokens too (a grant with
//                                  `openid`), as Keycloak's does; see "introspection without sub"
//   IDP_REVOKE_ACCESS_ON_REFRESH   1: a refresh-token grant revokes every access token issued earlier in
//                                  the same grant, keeping the one it issues (what some providers do
//                                  when they rotate the refresh token); introspection then calls the
//                                  old ones inactive (default: off, the old token lives to its expiry)
//   IDP_DISCOVERY_OMIT             comma-separated members to leave out of /.well-known/openid-configuration
//                                  only (e.g. introspection_endpoint,revocation_endpoint); the endpoints
//                                  still answer, and RFC 8414 metadata still lists them
//   IDP_SERVER_METADATA            where RFC 8414 metadata is served: appended (default, oidc-provider's own
//                                  <issuer>/.well-known/oauth-authorization-server), rfc8414 (the well-known
//                                  segment before the path, /.well-known/oauth-authorization-server/realms/dev,
//                                  RFC 8414 3.1), both, off (404), or html: both URLs answer 200 with an HTML
//                                  sign-in page, like providers whose catch-all route shows their login
//                                  page; /__dev/stats counts them as server_metadata
//   IDP_DEMO_OTP                   the one-time code of the second authentication level (default 123456,
//                                  shown on the code page); see "two authentication levels"
//   IDP_PAR                        off: no pushed authorization requests (RFC 9126): discovery names no
//                                  pushed_authorization_request_endpoint and it answers 404 (default on,
//                                  oidc-provider's own default); see "pushed authorization requests"
//
// Two authentication levels: a login proves a password (acr urn:profile-poke:acr:pwd, amr ["pwd"]);
// when the authorization request asks for urn:profile-poke:acr:pwd-otp (in acr_values, or as the
// claims parameter's id_token.acr value(s)), the login page then asks for the one-time code and the
// login proves both (acr urn:profile-poke:acr:pwd-otp, amr ["pwd", "otp"]); a provider session at
// the lower level must log in again (prompt=none gets login_required). ID tokens, access tokens (JWT
// claims, introspection answers) carry acr, amr and auth_time.
//
// Dev-only control endpoints, outside the realm path (JSON):
//   GET  /__dev/stats          requests that reached the provider since start or the last reset
//                              (introspection and userinfo counted too)
//   POST /__dev/stats/reset    zero the counters
//   POST /__dev/rotate-keys    new signing key; keep_old=1 (query or body) keeps the old keys in the JWKS;
//                              same_kid=1 (query) gives the new key the current key's kid and drops the old
//                              key (a provider that rotates key material under a stable kid)
//   POST /__dev/delay          ms=N (query): hold every token-endpoint request N ms before answering
//                              (0 turns it off); for tests of a hanging provider
//   POST /__dev/par            mode=ok|refuse|error|hang|no_request_uri|status_200 (query): how the PAR
//                              endpoint answers (refuse: 400 invalid_request, error: 500, hang: held ms=N
//                              (default 10000) then answered, no_request_uri: 201 without it, status_200:
//                              a 200 with a request_uri); ok (the default) is the real endpoint
//   POST /__dev/stale-auth-time seconds=N (query): ID tokens report an auth_time N seconds older than the
//                              real one (0 turns it off); for the max_age tests
//   POST /__dev/token-scope    mode=listed|omitted (query): omitted leaves `scope` out of every token
//                              response, as RFC 6749 5.1 allows when it is the scope requested (some
//                              providers always do); listed (the default) sends it
//   POST /__dev/introspection  status=429|503 (query), retry_after=S (query, optional): the introspection
//                              endpoint answers that status (with Retry-After when given), like a provider
//                              that throttles its clients; status=200 (the default) is the real endpoint.
//                              Each such answer is still counted under `introspection` in the stats
//   /__dev/stats also lists, under `authorization_requests`, the sign-in parameters of each pushed
//   request (endpoint `par`) and each authorization request (endpoint `authorization`, with `pushed`
//   true when it came through a request_uri) (the last 50; never state, nonce or code_challenge)
//   /__dev/stats also lists, under `traceparents`, the W3C traceparent header of each realm request
//   that carried one ({path, traceparent, baggage}, the last 200), for the tracing tests; reset empties it
//
// On listening it prints `dev-idp ready issuer=<issuer>`; SIGTERM/SIGINT stop it with exit code 0.

import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { promisify } from 'node:util';

import { Provider, errors, interactionPolicy } from 'oidc-provider';

// ---------------------------------------------------------------------------- configuration

function fail(message) {
  console.error(`dev-idp: ${message}`);
  process.exit(2);
}

function seconds(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) fail(`${name} must be a positive number of seconds`);
  return value;
}

function uriList(name, fallback) {
  return (process.env[name] || fallback).split(',').map((s) => s.trim()).filter(Boolean);
}

const HOST = process.env.IDP_HOST || '127.0.0.1';
const PORT = Number(process.env.IDP_PORT || 9000);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) fail('IDP_PORT must be a port number');
const REDIRECT_URIS = uriList('IDP_REDIRECT_URIS', 'http://127.0.0.1:8000/auth/callback,http://127.0.0.1:8000/');
const POST_LOGOUT_URIS = uriList('IDP_POST_LOGOUT_REDIRECT_URIS', 'http://127.0.0.1:8000/');
const API_CLIENT_SECRET = process.env.IDP_API_CLIENT_SECRET;
if (!API_CLIENT_SECRET) fail('IDP_API_CLIENT_SECRET is required (the secret of the confidential clients)');
const ACCESS_TTL = seconds('IDP_ACCESS_TOKEN_TTL', 300);
const SHORT_ACCESS_TTL = seconds('IDP_SHORT_ACCESS_TOKEN_TTL', 62);
const REFRESH_TTL = seconds('IDP_REFRESH_TOKEN_TTL', 28800);
const ID_TOKEN_TTL = seconds('IDP_ID_TOKEN_TTL', 300);
const SESSION_TTL = seconds('IDP_SESSION_TTL', 28800);
const DEMO_PASSWORD = process.env.IDP_DEMO_PASSWORD || 'demo';
const BACKCHANNEL_LOGOUT_URI = process.env.IDP_BACKCHANNEL_LOGOUT_URI || '';
const TOKEN_SHAPE = process.env.IDP_TOKEN_SHAPE || 'keycloak';
if (!['keycloak', 'okta', 'auth0'].includes(TOKEN_SHAPE)) fail('IDP_TOKEN_SHAPE must be keycloak, okta or auth0');

const REALM = '/realms/dev';
const P = '/protocol/openid-connect'; // Keycloak's endpoint paths, relative to the realm
const ROUTES = {
  authorization: `${P}/auth`,
  token: `${P}/token`,
  userinfo: `${P}/userinfo`,
  jwks: `${P}/certs`,
  end_session: `${P}/logout`,
  revocation: `${P}/revoke`,
  introspection: `${P}/token/introspect`,
  pushed_authorization_request: `${P}/ext/par/request`,
};
const LOGIN_ACTIONS = '/login-actions'; // our login pages: <REALM>/login-actions/<uid>[/login]

// Resource indicator -> audience of the access tokens issued for it.
const RESOURCES = {
  'urn:profile-poke-api': 'profile-poke-api',
  'urn:profile-poke-api:opaque': 'profile-poke-api', // the same API, with opaque tokens (introspection)
  'urn:other-api': 'other-api',
};
const SVC_SCOPES = 'svc:profile.private svc:interact.poke';

// Per client: its one resource, the API scopes it may get, the OIDC scopes it may request.
const LOGIN_CLIENTS = {
  'profile-poke-web': { oidcScope: 'openid profile offline_access', apiScope: SVC_SCOPES, ttl: ACCESS_TTL },
  'profile-poke-web-short': { oidcScope: 'openid profile offline_access', apiScope: SVC_SCOPES, ttl: SHORT_ACCESS_TTL },
  'profile-poke-web-limited': { oidcScope: 'openid', apiScope: 'svc:profile.private', ttl: ACCESS_TTL },
  'profile-poke-web-opaque': {
    oidcScope: 'openid profile offline_access', apiScope: SVC_SCOPES, ttl: ACCESS_TTL, resource: 'urn:profile-poke-api:opaque',
  },
};
const POLICY = {
  ...Object.fromEntries(Object.entries(LOGIN_CLIENTS)
    .map(([id, c]) => [id, { resource: 'urn:profile-poke-api', ...c }])),
  'profile-poke-service': { resource: 'urn:profile-poke-api', apiScope: SVC_SCOPES, ttl: ACCESS_TTL },
  'other-service': { resource: 'urn:other-api', apiScope: 'other:read', ttl: ACCESS_TTL },
};
const ALL_API_SCOPES = [...new Set(Object.values(POLICY).flatMap((p) => p.apiScope.split(' ')))].join(' ');

const CLIENTS = [
  ...Object.entries(LOGIN_CLIENTS).map(([clientId, c]) => ({
    client_id: clientId,
    application_type: 'web',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: REDIRECT_URIS,
    post_logout_redirect_uris: POST_LOGOUT_URIS,
    scope: c.oidcScope,
    ...(BACKCHANNEL_LOGOUT_URI
      ? { backchannel_logout_uri: BACKCHANNEL_LOGOUT_URI, backchannel_logout_session_required: true }
      : {}),
  })),
  ...['profile-poke-service', 'other-service'].map((clientId) => ({
    client_id: clientId,
    client_secret: API_CLIENT_SECRET,
    token_endpoint_auth_method: 'client_secret_basic', // client_secret_post is accepted as well
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
  })),
];

// Demo accounts: `login` is what one types; the other fields are the claims.
const ACCOUNTS = JSON.parse(readFileSync(new URL('./accounts.json', import.meta.url), 'utf8'));
const ACCOUNTS_BY_SUB = new Map(ACCOUNTS.map((a) => [a.sub, a]));

function claimsOf(account) {
  const { login, ...claims } = account;
  return claims;
}

function digest(value) {
  return crypto.createHash('sha256').update(String(value)).digest();
}

function authenticate(username, password) {
  const account = ACCOUNTS.find((a) => a.login === username.trim().toLowerCase());
  const ok = crypto.timingSafeEqual(digest(password), digest(DEMO_PASSWORD));
  return account && ok ? account : undefined;
}

// ---------------------------------------------------------------------------- storage

// In-memory adapter without the stock LRU size limit: a Map with expiry by `expiresIn`.
const store = new Map(); // "<Model>:<id>" -> { payload, expiresAt, grantId, uid }
const byGrant = new Map(); // grantId -> Set of keys
const byUid = new Map(); // session uid -> key

function drop(key) {
  const entry = store.get(key);
  if (!entry) return;
  store.delete(key);
  const members = byGrant.get(entry.grantId);
  members?.delete(key);
  if (members?.size === 0) byGrant.delete(entry.grantId);
  if (byUid.get(entry.uid) === key) byUid.delete(entry.uid);
}

function live(key) {
  const entry = key === undefined ? undefined : store.get(key);
  if (entry?.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
    drop(key);
    return undefined;
  }
  return entry;
}

setInterval(() => { for (const key of [...store.keys()]) live(key); }, 60_000).unref();

class MemoryAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    drop(key);
    const entry = {
      payload,
      expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : undefined,
      grantId: payload.grantId,
      uid: this.model === 'Session' ? payload.uid : undefined,
    };
    store.set(key, entry);
    if (entry.grantId) {
      if (!byGrant.has(entry.grantId)) byGrant.set(entry.grantId, new Set());
      byGrant.get(entry.grantId).add(key);
    }
    if (entry.uid) byUid.set(entry.uid, key);
  }

  async find(id) {
    return live(this.key(id))?.payload;
  }

  async findByUid(uid) {
    return live(byUid.get(uid))?.payload;
  }

  async consume(id) {
    const entry = live(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    drop(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const key of [...(byGrant.get(grantId) ?? [])]) drop(key);
  }
}

// ---------------------------------------------------------------------------- revoke access on refresh

// IDP_REVOKE_ACCESS_ON_REFRESH=1: like providers that revoke the previous access token when they rotate
// the refresh token. On each successful refresh-token grant (the `grant.success` event, emitted after
// the grant saved its new tokens and before the response leaves), every access token of the same grant
// except the one just issued is dropped from the store, so introspection calls it inactive.
const REVOKE_ACCESS_ON_REFRESH = process.env.IDP_REVOKE_ACCESS_ON_REFRESH === '1';

function revokeEarlierAccessTokens(ctx) {
  const issued = ctx.oidc.entities.AccessToken;
  if (ctx.oidc.params.grant_type !== 'refresh_token' || !issued?.grantId) return;
  const kept = `AccessToken:${issued.jti}`;
  for (const key of [...(byGrant.get(issued.grantId) ?? [])]) {
    if (key.startsWith('AccessToken:') && key !== kept) drop(key);
  }
}

// ---------------------------------------------------------------------------- keys

const generateKeyPair = promisify(crypto.generateKeyPair); // the sync variant can deadlock here

async function newSigningKey() {
  const { privateKey } = await generateKeyPair('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  const kid = crypto.createHash('sha256') // RFC 7638 thumbprint
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n })).digest('base64url');
  return { ...jwk, kid, alg: 'RS256', use: 'sig' };
}

let signingKeys = []; // newest first; the first one signs
const COOKIE_KEYS = [crypto.randomBytes(32).toString('base64url')];

// POST /__dev/rotate-keys?same_kid=1: new key material under the kid in use (a stable-kid rotation).
function sameKid(query) {
  return ['1', 'true', 'yes'].includes(String(query.get('same_kid') ?? '').toLowerCase());
}

// ---------------------------------------------------------------------------- HTML

const CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'";
const CSS = 'body{font-family:sans-serif;max-width:22rem;margin:3rem auto;padding:0 1rem}'
  + 'label,input,button{display:block;width:100%;box-sizing:border-box;margin:.3rem 0}'
  + 'input,button{padding:.5rem;font-size:1rem}.error{color:#b00020}small{color:#666}';

function esc(value) {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// `body` must already be escaped HTML.
function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">`
    + `<meta name="viewport" content="width=device-width, initial-scale=1">`
    + `<title>${esc(title)} · dev identity provider</title><style>${CSS}</style></head>`
    + `<body><main><h1>${esc(title)}</h1>${body}</main></body></html>`;
}

function sendHtml(res, status, html) {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': CSP,
    'X-Frame-Options': 'DENY',
  });
  res.end(html);
}

function loginPage(uid, clientId, username, error) {
  const action = `${REALM}${LOGIN_ACTIONS}/${encodeURIComponent(uid)}/login`;
  return page('Sign in', `<p>to <strong>${esc(clientId)}</strong></p>`
    + (error ? `<p id="error" class="error" role="alert">${esc(error)}</p>` : '')
    + `<form method="post" action="${esc(action)}">`
    + `<label for="username">Username</label>`
    + `<input id="username" name="username" autocomplete="username" required autofocus value="${esc(username)}">`
    + `<label for="password">Password</label>`
    + `<input id="password" name="password" type="password" autocomplete="current-password" required>`
    + `<button type="submit">Sign in</button></form>`
    + `<p><small>Demo accounts: ${ACCOUNTS.map((a) => esc(a.login)).join(', ')}</small></p>`);
}

// ---------------------------------------------------------------------------- two authentication levels

// Self-contained: the two acr values, the login-prompt check that asks a lower-level session to log in
// again, the code page and its pending logins, and the claims tokens carry (see the header).
const ACR_PASSWORD = 'urn:profile-poke:acr:pwd';
const ACR_OTP = 'urn:profile-poke:acr:pwd-otp';
const DEMO_OTP = process.env.IDP_DEMO_OTP || '123456';
const PASSWORD_LOGIN = { acr: ACR_PASSWORD, amr: ['pwd'] };
const OTP_LOGIN = { acr: ACR_OTP, amr: ['pwd', 'otp'] };
const OTP_PENDING_MS = 10 * 60 * 1000;
const OTP_ATTEMPTS = 5;
const pendingOtp = new Map(); // interaction uid -> { sub, until, attempts }: the password was right

// Whether an authorization request's parameters (acr_values, claims) ask for the one-time-code level.
function wantsOtp(params, claims) {
  const acrValues = String(params?.acr_values ?? '').split(' ');
  let requested = claims?.id_token?.acr;
  if (requested === undefined && typeof params?.claims === 'string') {
    try { requested = JSON.parse(params.claims)?.id_token?.acr; } catch { requested = undefined; }
  }
  const claimed = [requested?.value, ...(Array.isArray(requested?.values) ? requested.values : [])];
  return acrValues.includes(ACR_OTP) || claimed.includes(ACR_OTP);
}

function twoLevelPolicy() {
  const policy = interactionPolicy.base();
  const { Check } = interactionPolicy;
  policy.get('login').checks.add(new Check('acr_otp', 'a one-time code is required', 'login_required', (ctx) => {
    const { oidc } = ctx;
    if (!wantsOtp(oidc.params, oidc.claims)) return Check.NO_NEED_TO_PROMPT;
    return oidc.session.acr === ACR_OTP ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
  }));
  return policy;
}

// acr, amr and auth_time of the login behind a token being issued (code or refresh grant), for
// access tokens; ID tokens get them from oidc-provider itself.
function authenticationClaims(ctx) {
  const entities = ctx?.oidc?.entities ?? {};
  const source = entities.AuthorizationCode ?? entities.RefreshToken;
  if (!source) return {};
  return {
    ...(source.acr ? { acr: source.acr } : {}),
    ...(source.amr ? { amr: source.amr } : {}),
    ...(source.authTime ? { auth_time: source.authTime } : {}),
  };
}

function otpPage(uid, clientId, error) {
  const action = `${REALM}${LOGIN_ACTIONS}/${encodeURIComponent(uid)}/otp`;
  return page('One-time code', `<p>to <strong>${esc(clientId)}</strong>: this sign-in needs a second step.</p>`
    + (error ? `<p id="error" class="error" role="alert">${esc(error)}</p>` : '')
    + `<form method="post" action="${esc(action)}">`
    + `<label for="otp">One-time code</label>`
    + `<input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code" required autofocus>`
    + `<button type="submit">Verify</button></form>`
    + `<p><small>Dev provider: the code is <code id="dev-otp">${esc(DEMO_OTP)}</code></small></p>`);
}

function askForOtp(res, uid, clientId, account) {
  const now = Date.now();
  for (const [key, entry] of pendingOtp) if (entry.until <= now) pendingOtp.delete(key);
  pendingOtp.set(uid, { sub: account.sub, until: now + OTP_PENDING_MS, attempts: 0 });
  return sendHtml(res, 200, otpPage(uid, clientId, ''));
}

async function otpStep(req, res, current, details) {
  const pending = pendingOtp.get(details.uid);
  if (!pending || pending.until <= Date.now() || req.method !== 'POST') {
    pendingOtp.delete(details.uid);
    return sendHtml(res, 400, page('Sign-in expired', '<p class="error">Enter your password first.</p>'));
  }
  const form = new URLSearchParams((await readBody(req)).toString('utf8'));
  if (!crypto.timingSafeEqual(digest(form.get('otp') || ''), digest(DEMO_OTP))) {
    pending.attempts += 1;
    if (pending.attempts >= OTP_ATTEMPTS) pendingOtp.delete(details.uid);
    console.log('dev-idp one-time code refused');
    return sendHtml(res, 200, otpPage(details.uid, details.params.client_id, 'Wrong code.'));
  }
  pendingOtp.delete(details.uid);
  console.log('dev-idp login ok with a one-time code');
  const result = { login: { accountId: pending.sub, ...OTP_LOGIN } };
  return current.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

// ---------------------------------------------------------------------------- provider

// Access tokens in another vendor's shape (IDP_TOKEN_SHAPE), as their token references describe.
function reshape(token, payload) {
  if (TOKEN_SHAPE === 'okta') {
    // Okta: scopes in `scp` (array), the client in `cid`, the user id in `uid`, the login in `sub`.
    payload.scp = (payload.scope || '').split(' ').filter(Boolean);
    payload.cid = payload.client_id;
    delete payload.scope;
    delete payload.client_id;
    delete payload.azp;
    delete payload.preferred_username; // Okta access tokens carry no user name by default
    if (token.accountId) {
      payload.uid = token.accountId;
      payload.sub = ACCOUNTS_BY_SUB.get(token.accountId)?.email ?? token.accountId;
    }
  } else if (TOKEN_SHAPE === 'auth0') {
    // Auth0: `aud` lists the API and the userinfo URL; machine-to-machine tokens say so twice.
    payload.aud = [payload.aud, `${issuer}userinfo`];
    if (!token.accountId) {
      payload.sub = `${payload.client_id}@clients`;
      payload.gty = 'client-credentials';
      payload.azp = payload.client_id;
    }
  }
}

// First party: every login gets everything the client may have, so no consent page.
async function grantEverything(provider, clientId, accountId, grantId) {
  let grant = grantId ? await provider.Grant.find(grantId) : undefined;
  if (!grant || grant.accountId !== accountId || grant.clientId !== clientId) {
    grant = new provider.Grant({ clientId, accountId });
  }
  const policy = POLICY[clientId];
  grant.addOIDCScope(policy.oidcScope);
  grant.addResourceScope(policy.resource, policy.apiScope);
  await grant.save();
  return grant;
}

function buildProvider(issuer) {
  const provider = new Provider(issuer, {
    adapter: MemoryAdapter,
    clients: CLIENTS,
    jwks: { keys: signingKeys },
    cookies: {
      names: { session: '_idp_session', interaction: '_idp_interaction', resume: '_idp_interaction_resume' },
      keys: COOKIE_KEYS,
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    routes: ROUTES,
    // The provider's own fetch refuses loopback addresses (SSRF protection); this dev provider's only
    // outgoing call is the back-channel logout to the app under test, which runs on 127.0.0.1.
    fetch: (url, { dispatcher, ...options }) => globalThis.fetch(url, options),
    responseTypes: ['code'],
    scopes: ['openid', 'profile', 'offline_access'],
    // Like Keycloak's default client scopes: the ID token always names the user.
    claims: {
      acr: null, amr: null, auth_time: null, iss: null, sid: null,
      openid: ['sub', 'preferred_username', 'name', 'acr', 'amr', 'auth_time'], // how the user signed in, always
      profile: ['name', 'preferred_username', 'email'],
    },
    conformIdTokenClaims: false,
    acrValues: [ACR_PASSWORD, ACR_OTP],
    async findAccount(ctx, sub) {
      const account = ACCOUNTS_BY_SUB.get(sub);
      if (!account) return undefined;
      return { accountId: sub, async claims() { return claimsOf(account); } };
    },
    async extraTokenClaims(ctx, token) {
      const account = token.accountId ? ACCOUNTS_BY_SUB.get(token.accountId) : undefined;
      if (!account) return { azp: token.clientId };
      return {
        azp: token.clientId, preferred_username: account.preferred_username, name: account.name, ...authenticationClaims(ctx),
      };
    },
    async loadExistingGrant(ctx) {
      const { client, session } = ctx.oidc;
      const grantId = ctx.oidc.result?.consent?.grantId || session.grantIdFor(client.clientId);
      return grantEverything(ctx.oidc.provider, client.clientId, session.accountId, grantId);
    },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    interactions: {
      url: async (ctx, interaction) => `${REALM}${LOGIN_ACTIONS}/${interaction.uid}`,
      policy: twoLevelPolicy(),
    },
    clientBasedCORS(ctx, origin, client) {
      return client.clientAuthMethod === 'none'
        && client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin);
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      backchannelLogout: { enabled: true },
      revocation: {
        enabled: true,
        allowedPolicy: async (ctx, client, token) => token.clientId === client.clientId,
      },
      rpInitiatedLogout: {
        enabled: true,
        async logoutSource(ctx, form) {
          // `form` is the provider's form with its xsrf input; we put the button inside it.
          const button = '<button type="submit" name="logout" value="yes">Sign out</button>';
          ctx.set('Content-Security-Policy', CSP);
          const confirm = form.replace('</form>', `${button}</form>`);
          ctx.body = page('Sign out', `<p>Sign out of the development identity provider?</p>${confirm}`);
        },
        async postLogoutSuccessSource(ctx) {
          ctx.set('Content-Security-Policy', CSP);
          ctx.body = page('Signed out', '<p>You are signed out.</p>');
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (ctx, client, oneOf) => oneOf ?? POLICY[client.clientId]?.resource,
        useGrantedResource: async () => true,
        async getResourceServerInfo(ctx, indicator, client) {
          const policy = POLICY[client.clientId];
          if (!policy || policy.resource !== indicator) throw new errors.InvalidTarget();
          return {
            audience: RESOURCES[indicator],
            scope: policy.apiScope,
            ...(indicator.endsWith(':opaque')
              ? { accessTokenFormat: 'opaque' }
              : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
          };
        },
      },
      introspection: {
        enabled: true,
        // Only the confidential clients (the API's own credentials) may introspect.
        allowedPolicy: async (ctx, client) => client.clientAuthMethod !== 'none',
      },
      // DPoP (RFC 9449), on by default in v9 and named here: a token request with a valid `DPoP`
      // proof gets `token_type: DPoP` and a JWT with `cnf.jkt` (the proof key's RFC 7638
      // thumbprint); without one, plain Bearer tokens as before. A public client's refresh token is
      // bound to the same key, so its refresh needs a proof too. No server nonces (no nonceSecret,
      // requireNonce stays false); a used proof `jti` is refused (allowReplay false).
      dPoP: { enabled: true, allowReplay: false },
      pushedAuthorizationRequests: { enabled: PAR_ENABLED },
    },
    // Proof algorithms: the default list (ES256, Ed25519, EdDSA) plus PS256 and RS256. This list
    // replaces the default, it is not merged with it.
    enabledJWA: { dPoPSigningAlgValues: ['ES256', 'PS256', 'RS256', 'Ed25519', 'EdDSA'] },
    // reshape() renames and drops claims per vendor shape but never touches `cnf` (the DPoP binding).
    formats: { customizers: { jwt: async (ctx, token, jwt) => reshape(token, jwt.payload) } },
    async renderError(ctx, out) {
      ctx.type = 'html';
      ctx.set('Content-Security-Policy', CSP);
      ctx.body = page('Error', Object.entries(out)
        .map(([key, value]) => `<p class="error"><strong>${esc(key)}</strong>: ${esc(value)}</p>`).join(''));
    },
    ttl: {
      AccessToken: (ctx, token, client) => POLICY[client.clientId]?.ttl ?? ACCESS_TTL,
      ClientCredentials: (ctx, token, client) => POLICY[client.clientId]?.ttl ?? ACCESS_TTL,
      AuthorizationCode: 60,
      IdToken: ID_TOKEN_TTL,
      // Rotation keeps the remaining lifetime, so a login's refresh tokens end REFRESH_TTL after it.
      RefreshToken: (ctx) => ctx?.oidc?.entities.RotatedRefreshToken?.remainingTTL ?? REFRESH_TTL,
      Interaction: 1800,
      Session: SESSION_TTL,
      Grant: Math.max(REFRESH_TTL, SESSION_TTL),
    },
  });
  provider.proxy = false;
  if (INTROSPECTION_WITHOUT_SUB) answerWithoutSub(provider);
  signInRequestControls(provider);

  // Keycloak-like token responses: refresh_expires_in, and the granted OIDC scopes in `scope`.
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body;
    if (ctx.oidc?.route !== 'token' || ctx.status !== 200 || !body || typeof body !== 'object') return;
    const { Grant: grant, AuthorizationCode: code, RefreshToken: refreshToken } = ctx.oidc.entities;
    const source = refreshToken ?? code;
    if (grant && source) {
      const requested = ctx.oidc.params.scope ? ctx.oidc.requestParamScopes : source.scopes;
      const scopes = [...grant.getOIDCScopeFiltered(requested).split(' '), ...(body.scope ?? '').split(' ')];
      body.scope = [...new Set(scopes.filter(Boolean))].join(' ') || undefined;
    }
    if (body.refresh_token) {
      const stored = await ctx.oidc.provider.RefreshToken.find(body.refresh_token);
      if (stored) body.refresh_expires_in = Math.max(0, stored.exp - Math.floor(Date.now() / 1000));
    }
  });

  // The error bodies are generic; the reason goes to the log (never a token or a code).
  provider.on('backchannel.success', (ctx, client) => console.log(`dev-idp backchannel logout sent to ${client.clientId}`));
  for (const event of ['grant.error', 'authorization.error', 'end_session.error', 'revocation.error',
    'backchannel.error']) {
    provider.on(event, (ctx, err) => {
      console.log(`dev-idp ${event}: ${err.error || err.message} (${err.error_detail || err.error_description || ''})`);
    });
  }
  provider.on('server_error', (ctx, err) => console.error('dev-idp server_error', err));
  if (REVOKE_ACCESS_ON_REFRESH) provider.on('grant.success', revokeEarlierAccessTokens);
  omitFromDiscovery(provider);
  return provider;
}

// ---------------------------------------------------------------------------- stats

const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'];
const COUNTED = {
  '/.well-known/openid-configuration': 'discovery',
  [ROUTES.jwks]: 'jwks',
  [ROUTES.revocation]: 'revocation',
  [ROUTES.end_session]: 'end_session', // the end-session endpoint itself, not its confirm POST
  [ROUTES.authorization]: 'authorization', // the endpoint itself, not the resume after login
};

function emptyStats() {
  return {
    token: Object.fromEntries(GRANT_TYPES.map((g) => [g, 0])),
    ...Object.fromEntries(Object.values(COUNTED).map((name) => [name, 0])),
  };
}

let stats = emptyStats();
let tokenDelayMs = 0;

// ---------------------------------------------------------------------------- introspection without sub

// IDP_INTROSPECTION_WITHOUT_SUB: a provider whose introspection answers name no subject, so the API
// must ask userinfo. Self-contained: the option, its two middlewares, and the two counters.
const INTROSPECTION_WITHOUT_SUB = ['1', 'true', 'yes'].includes((process.env.IDP_INTROSPECTION_WITHOUT_SUB || '').toLowerCase());
COUNTED[ROUTES.introspection] ??= 'introspection';
COUNTED[ROUTES.userinfo] ??= 'userinfo';
stats = emptyStats();

function answerWithoutSub(provider) {
  provider.use(async (ctx, next) => {
    // Stock userinfo refuses a token with an audience or without `openid` in its own scope, which is
    // every API access token here (the resource's scopes only); answer for those from their grant.
    if (ctx.method !== 'OPTIONS' && ctx.path === ROUTES.userinfo) {
      const [scheme, value] = (ctx.get('authorization') || '').split(' ');
      const token = scheme?.toLowerCase() === 'bearer' && value ? await provider.AccessToken.find(value) : undefined;
      const grant = token?.aud && token.grantId ? await provider.Grant.find(token.grantId) : undefined;
      const account = token?.accountId ? ACCOUNTS_BY_SUB.get(token.accountId) : undefined;
      if (grant && account && grant.getOIDCScope().split(' ').includes('openid')) {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { sub: account.sub, preferred_username: account.preferred_username, name: account.name };
        return;
      }
    }
    await next();
    const body = ctx.body;
    if (ctx.oidc?.route !== 'introspection' || ctx.status !== 200 || !body?.active) return;
    body.username = body.preferred_username; // RFC 7662's name for it; absent on app tokens
    for (const claim of ['sub', 'azp', 'name', 'preferred_username']) delete body[claim];
  });
}

// ---------------------------------------------------------------------------- pushed authorization requests

// IDP_PAR=off turns RFC 9126 off (oidc-provider enables it by default). POST /__dev/par makes the PAR
// endpoint refuse, fail or hang; POST /__dev/stale-auth-time makes ID tokens report an older auth_time
// (a provider that ignores max_age); POST /__dev/token-scope leaves `scope` out of token responses. The
// sign-in parameters of every pushed and authorization request are noted in the stats, so tests can see
// what reached the provider and by which channel.
const PAR_ENABLED = !['off', '0', 'false', 'no'].includes((process.env.IDP_PAR || '').toLowerCase());
const PAR_MODES = ['ok', 'refuse', 'error', 'hang', 'no_request_uri', 'status_200'];
const SIGN_IN_PARAMS = ['client_id', 'prompt', 'login_hint', 'max_age', 'acr_values', 'ui_locales', 'redirect_uri', 'scope'];
const REQUESTS_KEPT = 50;
let parMode = 'ok';
let parHangMs = 10_000;
let staleAuthTimeSeconds = 0;
let tokenScopeOmitted = false;

const SIGN_IN_CONTROLS = {
  '/__dev/par': (res, query) => {
    const mode = query.get('mode') || 'ok';
    const ms = Number(query.get('ms') ?? 10_000);
    if (!PAR_MODES.includes(mode) || !Number.isInteger(ms) || ms < 0 || ms > 60_000) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: `mode must be ${PAR_MODES.join('|')}, ms 0..60000` });
    }
    [parMode, parHangMs] = [mode, ms];
    return sendJson(res, 200, { par_mode: mode, ms });
  },
  '/__dev/token-scope': (res, query) => {
    const mode = query.get('mode') || 'listed';
    if (!['listed', 'omitted'].includes(mode)) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'mode must be listed|omitted' });
    }
    tokenScopeOmitted = mode === 'omitted';
    return sendJson(res, 200, { token_scope: mode });
  },
  '/__dev/stale-auth-time': (res, query) => {
    const seconds = Number(query.get('seconds'));
    if (!Number.isInteger(seconds) || seconds < 0 || seconds > 31_536_000 * 2) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'seconds must be 0..63072000' });
    }
    staleAuthTimeSeconds = seconds;
    return sendJson(res, 200, { stale_auth_time_seconds: seconds });
  },
};

async function parFault(ctx) {
  if (parMode === 'hang') {
    await new Promise((resolve) => { setTimeout(resolve, parHangMs); });
    return false;
  }
  const answers = {
    refuse: [400, { error: 'invalid_request', error_description: 'refused by /__dev/par' }],
    error: [500, { error: 'server_error' }],
    no_request_uri: [201, { expires_in: 60 }],
    status_200: [200, { request_uri: 'urn:ietf:params:oauth:request_uri:dev-status-200', expires_in: 60 }],
  };
  if (!answers[parMode]) return false;
  [ctx.status, ctx.body] = answers[parMode];
  ctx.set('Cache-Control', 'no-store');
  return true;
}

function noteSignInParams(ctx) {
  const { route, params, entities } = ctx.oidc ?? {};
  if (!params || !['authorization', 'pushed_authorization_request'].includes(route)) return;
  const seen = Object.fromEntries(SIGN_IN_PARAMS.filter((name) => params[name] !== undefined).map((name) => [name, params[name]]));
  const entry = { endpoint: route === 'authorization' ? 'authorization' : 'par', status: ctx.status, params: seen };
  if (route === 'authorization') entry.pushed = Boolean(entities?.PushedAuthorizationRequest);
  stats.authorization_requests ??= [];
  stats.authorization_requests.push(entry);
  if (stats.authorization_requests.length > REQUESTS_KEPT) stats.authorization_requests.shift();
}

function signInRequestControls(oidcProvider) {
  // Runs after the Keycloak-like token response middleware (registered later, so nested inside).
  oidcProvider.use(async (ctx, next) => {
    await next();
    if (tokenScopeOmitted && ctx.oidc?.route === 'token' && ctx.body && typeof ctx.body === 'object') {
      delete ctx.body.scope;
    }
  });
  oidcProvider.use(async (ctx, next) => {
    if (ctx.method === 'POST' && ctx.path === ROUTES.pushed_authorization_request && await parFault(ctx)) return;
    try {
      await next();
    } finally {
      noteSignInParams(ctx);
    }
  });
  const { payload } = oidcProvider.IdToken.prototype;
  oidcProvider.IdToken.prototype.payload = async function stalePayload() {
    const claims = await payload.call(this);
    if (staleAuthTimeSeconds && typeof claims.auth_time === 'number') claims.auth_time -= staleAuthTimeSeconds;
    return claims;
  };
}

// ---------------------------------------------------------------------------- introspection throttling

// POST /__dev/introspection makes the introspection endpoint answer 429 or 503 (with Retry-After), as a
// provider does that rate-limits its clients, so tests can see the API back off and keep serving what
// it knows. Self-contained: the control, its state and the answer.
const THROTTLE_STATUSES = [200, 429, 503];
let introspectionThrottle = { status: 200, retryAfter: null };

function throttleIntrospection(res, query) {
  const status = Number(query.get('status') ?? 200);
  const retryAfter = query.get('retry_after');
  if (!THROTTLE_STATUSES.includes(status) || (retryAfter !== null && !/^[0-9]{1,5}$/.test(retryAfter))) {
    return sendJson(res, 400, { error: 'invalid_request', error_description: 'status must be 200|429|503, retry_after 0..99999' });
  }
  introspectionThrottle = { status, retryAfter };
  return sendJson(res, 200, { status, retry_after: retryAfter });
}

function throttledIntrospection(res) {
  const { status, retryAfter } = introspectionThrottle;
  const headers = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };
  if (retryAfter !== null) headers['Retry-After'] = retryAfter;
  res.writeHead(status, headers);
  res.end(JSON.stringify({ error: status === 429 ? 'too_many_requests' : 'temporarily_unavailable' }));
}

// ---------------------------------------------------------------------------- endpoints missing from discovery

const DISCOVERY_OMIT = (process.env.IDP_DISCOVERY_OMIT || '').split(',').map((s) => s.trim()).filter(Boolean);
const SERVER_METADATA = process.env.IDP_SERVER_METADATA || 'appended';
if (!['appended', 'rfc8414', 'both', 'off', 'html'].includes(SERVER_METADATA)) {
  fail('IDP_SERVER_METADATA must be appended, rfc8414, both, off or html');
}
const SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';

// Leaves IDP_DISCOVERY_OMIT out of the OpenID discovery document (never the RFC 8414 one).
function omitFromDiscovery(oidcProvider) {
  if (!DISCOVERY_OMIT.length) return;
  oidcProvider.use(async (ctx, next) => {
    await next();
    if (ctx.path !== '/.well-known/openid-configuration' || ctx.status !== 200 || !ctx.body) return;
    for (const member of DISCOVERY_OMIT) delete ctx.body[member];
  });
}

// RFC 8414 metadata where IDP_SERVER_METADATA says: false answers 404, 'html' the sign-in page; the
// inserted form is served as the provider's own appended route (same document, same absolute URLs).
function routeServerMetadata(req) {
  const path = (req.url || '').split('?')[0];
  const inserted = path === `${SERVER_METADATA_PATH}${REALM}`;
  const appended = path === `${REALM}${SERVER_METADATA_PATH}`;
  if (!inserted && !appended) return true;
  if (req.method !== 'OPTIONS') stats.server_metadata = (stats.server_metadata ?? 0) + 1;
  if (SERVER_METADATA === 'html') return 'html';
  if (SERVER_METADATA === 'off' || (SERVER_METADATA !== 'both' && SERVER_METADATA !== (inserted ? 'rfc8414' : 'appended'))) {
    return false;
  }
  if (inserted) req.url = `${REALM}${SERVER_METADATA_PATH}`;
  return true;
}

// ---------------------------------------------------------------------------- HTTP layer

const BODY_LIMIT = 64 * 1024;

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > BODY_LIMIT) throw Object.assign(new Error('request body too large'), { status: 413 });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function isForm(req) {
  return (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase() === 'application/x-www-form-urlencoded';
}

// We read token request bodies (grant_type for the stats, default scope); let the provider
// read the same bytes again as if the stream were untouched.
function replayBody(req, buffer) {
  req.headers['content-length'] = String(buffer.length);
  delete req.headers['transfer-encoding'];
  Object.defineProperty(req, 'readable', { value: true, configurable: true });
  req.iterator = async function* iterator() { yield buffer; };
}

function sendJson(res, status, value) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(value));
}

let issuer;
let provider;
let providerCallback;

function useProvider(next) {
  provider = next;
  providerCallback = next.callback();
}

async function devApi(req, res, path, query) {
  if (req.method === 'GET' && path === '/__dev/stats') return sendJson(res, 200, stats);
  if (req.method === 'POST' && path === '/__dev/stats/reset') {
    stats = emptyStats();
    return sendJson(res, 200, stats);
  }
  if (req.method === 'POST' && path === '/__dev/delay') {
    const ms = Number(query.get('ms'));
    if (!Number.isInteger(ms) || ms < 0 || ms > 60_000) {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'ms must be 0..60000' });
    }
    tokenDelayMs = ms;
    return sendJson(res, 200, { token_delay_ms: ms });
  }
  if (req.method === 'POST' && SIGN_IN_CONTROLS[path]) return SIGN_IN_CONTROLS[path](res, query);
  if (req.method === 'POST' && path === '/__dev/introspection') return throttleIntrospection(res, query);
  if (req.method === 'POST' && path === '/__dev/rotate-keys') {
    const raw = (await readBody(req)).toString('utf8').trim();
    let keepOld = query.get('keep_old');
    try {
      keepOld ??= raw.startsWith('{') ? JSON.parse(raw).keep_old : new URLSearchParams(raw).get('keep_old');
    } catch {
      return sendJson(res, 400, { error: 'invalid_request', error_description: 'body is neither JSON nor a form' });
    }
    const keep = ['1', 'true', 'yes'].includes(String(keepOld ?? '').toLowerCase());
    const key = await newSigningKey();
    if (sameKid(query)) key.kid = signingKeys[0].kid;
    signingKeys = keep && !sameKid(query) ? [key, ...signingKeys] : [key];
    useProvider(buildProvider(issuer));
    console.log(`dev-idp signing key rotated kid=${key.kid} keys=${signingKeys.length}`);
    return sendJson(res, 200, { kid: key.kid });
  }
  return sendJson(res, 404, { error: 'not_found' });
}

async function loginActions(req, res, rest) {
  const [uid, action, extra] = rest.split('/'); // uids are URL-safe (nanoid)
  const current = provider;
  let details;
  try {
    details = await current.interactionDetails(req, res);
  } catch {
    return sendHtml(res, 400, page('Sign-in expired', '<p class="error">This sign-in request expired or is unknown.'
      + ' Go back to the application and sign in again.</p>'));
  }
  if (details.uid !== uid || extra !== undefined) return sendHtml(res, 404, page('Not found', ''));
  const clientId = details.params.client_id;

  if (details.prompt.name === 'consent') {
    const grant = await grantEverything(current, clientId, details.session.accountId, details.grantId);
    return current.interactionFinished(req, res, { consent: { grantId: grant.jti } });
  }
  if (details.prompt.name !== 'login') {
    return sendHtml(res, 400, page('Error', `<p class="error">Unsupported prompt ${esc(details.prompt.name)}</p>`));
  }
  if (action === 'otp') return otpStep(req, res, current, details);
  if (req.method === 'GET' && action === undefined) return sendHtml(res, 200, loginPage(uid, clientId, '', ''));
  if (req.method !== 'POST' || action !== 'login') return sendHtml(res, 405, page('Method not allowed', ''));

  const form = new URLSearchParams((await readBody(req)).toString('utf8'));
  const username = form.get('username') || '';
  const account = authenticate(username, form.get('password') || '');
  if (!account) {
    console.log('dev-idp login refused');
    return sendHtml(res, 200, loginPage(uid, clientId, username, 'Invalid username or password.'));
  }
  console.log(`dev-idp login ok login=${account.login}`);
  if (wantsOtp(details.params)) return askForOtp(res, uid, clientId, account);
  const result = { login: { accountId: account.sub, ...PASSWORD_LOGIN } };
  return current.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

async function handle(req, res) {
  const metadataRoute = routeServerMetadata(req);
  if (!metadataRoute) return sendJson(res, 404, { error: 'not_found' });
  if (metadataRoute === 'html') return sendHtml(res, 200, page('Sign in', '<p>Sign in to continue.</p>'));
  const url = new URL(req.url, 'http://dev-idp.invalid');
  const path = url.pathname;
  if (path.startsWith('/__dev/')) return devApi(req, res, path, url.searchParams);
  if (path !== REALM && !path.startsWith(`${REALM}/`)) return sendJson(res, 404, { error: 'not_found' });

  const sub = path.slice(REALM.length) || '/';
  if (sub.startsWith(`${LOGIN_ACTIONS}/`)) return loginActions(req, res, sub.slice(LOGIN_ACTIONS.length + 1));

  if (req.method !== 'OPTIONS') {
    if (COUNTED[sub]) stats[COUNTED[sub]] += 1;
    if (sub === ROUTES.introspection && introspectionThrottle.status !== 200) return throttledIntrospection(res);
    if (sub === ROUTES.token && req.method === 'POST' && isForm(req)) {
      const params = new URLSearchParams((await readBody(req)).toString('utf8'));
      const grantType = params.get('grant_type');
      if (GRANT_TYPES.includes(grantType)) stats.token[grantType] += 1;
      if (tokenDelayMs) await new Promise((resolve) => { setTimeout(resolve, tokenDelayMs); });
      // Like Keycloak: client credentials without `scope` get the client's API scopes (the
      // provider intersects this with the client's resource scopes).
      if (grantType === 'client_credentials' && !params.get('scope')) params.set('scope', ALL_API_SCOPES);
      replayBody(req, Buffer.from(params.toString(), 'utf8'));
    }
  }
  // Mount the provider under the realm path: it sees its own routes, and rebuilds absolute
  // URLs from req.originalUrl.
  req.originalUrl = req.url;
  req.url = req.url.slice(REALM.length) || '/';
  return providerCallback(req, res);
}

const server = http.createServer((req, res) => {
  const started = Date.now();
  const path = (req.url || '').split('?')[0];
  res.on('finish', () => console.log(`dev-idp ${req.method} ${path} ${res.statusCode} ${Date.now() - started}ms`));
  if (!providerCallback) return sendJson(res, 503, { error: 'starting' });
  handle(req, res).catch((err) => {
    if (!err.status) console.error('dev-idp internal error', err);
    if (!res.headersSent) sendJson(res, err.status || 500, { error: err.status ? err.message : 'internal_error' });
    else res.destroy();
  });
});

// ---------------------------------------------------------------------------- traceparent record

// Self-contained: a listener that runs before the main one and notes every incoming traceparent
// header, and the baggage header beside it (null when none), never a query string, in the stats,
// which a reset replaces and so empties.
const TRACEPARENTS_KEPT = 200;
server.prependListener('request', (req) => {
  const traceparent = req.headers.traceparent;
  const path = (req.url || '').split('?')[0];
  if (!traceparent || path.startsWith('/__dev/')) return;
  stats.traceparents ??= [];
  const baggage = req.headers.baggage === undefined ? null : String(req.headers.baggage);
  stats.traceparents.push({ path, traceparent: String(traceparent), baggage });
  if (stats.traceparents.length > TRACEPARENTS_KEPT) stats.traceparents.shift();
});

function shutdown(signal) {
  console.log(`dev-idp stopping (${signal})`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 1000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

signingKeys = [await newSigningKey()];
server.on('error', (err) => fail(`cannot listen on ${HOST}:${PORT}: ${err.message}`));
server.listen(PORT, HOST, () => {
  const { port } = server.address();
  const host = HOST.includes(':') ? `[${HOST}]` : HOST;
  issuer = `http://${host}:${port}${REALM}${TOKEN_SHAPE === 'auth0' ? '/' : ''}`;
  useProvider(buildProvider(issuer));
  console.log(`dev-idp ready issuer=${issuer}`);
});
