"""Fixtures shared by every suite: the stub issuer, an app on fakeredis for fast tests, and the scan of
every log and audit line of the run for the secrets the tests used."""

import fakeredis
import pytest

from app import create_app
from config import Config
from tests.helpers.log_capture import APP_LOGGERS, LineCapture, leaked, seen_secrets
from tests.helpers.settings import app_env
from tests.helpers.stub_issuer import StubIssuer, give_keys_again

pytest_plugins = ["tests.report"]


def pytest_addoption(parser):
    parser.addoption("--redis-cluster", action="store_true", help="run against a real three-master Redis Cluster")


def pytest_sessionstart(session):
    """Each session's stub keys are distinct from one another, whatever an earlier session made."""
    give_keys_again()


def pytest_collection_modifyitems(config, items):
    """On the --redis-cluster pass, leave out the tests marked single_redis (they are run by the first)."""
    if not config.getoption("--redis-cluster"):
        return
    single = [item for item in items if item.get_closest_marker("single_redis")]
    if single:
        config.hook.pytest_deselected(items=single)
        items[:] = [item for item in items if not item.get_closest_marker("single_redis")]


@pytest.fixture(scope="session", autouse=True)
def _no_secret_in_any_log_line_of_the_run(tmp_path_factory):
    """Every line the app's loggers write in process, and every line an app under gunicorn wrote to its
    log file, is searched at the end of the run for every token, code, verifier and cookie value the
    tests noted (tests.helpers.log_capture.remember_secrets): the run fails on any."""
    capture = LineCapture().attach(*APP_LOGGERS)
    yield
    capture.detach(*APP_LOGGERS)
    served = [path.read_text(errors="replace") for path in tmp_path_factory.getbasetemp().rglob("app-*.log")]
    lines = capture.lines + [line for text in served for line in text.splitlines()]
    leaks = leaked(lines, seen_secrets)
    assert leaks == [], f"{len(leaks)} log lines hold a secret a test used (of {len(seen_secrets)} secrets)"


@pytest.fixture
def audit_lines():
    """The log and audit lines the app writes during the test, as it writes them."""
    capture = LineCapture().attach(*APP_LOGGERS)
    yield capture
    capture.detach(*APP_LOGGERS)


@pytest.fixture(scope="session")
def _stub_issuer_server():
    """One stub issuer for the whole session: its RSA key and its server thread are slow to make."""
    issuer = StubIssuer()
    yield issuer
    issuer.stop()


@pytest.fixture
def stub_issuer(_stub_issuer_server):
    """The session's stub issuer as every test must find it, whatever ran before: publishing its own
    key and nothing fetched yet. Tests change `published` (a key rotation) and read `fetches`; mutmut
    runs each mutant's tests in an order of its own (by measured duration), so state left behind by
    one test must never decide another's result."""
    issuer = _stub_issuer_server
    issuer.published = [issuer.key]
    issuer.fetches.clear()
    yield issuer
    issuer.published = [issuer.key]
    issuer.fetches.clear()


@pytest.fixture
def fake_redis():
    return fakeredis.FakeRedis()


@pytest.fixture
def unit_app(stub_issuer, fake_redis):
    """An app on fakeredis that trusts the stub issuer."""
    return create_app(Config(app_env(stub_issuer.issuer)), redis=fake_redis)


@pytest.fixture
def unit_client(unit_app):
    return unit_app.test_client()
