"""Introspection fair under floods (issue 28, point 2), end to end: the app under the shipped gunicorn
config behind one trusted proxy hop (PROXY_HOPS=1, X-Forwarded-For), the real Redis and the dev
provider's real RFC 7662 endpoint, with the default bounds. A flood of junk tokens from many addresses
and networks (IPv4 /24s, a residential IPv6 /56 of 21 /64s, IPv6 /48s, NAT64) never turns an unrelated
client's valid token, known or new, into a 503; an answer costs one provider call for every worker and
instance; a provider that throttles (429, 503) is left alone for its Retry-After while known answers
are served."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from app.errors import PROVIDER_BUSY
from dev import oidc_driver
from dev.services import free_port, start_gunicorn
from tests.helpers.real_services import (
    OPAQUE_CLIENT,
    delete_prefix,
    integration_env,
    introspection_settings,
    start_live_app,
)

pytestmark = pytest.mark.integration

PROFILE = "/api/v1/me/profile"
FROM_NETWORK = "too many unknown access tokens from this network; try again later"
POOL, SHARE = 600, 30  # RATE_LIMIT_INTROSPECTION_TOTAL and RATE_LIMIT_INTROSPECTION, the defaults


@pytest.fixture(scope="module")
def fleet(idp, redis_url, workdir):
    """Two instances over one Redis, the first with two gunicorn workers, the defaults for every bound."""
    env = integration_env(idp, redis_url, PROXY_HOPS="1", **introspection_settings(idp))
    first, live = start_live_app(env, free_port(), workdir, workers=2)
    port = free_port()
    second = start_gunicorn(port, env=env, log_path=workdir / f"app-{port}.log", workers=1)
    yield live.url, f"http://127.0.0.1:{port}"
    for server in (first, second):
        server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def opaque_token(idp, username: str = "alice") -> str:
    token = idp.user_tokens(username, client_id=OPAQUE_CLIENT)["access_token"]
    assert token.count(".") == 0
    return token


def read(url: str, token: str, address: str) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}", "X-Forwarded-For": address}
    return requests.get(url + PROFILE, headers=headers, timeout=30)


def flood_plan() -> list[str]:
    """The address of each junk request, the networks taking turns as a botnet's would."""
    networks = [
        *[[f"198.18.{n}.{host}"] * 30 for n in range(8) for host in (1, 2, 3)],  # 8 IPv4 /24s, 3 addresses each
        [f"2001:db8:aa:1{n:02x}::1" for n in range(21)] * 5,  # one residential /56: 21 /64s
        *[[f"2001:db8:{site}:{n}00::1"] * 30 for site in ("b1", "b2", "b3") for n in (1, 2, 3)],  # 3 /48s
        *[[f"64:ff9b::c613:5{host:02x}"] * 30 for host in (1, 2)],  # NAT64: two IPv4 users of 198.19.5.0/24
    ]
    plan = []
    while any(networks):
        plan += [addresses.pop() for addresses in networks if addresses]
    return plan


def test_a_flood_from_many_networks_never_turns_an_unrelated_valid_token_into_a_503(fleet, idp):
    url = fleet[0]
    known = opaque_token(idp)
    assert read(url, known, "100.64.1.1").status_code == 200
    fresh = [opaque_token(idp, name) for name in ("bob", "carol", "alice")]
    idp.reset_stats()
    plan = flood_plan()
    outcomes, legit = [], []
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        for chunk in range(0, len(plan), 100):
            batch = plan[chunk : chunk + 100]
            outcomes += pool.map(lambda a: _outcome(read(url, f"junk-{a}-{time.monotonic_ns()}", a)), batch)
            legit.append(read(url, known, "100.64.1.1").status_code)
            if chunk == 800:  # well after the pool was spent
                legit.append(read(url, fresh[0], "100.64.2.2").status_code)
    legit += [
        read(url, fresh[1], "2001:db8:ffff:1::1").status_code,
        read(url, fresh[2], "64:ff9b::6440:303").status_code,
    ]
    elapsed = time.monotonic() - started
    statuses = [status for status, _ in outcomes]
    calls = idp.stats()["introspection"]
    print(f"flood: {len(plan)} junk requests in {elapsed:.1f} s, {calls} provider calls, "
          f"{statuses.count(401)} x 401, {statuses.count(429)} x 429, {statuses.count(503)} x 503")  # fmt: skip
    assert set(legit) == {200}, legit  # before: 503 "the identity provider is busy" once the 600 were spent
    assert set(statuses) <= {401, 429, 503}
    assert statuses.count(503) > 0 and (503, PROVIDER_BUSY) in outcomes  # the pool was spent, and shares
    assert (429, FROM_NETWORK) in outcomes
    residential = [
        outcome for address, outcome in zip(plan, outcomes, strict=True) if address.startswith("2001:db8:aa:")
    ]
    assert sum(status == 401 for status, _ in residential) <= 60  # before: its 21 /64s spent all 600
    widest = 8 + 1 + 3 + 1  # the /24s, the /56's /48, the /48s, the NAT64 /24
    assert POOL <= calls <= POOL + SHARE * widest + 3


def _outcome(response: requests.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["message"]


def test_workers_and_instances_share_one_answer_one_provider_call(fleet, idp):
    token = opaque_token(idp, "bob")
    idp.reset_stats()
    # A new connection each time (keep-alive is off): the first instance's two workers share the accepts.
    statuses = [read(url, token, "100.64.9.9").status_code for _ in range(10) for url in fleet]
    assert statuses == [200] * 20
    assert idp.stats()["introspection"] == 1  # before: one per worker that served it


@pytest.mark.parametrize(("status", "retry_after"), [(429, 2), (503, 3)])
def test_a_throttling_provider_is_left_alone_while_known_answers_are_served(fleet, idp, status, retry_after):
    first, second = fleet
    known = opaque_token(idp)
    assert read(first, known, "100.64.3.3").status_code == 200
    assert read(first, "junk-known-to-be-refused", "100.64.3.3").status_code == 401
    new, other = opaque_token(idp, "bob"), opaque_token(idp, "carol")
    idp.reset_stats()
    oidc_driver.throttle_introspection(idp.base, status, retry_after)
    try:
        busy = read(first, new, "100.64.3.4")
        assert _outcome(busy) == (503, PROVIDER_BUSY)
        assert 0 < int(busy.headers["Retry-After"]) <= retry_after
        assert _outcome(read(second, other, "100.64.3.5")) == (503, PROVIDER_BUSY)  # heard through Redis
        assert idp.stats()["introspection"] == 1  # the one call that heard it
        assert [read(url, known, "100.64.3.3").status_code for url in fleet for _ in range(3)] == [200] * 6
        assert read(second, "junk-known-to-be-refused", "100.64.3.3").status_code == 401
    finally:
        oidc_driver.throttle_introspection(idp.base, 200)
    time.sleep(retry_after + 0.3)
    assert read(second, new, "100.64.3.4").status_code == 200
    assert read(first, other, "100.64.3.5").status_code == 200
    assert idp.stats()["introspection"] == 3
