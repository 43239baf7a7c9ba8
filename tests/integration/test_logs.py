"""The logs never carry a secret: sign-in, refresh, API calls and sign-out under gunicorn with
DEBUG logging, then every log and audit line is searched for every token, code, verifier and cookie value.
(tests/conftest.py searches every line of the whole run the same way.)"""

import json
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from app.auth.pending import USED_UP
from dev import oidc_driver
from dev.services import free_port
from tests.helpers.real_services import PASSWORD, integration_env, start_live_app, start_own_idp
from tests.helpers.settings import CSRF
from tests.helpers.signin import opened_sign_in, stored_tokens

pytestmark = pytest.mark.integration


def test_no_secret_appears_in_any_log_line(workdir, redis_url, redis):
    port = free_port()
    idp_server, provider = start_own_idp(workdir, [port], IDP_SHORT_ACCESS_TOKEN_TTL="61")
    env = integration_env(provider, redis_url, OIDC_CLIENT_ID="profile-poke-web-short", LOG_LEVEL="DEBUG")
    app_server, live = start_live_app(env, port, workdir)
    base = live.url
    secrets_seen = []
    try:
        http = requests.Session()
        authorize = http.get(f"{base}/auth/login", allow_redirects=False, timeout=10).headers["Location"]
        callback = oidc_driver.login_at_idp(http, authorize, "alice", PASSWORD)
        state = parse_qs(urlsplit(callback).query)["state"][0]  # with PAR, not in the first redirect
        verifier = opened_sign_in(env, state, http.cookies.get_dict()).verifier
        secrets_seen += [verifier, parse_qs(urlsplit(callback).query)["code"][0], state]
        secrets_seen += http.cookies.get_dict().values()  # the sealed login cookie among them
        assert http.get(callback, allow_redirects=False, timeout=10).status_code == 302
        first = stored_tokens(redis, env, http)
        assert http.get(f"{base}/api/v1/me/profile", headers=CSRF, timeout=10).status_code == 200
        time.sleep(1.5)  # the 61-second access token is now inside the refresh margin
        assert http.get(f"{base}/api/v1/me/profile", headers=CSRF, timeout=10).status_code == 200
        refreshed = stored_tokens(redis, env, http)
        assert refreshed["refresh_token"] != first["refresh_token"]
        bearer = provider.user_tokens("bob", client_id="profile-poke-web-short")["access_token"]
        assert requests.get(f"{base}/api/v1/me/profile", headers={"Authorization": f"Bearer {bearer}"}).ok
        secrets_seen += [bearer, *(value for value in http.cookies.get_dict().values() if value != USED_UP)]
        for record in (first, refreshed):
            secrets_seen += [record["access_token"], record["refresh_token"], record["id_token"]]
        assert http.post(f"{base}/auth/logout", headers=CSRF, timeout=10).status_code == 200
    finally:
        app_server.stop()
        idp_server.stop()
    lines = live.log_path.read_text().splitlines()
    requests_logged = [json.loads(line) for line in lines if line.startswith("{") and '"path"' in line]
    assert {"/auth/login", "/auth/callback", "/api/v1/me/profile", "/auth/logout"} <= {
        r["path"] for r in requests_logged
    }
    audited = [
        json.loads(line)["event"] for line in lines if line.startswith('{"level"') and '"logger": "audit"' in line
    ]
    assert audited == ["signin.succeeded", "signout"]  # the audit lines are among those searched
    assert len(secrets_seen) >= 12 and all(len(secret) >= 16 for secret in secrets_seen)
    leaks = [line for line in lines for secret in secrets_seen if secret in line]
    assert leaks == []
