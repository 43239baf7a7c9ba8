"""Bearer calls keep flowing while the identity provider hangs: under the shipped gunicorn config
(gunicorn.conf.py as it is, worker count included), the provider holds every token call 5 s, eight
browser sessions need a refresh at once, and bearer calls to /api/v1/me/profile keep p99 < 100 ms."""

import pytest

from bench.studies.hang import DELAY_MS, SESSIONS, SHORT_CLIENT, bearer_calls_while_refreshes_hang, prepare
from dev.services import free_port
from tests.helpers.real_services import integration_env, start_live_app, start_own_idp

pytestmark = pytest.mark.integration
P99_LIMIT_MS = 100


@pytest.fixture(scope="module")
def shipped(workdir, redis_url):
    """The app under the shipped gunicorn config with its own provider (whose token endpoint we delay)."""
    port = free_port()
    idp_server, idp = start_own_idp(workdir, [port])
    env = integration_env(idp, redis_url, 0, OIDC_CLIENT_ID=SHORT_CLIENT)
    server, live = start_live_app(env, port, workdir, workers=None)
    yield live, idp
    server.stop()
    idp_server.stop()


def test_bearer_calls_keep_flowing_while_eight_refreshes_hang_at_the_provider(shipped):
    live, idp = shipped
    sessions, bearer = prepare(live.url, {"issuer": idp.issuer})
    result = bearer_calls_while_refreshes_hang(live.url, idp.base, sessions, bearer)
    # The refreshes really hung for the whole window, and every session came back with fresh tokens.
    assert result["cookie_statuses"] == [200] * SESSIONS, result
    assert min(result["cookie_seconds"]) >= DELAY_MS / 1000, result
    assert result["bearer_statuses"] == [200], result
    assert result["bearer_calls"] >= 100, result
    assert result["bearer_p99_ms"] < P99_LIMIT_MS, result
