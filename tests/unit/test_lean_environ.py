"""The environ the lean path builds (server/lean_environ.py) in the details an app reads, beside its
agreement with gunicorn's create() (test_lean_request.py): PEP 3333's keys, PATH_INFO decoded and
QUERY_STRING raw as gunicorn gives them, repeated fields, Content-Type and -Length, SCRIPT_NAME, and
keep-alive by version and Connection field."""

import pytest
from gunicorn.glogging import Logger

from server.serving import Serving
from tests.helpers.lean_path import LOCAL, OUTSIDE, PLAIN, agree, by_lean_path, shipped_config


@pytest.mark.parametrize("path", [b"/app/api/v1/users/bob", b"/app", b"/elsewhere"])
def test_a_script_name_from_the_environment_is_cut_from_the_path_or_left_to_gunicorn(monkeypatch, path):
    monkeypatch.setenv("SCRIPT_NAME", "/app")
    data = b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert agree(shipped_config(), data, LOCAL) == path.startswith(b"/app")


def test_the_environ_holds_every_key_pep_3333_requires_as_native_strings():
    _, made, _ = by_lean_path(shipped_config(), PLAIN["a poke"], LOCAL)
    cgi = ("REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE", "CONTENT_LENGTH")
    for key in (*cgi, "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "wsgi.url_scheme", "REMOTE_ADDR"):
        assert type(made[key]) is str, key
    for key in ("wsgi.version", "wsgi.input", "wsgi.errors", "wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once"):
        assert key in made, key
    assert (made["wsgi.version"], made["wsgi.multithread"], made["wsgi.run_once"]) == ((1, 0), True, False)


def test_the_environ_is_gunicorns_in_the_details_that_matter_to_the_app():
    _, made, _ = by_lean_path(shipped_config(), PLAIN["a poke"], LOCAL)
    assert (made["CONTENT_TYPE"], made["CONTENT_LENGTH"]) == ("application/json", "24")
    assert "HTTP_CONTENT_TYPE" not in made and "HTTP_CONTENT_LENGTH" not in made
    assert made["wsgi.input"] == b'{"username": "t0000001"}'
    _, made, _ = by_lean_path(shipped_config(), PLAIN["an encoded path"], LOCAL)
    assert made["PATH_INFO"] == "/api/v1/users/b\xc3\xa9b/x y"  # decoded, as latin-1, like gunicorn
    assert made["RAW_URI"] == "/api/v1/users/b%C3%A9b%2Fx%20y"
    _, made, _ = by_lean_path(shipped_config(), PLAIN["a query kept raw"], LOCAL)
    assert made["QUERY_STRING"] == "code=a%2Fb+c&state=%C3%A9&x="
    _, made, _ = by_lean_path(shipped_config(), PLAIN["repeated fields joined"], LOCAL)
    assert made["HTTP_ACCEPT"] == "a,b,c"  # gunicorn 27 joins repeats with "," alone
    _, made, _ = by_lean_path(shipped_config(), PLAIN["an underscored header dropped"], LOCAL)
    assert made["HTTP_X_FORWARDED_FOR"] == "1.2.3.4"
    assert [
        by_lean_path(shipped_config(), PLAIN["the scheme from the proxy"], peer)[1]["wsgi.url_scheme"]
        for peer in (LOCAL, OUTSIDE)
    ] == ["https", "http"]


@pytest.mark.parametrize(
    ("name", "closes"),
    [
        ("HTTP/1.0", True),
        ("HTTP/1.0 keep-alive", False),
        ("HTTP/1.1 close", True),
        ("a browser's GET", False),
        ("the first Connection decides", True),
    ],
)
def test_keep_alive_follows_the_version_and_the_first_connection_field(name, closes):
    request, _, _ = by_lean_path(shipped_config(), PLAIN[name], LOCAL)
    assert request.should_close() is closes


def serves_lean(config) -> bool:
    """Whether a worker with `config` serves plain requests through the lean path (serving.py)."""
    serving = Serving()
    serving.cfg, serving.log = config, Logger(config)
    serving.init_serving()
    return serving.lean


def test_the_shipped_settings_serve_plain_requests_through_the_lean_path():
    assert serves_lean(shipped_config())


@pytest.mark.parametrize(
    "setting",
    [("accesslog", "-"), ("pre_request", lambda worker, req: None), ("strip_header_spaces", True)],
    ids=["an access log", "a pre_request hook", "a parsing option"],
)
def test_a_setting_the_lean_path_does_not_apply_sends_every_request_to_gunicorn(setting):
    config = shipped_config()
    config.set(*setting)
    assert not serves_lean(config)
