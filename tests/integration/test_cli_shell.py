"""`flask --app wsgi users ...` as an operator runs it, in its own process: beside `make dev`, from a real
shell that sources the env file make dev writes (the README's way); a configuration error as one line
naming the setting with exit 2; an import's progress on stderr only when stderr is a terminal."""

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios

import pytest

from dev import run as make_dev
from dev.services import ROOT, free_port
from tests.helpers.real_services import DEMO_USERS, delete_prefix
from tests.helpers.settings import app_env

pytestmark = pytest.mark.integration

FLASK = [sys.executable, "-m", "flask", "--app", "wsgi", "users"]
# A fresh shell's environment: nothing the test run itself has set reaches the command.
BARE = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}


@pytest.fixture
def cli_env(redis_url):
    """Settings for the CLI against the test Redis, under a prefix of their own (removed afterwards)."""
    env = app_env("http://127.0.0.1:9/realms/none", REDIS_URL=redis_url)
    yield env
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def test_the_readmes_way_sources_make_devs_env_file_and_runs_a_command_whose_json_pipes(redis_url, tmp_path):
    env = make_dev.app_env(redis_url, {"SECRET_KEY": "k" * 48, "IDP_API_CLIENT_SECRET": "s" * 32})
    prefix = app_env("http://unused")["REDIS_KEY_PREFIX"]
    env_file = tmp_path / "dev.env"
    make_dev.write_env(env_file, {**env, "REDIS_KEY_PREFIX": prefix})
    python = sys.executable
    script = (
        f"set -a; . {env_file}; set +a; set -o pipefail; "
        f"{python} -m flask --app wsgi users import {DEMO_USERS} && "
        f"{python} -m flask --app wsgi users show alice | {python} -c "
        "'import json, sys; print(json.load(sys.stdin)[\"username\"])'"
    )
    try:
        shell = subprocess.run(["bash", "-c", script], env=BARE, cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        delete_prefix(redis_url, prefix)
    assert "command not found" not in shell.stderr and "Traceback" not in shell.stderr, shell.stderr
    assert shell.returncode == 0, shell.stderr
    summary, shown = shell.stdout.splitlines()
    assert (json.loads(summary), shown) == ({"created": 4, "updated": 0, "unchanged": 0}, "alice")
    assert [json.loads(line)["event"] for line in shell.stderr.splitlines()] == [
        "admin.users.import",
        "admin.users.show",
    ]


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            {"STEP_UP_ACR": "urn:example:mfa"},
            "ConfigError: STEP_UP_ACR names urn:example:mfa, which LOGIN_ACR_VALUES must list too",
        ),
        ({"OIDC_ISSUER_URL": ""}, "ConfigError: OIDC_ISSUER_URL is required; see .env.example"),
        ({"SESSION_COOKIE_SECURE": "maybe"}, "ConfigError: SESSION_COOKIE_SECURE must be true or false, not 'maybe'"),
    ],
)
def test_a_configuration_error_is_one_line_naming_the_setting_and_exit_2(cli_env, change, line):
    done = subprocess.run(
        [*FLASK, "show", "alice"], env={**BARE, **cli_env, **change}, cwd=ROOT, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"{line}\n")


def import_file(tmp_path, count: int) -> str:
    path = tmp_path / "many.json"
    path.write_text(json.dumps([{"username": f"user{i}", "aggregate_scores": {"overall": i}} for i in range(count)]))
    return str(path)


def test_an_import_shows_its_progress_on_a_terminal_and_prints_its_summary_on_stdout(cli_env, tmp_path):
    terminal, other_end = os.openpty()
    fcntl.ioctl(other_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 wide
    process = subprocess.Popen(
        [*FLASK, "import", import_file(tmp_path, 3000)],
        env={**BARE, **cli_env},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=other_end,
    )
    os.close(other_end)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # the command closed its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    stdout = process.stdout.read().decode()
    process.stdout.close()
    assert process.wait(timeout=60) == 0
    assert json.loads(stdout) == {"created": 3000, "updated": 0, "unchanged": 0}
    text = shown.decode(errors="replace")
    assert "validating" in text and "3000/3000" in text
    assert "importing" in text and "6000/6000" in text and "100%" in text


def test_off_a_terminal_an_import_writes_no_progress_only_its_audit_line(cli_env, tmp_path):
    done = subprocess.run(
        [*FLASK, "import", import_file(tmp_path, 3000)], env={**BARE, **cli_env}, cwd=ROOT, capture_output=True
    )
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"created": 3000, "updated": 0, "unchanged": 0}
    assert [json.loads(line)["event"] for line in done.stderr.decode().splitlines()] == ["admin.users.import"]


def test_a_redis_that_cannot_be_reached_is_one_line_and_exit_1(cli_env):
    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run(
        [*FLASK, "show", "alice"],
        env={**BARE, **cli_env, "REDIS_URL": nowhere},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("Error: Redis: ConnectionError: ") and done.stderr.count("\n") == 1, done.stderr
