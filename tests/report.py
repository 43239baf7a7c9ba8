"""Writes the "Security and reliability" report from the test run itself: each case tried, the test
that proves it (module::test id) and how it ended. Active when SECURITY_REPORT names the Markdown file
to write (make test names one under .reports/ and compares it with docs/security-report.md); it
writes that file only."""

import os
from collections import defaultdict
from pathlib import Path

# A table, one row per section (prefix, title, what was tried): kept as rows, not one value a line.
SECTIONS = [
    ("tests/unit/tokens/test_profile_", "Identity-provider profiles",
     "Keycloak, Auth0, Okta, Entra ID, Cognito token shapes: user and app tokens, missing scope, issuer, "
     "vendor quirks; Okta and Auth0 shapes on the real dev provider"),
    ("tests/integration/test_provider_shapes.py", "Identity-provider profiles", ""),
    ("tests/unit/tokens/test_dpop.py", "Sender-constrained tokens (DPoP, RFC 9449)",
     "one proof per rule of section 4.3 (typ, alg, jwk, signature, htm, htu, iat, jti, ath, jkt, one header, "
     "replay), the Bearer downgrade, challenges, server nonces, htu behind a proxy"),
    ("tests/unit/test_dpop_reasons.py", "Sender-constrained tokens (DPoP, RFC 9449)", ""),
    ("tests/unit/tokens/test_dpop_bounds.py", "DPoP at the edges: public origin, text members, bounded proof ids",
     "htu from PUBLIC_ORIGINS, never from Host or X-Forwarded-Host (a proof captured at another deployment); "
     "non-ASCII ath, nonce, jti and other members refused as malformed (was a 500); proof ids per key thumbprint "
     "for the iat window only, RATE_LIMIT_DPOP_PROOFS per key (429, nothing stored; a replay spends nothing); "
     "an introspection answer saying token_type DPoP without cnf refused"),
    ("tests/integration/test_dpop_bounds.py", "DPoP at the edges: public origin, text members, bounded proof ids", ""),
    ("tests/unit/tokens/test_fair_introspection.py", "Opaque tokens fair under floods from many networks",
     "junk tokens from many addresses and networks (IPv4 /24s, a residential IPv6 /56, /48s, NAT64) through the "
     "trusted proxy hop while an unrelated client's known and new tokens get 200; one provider call per token for "
     "every worker and instance; a token seen valid asked again without admission; bounds per address and "
     "network, each network's share of a spent pool; the provider's 429/503 Retry-After honoured everywhere "
     "while known answers are served"),
    ("tests/integration/test_fair_introspection.py", "Opaque tokens fair under floods from many networks", ""),
    ("tests/unit/test_fair_addresses.py", "Counting networks",
     "IPv4 address and /24; IPv6 /64, /56 and /48; NAT64 (64:ff9b::/96) by the IPv4 address it carries; mapped, "
     "scoped and unparsable addresses"),
    ("tests/integration/test_dpop", "Sender-constrained tokens (DPoP, RFC 9449)", ""),
    ("tests/unit/provider/test_signing_keys.py", "Signing keys and opaque tokens",
     "JWKS max age, malformed entries, key rotation on the real provider, RFC 7662 introspection, "
     "revocation within the cache TTL, introspection outage"),
    ("tests/integration/test_key_rotation.py", "Signing keys and opaque tokens", ""),
    ("tests/integration/test_introspection.py", "Signing keys and opaque tokens", ""),
    ("tests/unit/provider/test_dropped_connections.py", "Signing keys and opaque tokens", ""),
    ("tests/unit/tokens/test_introspection.py", "Signing keys and opaque tokens", ""),
    ("tests/unit/provider/test_provider_refusals.py", "Refresh refusal vs outage",
     "400/401 with or without a body end the session; 5xx, timeout, refused connection keep it; logout state"),
    ("tests/unit/store/test_profile_linking.py", "Safe profile linking",
     "no claim by username, Kelvin sign, clashes logged with both subjects, emails never usernames"),
    ("tests/unit/tokens/", "Hostile access tokens",
     "alg none, HS256 with the RSA key, unknown/flooded kid, jku/x5u/jwk headers, crit, expired, nbf/iat "
     "in the future, wrong iss/aud, ID token as access token, missing sub, bad scope, > 8 KB, garbage"),
    ("tests/unit/auth/test_signin_conformance.py", "Sign-in conformance (RP certification cases)",
     "ID tokens with bad iss/aud/signature/alg/nonce/iat/sub/exp/azp, kid-less keys, key rotation, PKCE, "
     "code injection, RFC 9207 iss, token endpoint errors"),
    ("tests/unit/provider/test_id_token_claims.py", "Sign-in conformance (RP certification cases)", ""),
    ("tests/unit/sessions/test_session_tokens.py", "Session tokens and the refresh protocol (fakeredis)",
     "single refresher, waiters, timeouts, lost compare-and-set, invalid_grant; a refreshed ID token is "
     "verified and must name the session's user"),
    ("tests/integration/test_signin.py", "Browser-side attacks and the BFF flow",
     "open redirects, CSRF on logout and API, foreign and replayed state, error callbacks (provider text only "
     "for our own state), RFC 9207 iss on success and error, withheld scopes, cookie flags, SPA exchange with a "
     "foreign redirect_uri"),
    ("tests/integration/test_bff_session.py", "Browser-side attacks and the BFF flow", ""),
    ("tests/unit/auth/test_exchange_request.py", "Browser-side attacks and the BFF flow", ""),
    ("tests/browser/", "Browser end to end (headless Chromium)",
     "sign in, profile, poke, cooldown, sign out; no token in cookies or web storage; your sessions from two "
     "browsers, one ending the other"),
    ("tests/integration/test_refresh.py", "Refresh under concurrency",
     "20 concurrent requests near expiry, rotation, invalid_grant, provider outage"),
    ("tests/integration/test_instances.py", "Several instances", "two gunicorn instances over one Redis"),
    ("tests/integration/test_session_lifetime.py", "Session lifetime", "idle, absolute, refresh-token bound"),
    ("tests/integration/test_faults.py", "Faults", "Redis stopped and slowed, identity provider gone"),
    ("tests/integration/test_fuzz.py", "Fuzzing (schemathesis, seeded)",
     "valid and invalid generated requests to every /api/v1 and /auth operation of the OpenAPI document, "
     "as a user token, an app token, a browser's script (cookie + X-CSRF) and no credentials; each accepted "
     "call repeated without its credentials; no-store and no extra member in every /auth answer"),
    ("tests/integration/test_logs.py", "Secrets in logs", "every token, code, verifier and cookie value"),
    ("tests/integration/test_session_security.py", "Your sessions and revocation",
     "list, end one (its refresh token gets invalid_grant), another user's id is 404, end all others; "
     "the refresh token revoked at sign-out gets invalid_grant, and that of a session a new sign-in in the "
     "same browser replaces (another user's, or the same user's through a new provider session), while a "
     "sign-in through the same provider session (single sign-on) keeps the new session's refresh token alive"),
    ("tests/unit/auth/test_session_opener.py", "Your sessions and revocation", ""),
    ("tests/integration/test_bounds.py", "Bounded by design",
     "5 pending sign-ins per browser, return_to over 512, rate limits per client address (429 + Retry-After), "
     "junk exchanges vs the token endpoint, Redis out of memory (noeviction) is 503, a pickle in a session key"),
    ("tests/unit/test_hardening.py", "Bounded by design", ""),
    ("tests/integration/test_provider_hang.py", "Provider hang", "bearer calls keep flowing while refreshes hang"),
    ("tests/integration/test_server_keepalive.py", "Keep-alive clients",
     "200 idle kept-alive connections hold up no request and no stop, nor do clients that keep their socket "
     "after Connection: close; 50 racing pokes under the shipped config"),
    ("tests/integration/test_server_slow_clients.py", "Slow clients",
     "24 silent connections, 8 unfinished header blocks and 8 bodies stalled after 16 bytes held open beside a "
     "normal client (one worker, shipped config); clients trickling headers or a body cut off at their deadline; "
     "100-continue, pipelining, chunked and oversized bodies"),
    ("tests/unit/test_request_buffer.py", "Slow clients", ""),
    ("tests/integration/test_server_smuggling.py", "Request smuggling and the server's own parse",
     "a request hidden in a body, two lengths, a signed length, length plus chunked, a blank before the colon, "
     "a folded or unknown coding, a bare LF, disagreeing schemes (raw sockets, shipped config); ~6,700 crafted "
     "heads fed to the lean parse and to gunicorn's parser, which must read alike whenever the lean parse takes one"),
    ("tests/unit/test_lean_request", "Request smuggling and the server's own parse", ""),
    ("tests/unit/test_lean_environ.py", "Request smuggling and the server's own parse", ""),
    ("tests/unit/test_answer.py", "Request smuggling and the server's own parse", ""),
    ("tests/unit/test_lean_serving.py", "Request smuggling and the server's own parse", ""),
    ("tests/integration/test_server_stop.py", "A worker that stops",
     "TERM to the worker and INT to the process group while every thread waits on a provider that does not "
     "answer and clients stall mid-headers and mid-body: gone within graceful_timeout"),
    ("tests/integration/test_metrics.py", "Metrics",
     "route templates and outcomes as labels, never a secret; METRICS_TOKEN"),
    ("tests/integration/test_api.py", "API contract", "every row of the error table, cooldown, 50 racing pokes"),
    ("tests/integration/test_backchannel.py", "Tokens at rest and back-channel logout (real provider)",
     "SCAN of every Redis key after a real sign-in finds no token and no cookie; the provider's end-session "
     "ends the BFF session within a second"),
    ("tests/unit/sessions/test_tokens_at_rest.py", "Tokens at rest (AES-GCM, HKDF from cookie + SECRET_KEY)",
     "sealed records, plaintext or foreign records end the session with 401, SECRET_KEY_FALLBACKS rotation"),
    ("tests/unit/sessions/test_sealing.py", "Tokens at rest (AES-GCM, HKDF from cookie + SECRET_KEY)", ""),
    ("tests/unit/sessions/test_session_records.py", "Tokens at rest (AES-GCM, HKDF from cookie + SECRET_KEY)", ""),
    ("tests/unit/sessions/test_backchannel_logout.py", "Back-channel logout tokens",
     "replayed jti, wrong aud/iss, a nonce, missing or other events, iat too old or in the future, wrong typ, "
     "forged signature; sid, sub-only and unmatched tokens"),
    ("tests/integration/test_audit_story.py", "The whole audit story",
     "a refresh the provider refuses writes refresh.refused with its error code before the session.ended it "
     "causes; a logout token replayed, forged or missing is backchannel.refused with its reason; sessions ended "
     "idle, absolute or malformed are told once when the browser comes back; a sign-in replacing a session, and "
     "failed sign-ins naming the subject and user where known; exact lines, in order, never a secret"),
    ("tests/unit/test_audit_vocabulary.py", "The whole audit story", ""),
    ("tests/integration/test_provider_habits.py", "Provider habits",
     "token responses without scope (RFC 6749 5.1) grant what was asked for, at sign-in and at the SPA exchange, "
     "while one listing fewer is judged by what it lists; RFC 8414 metadata answered with 200 and an HTML page is "
     "not offered: one warning per gunicorn worker naming OIDC_REVOCATION_ENDPOINT, no error, no sign-out "
     "calls it an outage"),
    ("tests/integration/test_audit", "Audit events and request ids",
     "a real sign-in, failed sign-ins, sign-out, ending your sessions, back-channel logout, rate limits and every "
     "operator command each write exactly one event; counters at 0 from the start, refusals counted by reason"),
    ("tests/unit/test_request_ids.py", "Audit events and request ids", ""),
    ("tests/unit/test_audit", "Audit events and request ids", ""),
    ("tests/integration/test_tracing.py", "Traces (OpenTelemetry)",
     "spans received by a real OTLP/HTTP receiver from two gunicorn workers: route names, parents, the incoming "
     "traceparent continued and one sent to the provider, the trace id in log lines, no secret in any attribute; "
     "off and free without an endpoint"),
    ("tests/unit/test_tracing_setup.py", "Traces (OpenTelemetry)", ""),
    ("tests/integration/test_tracing_safe.py", "Tracing never fails a request; spans carry only what is allowed",
     "the shipped gunicorn config with parentbased_traceidratio 0.1: unsampled and sampled callers, then plain "
     "requests to every thread of both workers, all answered; gunicorn's own lines (access log, malformed request "
     "line) without a query; every header captured: only the allow-list kept, the login's and form sign-out's "
     "redirects without their query, a caller's baggage neither recorded nor sent to the provider"),
    ("tests/unit/test_traced_app.py", "Tracing never fails a request; spans carry only what is allowed",
     ""),
    ("tests/integration/test_cli", "Operator commands (flask users)",
     "the README's way beside make dev: make dev's env file sourced in a real bash; output alone on stdout "
     "(JSON that parses), audit lines on stderr; a configuration error one line naming the setting, exit 2; "
     "refusals exit 1 with nothing written, an unreachable Redis one line; import progress on a terminal (a pty) "
     "and none when piped"),
    ("tests/integration/test_import_batches.py", "Operator commands (flask users)",
     "2,000 records in a few round trips per batch; a record refused in a later batch undoes the earlier "
     "batches and its own"),
    ("tests/failover/", "A Redis master that dies (issue 29)",
     "a cluster master killed under load 50 ms after its replica was cut off, CLUSTER FAILOVER, a Sentinel master "
     "killed the same way, under sign-ins, cookie calls with refreshes, bearer, DPoP and pokes: only 503 with "
     "Retry-After, errors ending with the promotion, no acknowledged poke, session or refresh lost, nobody signed "
     "out; WAIT's bound and cost; each failover refusal a 503; rotated tokens that met a dead master stored once "
     "Redis answers, the refresh lock held until then"),
    ("tests/unit/test_redis_failover.py", "A Redis master that dies (issue 29)", ""),
    ("tests/unit/store/test_pending_rotations.py", "A Redis master that dies (issue 29)", ""),
    ("tests/", "Everything else", "configuration, headers, OpenAPI, probes"),
]  # fmt: skip
# Issue 19, robust with every provider and under abuse: one section per point, found by file name
# (test_robust_<subject>...) wherever the test lives, before the path prefixes above.
ROBUST_SECTIONS = [
    ("test_robust_endpoints", "Endpoints a provider lists elsewhere",
     "introspection and revocation endpoints from RFC 8414 metadata or explicit settings; a missing one named "
     "by /readyz and the API, never a per-request outage"),
    ("test_robust_introspection", "Opaque tokens: answers without sub, junk-token floods",
     "subject from userinfo when introspection omits it; refusals remembered; provider calls bounded per "
     "client and in total (429/503 + Retry-After); one 401 for every refused token"),
    ("test_robust_refresh_revocation", "Old access token revoked at refresh",
     "8 simultaneous cookie requests while the provider revokes the old token: one refresh, all 200"),
    ("test_robust_cookie_retry", "Old access token revoked at refresh", ""),
    ("test_robust_session_retry", "Old access token revoked at refresh", ""),
    ("test_robust_signin", "Sign-in floods from many addresses",
     "no shared bound: 10,800 sign-ins (more than the old 10,000 bound) from 360 clients in IPv4 /24s and "
     "IPv6 /64s, /56s, /48s through the trusted proxy hop under gunicorn, none refused for another's, a new "
     "browser signs in meanwhile, Redis keeps only rate-limit windows; IPv6 clients counted per /64; many "
     "addresses of one IPv4 /24, IPv6 /56 or /48, or NAT64 share their network's bound on starts, callbacks and "
     "exchanges (429 naming the network) while a browser of another network signs in"),
    ("test_robust_login_cookies", "Pending sign-ins in the browser (sealed cookies)",
     "what a login cookie keeps and its size, 5 and 4 KB per browser with the oldest dropped, expired, "
     "tampered, moved, cut, oversized, reshaped and retired-key cookies and forged states refused as unknown "
     "with no exchange, SECRET_KEY rotation, a replay or two racing callbacks make one exchange, a failed "
     "exchange leaves nothing, callbacks rate-limited"),
    ("test_used_states", "Pending sign-ins in the browser (sealed cookies)", ""),
    ("test_robust_foreign_callback", "A known state cannot cancel a sign-in",
     "a state learned from browser A sent from browser B with A's code, alone or with an error: no exchange, "
     "nothing written, A's cookie untouched; A then signs in (real provider)"),
    ("test_robust_ipv6", "Sign-in floods from many addresses", ""),
    ("test_robust_flood_all", "Every key a flood can make is bounded, and proven",
     "every entry point flooded at once through the trusted proxy hop under the shipped gunicorn config, defaults "
     "everywhere, a 16 MB Redis under noeviction: 81 clients in IPv4 /24s, IPv6 /64s of /56s and /48s, and NAT64 "
     "send sign-in starts (one /24 past its network's bound), forged, foreign and replayed callbacks, junk codes "
     "on real pending sign-ins, junk exchanges, JWTs, DPoP proofs and logout tokens, valid proofs from three keys "
     "past their bound, junk opaque tokens at an introspection instance; each gets its documented answer, a "
     "signed-in user (refresh, poke, bearer, DPoP, opaque) and a new user never see a 429, 503 or 500; Redis stays "
     "under the bound computed from make sizing's cost of each kind of key, each kind within its count, every "
     "key left with its time to live"),
    ("test_robust_addresses", "Sign-in floods from many addresses", ""),
    ("test_robust_import_interleavings", "Import as the contract says, raced by first sign-ins",
     "a record without sub updates a signed-in user's profile and keeps its link; `flask users import` put in "
     "each gap of alice's real first sign-in and she in each of its gaps (same username, another subject, "
     "another username for her subject, --relink): one subject per profile, the loser changes nothing and says why"),
    ("test_robust_import", "One profile, one subject",
     "import and first sign-in raced 50 rounds per case, at the store and end to end against the dev provider "
     "(same and other usernames and subjects, no sub); a SCAN after every round finds no subject on two profiles "
     "and no profile on two subjects; the loser changes nothing and says why"),
    ("test_robust_sealed", "Malformed sealed session records", "each malformation ends the session, never a 500"),
    ("test_robust_session_index", "Malformed session index",
     "junk fields in a user's and a provider session's index (not JSON, not UTF-8, wrong types, missing or "
     "impossible fields, nested 100,000 deep, 10 MB): your sessions and the next real sign-in answer 200/302, "
     "the junk is gone, the good sessions still listed"),
    ("test_robust_forwarding", "Forwarding headers", "no client header changes the route or its path"),
    ("test_robust_keys", "Same kid, new key", "a signature failure on a known kid re-reads the JWKS, rate-limited"),
    ("test_signin_par", "Pushed authorization requests (PAR)",
     "the redirect carries client_id and request_uri only; a refused, failing, slow or malformed PAR answer is a "
     "502 with nothing pending and no fallback, logged with why (never the body); a 307/308 is not followed; a "
     "start the rate limit refuses is never pushed; state is base64url"),
    ("test_signin_params", "Per-request sign-in parameters",
     "prompt, login_hint, max_age, acr_values, ui_locales: each bad value a 400 naming it with nothing written"),
    ("test_signin_silent", "Silent sign-in", "prompt=none declined returns to the page with signin_error"),
    ("test_signin_error_redirect", "Silent sign-in", ""),
    ("test_signin_max_age", "What a sign-in proves",
     "a stale auth_time with max_age fails the sign-in: older than max_age plus the leeway, further ahead than "
     "the leeway, missing or not a number"),
    ("test_signin_proven", "What a sign-in proves", ""),
    ("test_signin_session", "A session check that does not keep the session alive",
     "polling /auth/session past the idle timeout signs the tab out; API calls keep it in"),
    ("test_signin_step", "Step-up (RFC 9470)",
     "a token or session with the wrong acr or a stale auth_time gets the insufficient_user_authentication "
     "challenge; the right one passes; scope, user and account are checked first"),
    ("test_signin_settings", "Per-request sign-in parameters", ""),
]  # fmt: skip
OUTCOMES = ("passed", "failed", "skipped")

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.nodeid] = report.outcome if _outcomes.get(report.nodeid) != "failed" else "failed"


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get("SECURITY_REPORT")
    if target and _outcomes:
        Path(target).write_text(_report(_summary()))


def _section(nodeid: str) -> str:
    name = nodeid.split("::")[0].rpartition("/")[2]
    robust = next((title for prefix, title, _ in ROBUST_SECTIONS if name.startswith(prefix)), None)
    return robust or next(title for prefix, title, _ in SECTIONS if nodeid.startswith(prefix))


def _summary() -> list[tuple[str, str, list]]:
    """(title, what was tried, [(nodeid, outcome)]) for every section that ran."""
    grouped = defaultdict(list)
    for nodeid, outcome in _outcomes.items():
        grouped[_section(nodeid)].append((nodeid, outcome))
    described = {}
    for _, title, tried in SECTIONS[:-1] + ROBUST_SECTIONS + SECTIONS[-1:]:  # "Everything else" last
        if not described.get(title):  # placed where the title first appears, told by its first description
            described[title] = tried
    return [(title, tried, sorted(grouped[title])) for title, tried in described.items() if grouped.get(title)]


def _claim(nodeid: str) -> str:
    """What a test shows, in words: its name without `test_`, and its case id when parametrized."""
    name = nodeid.split("::")[-1]
    function, _, case = name.partition("[")
    claim = function.removeprefix("test_").replace("_", " ")
    return f"{claim}: {case[:-1]}" if case else claim


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _report(rows) -> str:
    parts = [
        "# Security and reliability report\n\n",
        "Generated by `make test` (tests/report.py) from the run itself; do not edit by hand. "
        "Each row names the test that proves it and how that test ended in the run.\n\n",
        "| section | tests | " + " | ".join(OUTCOMES) + " |\n",
        "|---|---|---|---|---|\n",
    ]
    for title, tried, cases in rows:
        modules = sorted({nodeid.split("::")[0] for nodeid, _ in cases})
        counts = [str(sum(outcome == name for _, outcome in cases)) for name in OUTCOMES]
        parts.append(
            f"| **{title}**: {tried} ({', '.join(f'`{m}`' for m in modules)}) | {len(cases)} | "
            + " | ".join(counts)
            + " |\n"
        )
    for title, _, cases in rows:
        parts.append(f"\n## {title}\n\n| what is shown | proven by | outcome |\n|---|---|---|\n")
        parts.extend(f"| {_cell(_claim(nodeid))} | `{_cell(nodeid)}` | {outcome} |\n" for nodeid, outcome in cases)
    return "".join(parts)
