"""`flask users ...` against the real Redis: import is idempotent and all-or-nothing; each command's output
alone on stdout (JSON where it prints JSON), its audit line on stderr, and the documented exit codes."""

import json

import pytest

pytestmark = pytest.mark.integration


def run(app, *args):
    return app.test_cli_runner().invoke(args=["users", *args])


def write(tmp_path, records) -> str:
    path = tmp_path / "users.json"
    path.write_text(json.dumps(records))
    return str(path)


def test_import_twice_changes_nothing(app, tmp_path, redis, keys_of):
    path = write(tmp_path, [{"username": "Zed", "display_name": "Zed", "aggregate_scores": {"overall": 1.5}}])
    assert run(app, "import", path).exit_code == 0
    snapshot = {key: redis.hgetall(key) if redis.type(key) == b"hash" else redis.get(key) for key in keys_of(app)}
    assert run(app, "import", path).exit_code == 0
    assert {
        key: redis.hgetall(key) if redis.type(key) == b"hash" else redis.get(key) for key in keys_of(app)
    } == snapshot


def test_show_prints_the_stored_profile_as_json(app):
    result = run(app, "show", "ALICE")
    assert result.exit_code == 0
    shown = json.loads(result.stdout)
    assert shown["username"] == "alice" and shown["stats"]["github"]["stars"] == 95 and shown["disabled"] is False


@pytest.mark.parametrize(
    ("command", "event"),
    [
        (["show", "alice"], "admin.users.show"),
        (["disable", "carol"], "admin.users.disable"),
        (["signout", "dave"], "session.ended"),
    ],
)
def test_the_audit_line_goes_to_stderr_and_stdout_holds_only_the_output(app, command, event):
    result = run(app, *command)
    assert result.exit_code == 0
    assert [json.loads(line)["event"] for line in result.stderr.splitlines()] == [event]
    assert '"event"' not in result.stdout and result.stdout.strip()


def test_import_prints_what_it_did_as_json_on_stdout(app, tmp_path):
    zed = {"username": "zed", "display_name": "Zed"}
    assert json.loads(run(app, "import", write(tmp_path, [zed])).stdout) == {"created": 1, "updated": 0, "unchanged": 0}
    bob = {"username": "bob", "sub": "85f133df-4106-414d-b3aa-3ec6f5a22072", "display_name": "Robert"}
    result = run(app, "import", write(tmp_path, [zed, {"username": "yan"}, bob]))
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"created": 1, "updated": 1, "unchanged": 1}
    (audit,) = [json.loads(line) for line in result.stderr.splitlines()]
    assert (audit["event"], audit["count"], audit["created"], audit["updated"], audit["unchanged"]) == (
        "admin.users.import",
        3,
        1,
        1,
        1,
    )


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["import", "/no/such/file.json"], 1, "Error: /no/such/file.json: [Errno 2]"),
        (["show", "ghost"], 1, "Error: no profile ghost"),
        (["create", "bad name!"], 1, "Error: username must be"),
        (["show"], 2, "Error: Missing argument 'USERNAME'."),
        (["import", "--merge", "x.json"], 2, "Error: No such option '--merge'."),
        (["promote", "alice"], 2, "Error: No such command 'promote'."),
    ],
)
def test_exit_codes_are_1_for_a_refusal_and_2_for_a_usage_error_with_the_reason_on_stderr(app, args, code, says):
    result = run(app, *args)
    assert (result.exit_code, result.stdout) == (code, "")
    assert says in result.stderr


@pytest.mark.parametrize(
    ("records", "named"),
    [
        ([{"username": "ok1"}, {"handle": "no-username"}], "record 1: field 'username'"),
        ([{"username": "ok1"}, {"username": "bad name!"}], "record 1: field 'username'"),
        ([{"username": "ok1", "stats": {"steam": 3}}], "record 0: field 'stats'"),
        ([{"username": "ok1", "aggregate_scores": {"x": "high"}}], "record 0: field 'aggregate_scores'"),
        ([{"username": "ok1", "colour": "red"}], "record 0: field 'colour'"),
        ([{"username": "ok1", "sub": "85f133df-4106-414d-b3aa-3ec6f5a22072"}], "record 0: field 'sub'"),
        ([{"username": "ok1"}, {"username": "OK1"}], "record 1"),
    ],
)
def test_a_bad_file_writes_nothing_and_names_the_record_and_field(app, tmp_path, keys_of, records, named):
    before = keys_of(app)
    result = run(app, "import", write(tmp_path, records))
    assert (result.exit_code, result.stdout) == (1, "")
    assert named in result.stderr
    assert keys_of(app) == before


def test_create_disable_and_enable(app, client):
    assert run(app, "create", "newbie", "--display-name", "New Bie").exit_code == 0
    assert client.get("/api/v1/users/newbie").json["display_name"] == "New Bie"
    assert run(app, "create", "newbie").exit_code != 0
    assert run(app, "disable", "newbie").exit_code == 0
    hidden = client.get("/api/v1/users/newbie")
    assert (hidden.status_code, hidden.get_data(as_text=True).strip()) == (404, "user not found")
    assert run(app, "enable", "NewBie").exit_code == 0
    assert client.get("/api/v1/users/newbie").status_code == 200


@pytest.mark.parametrize("command", ["show", "disable", "enable"])
def test_commands_on_a_missing_user_fail(app, command):
    result = run(app, command, "ghost")
    assert result.exit_code != 0
    assert "no profile ghost" in result.stderr


def test_a_field_a_record_leaves_out_keeps_its_stored_value(app, tmp_path):
    assert run(app, "disable", "bob").exit_code == 0
    path = write(tmp_path, [{"username": "bob", "display_name": "Robert"}])
    assert run(app, "import", path).exit_code == 0
    shown = json.loads(run(app, "show", "bob").stdout)
    assert shown["disabled"] is True  # never re-enabled by a record that says nothing about it
    assert shown["sub"] == "85f133df-4106-414d-b3aa-3ec6f5a22072"  # never unlinked either
    assert shown["display_name"] == "Robert" and shown["handle"] == "@bob"
    assert shown["stats"] == {"steam": {"hours_played": 410, "achievements": 58}}


def test_changing_a_linked_subject_needs_relink(app, tmp_path, redis):
    prefix = app.config["REDIS_KEY_PREFIX"]
    path = write(tmp_path, [{"username": "bob", "sub": "new-bob-sub"}])
    refused = run(app, "import", path)
    assert refused.exit_code != 0
    assert "record 0: field 'sub': profile bob is linked to another subject; use --relink" in refused.stderr
    assert json.loads(run(app, "show", "bob").stdout)["sub"] == "85f133df-4106-414d-b3aa-3ec6f5a22072"
    assert run(app, "import", "--relink", path).exit_code == 0
    assert json.loads(run(app, "show", "bob").stdout)["sub"] == "new-bob-sub"
    assert redis.get(f"{prefix}sub:85f133df-4106-414d-b3aa-3ec6f5a22072") is None


def test_integers_round_trip_exactly(app, tmp_path):
    path = write(tmp_path, [{"username": "Zed", "aggregate_scores": {"overall": 92, "activity": 87.5}}])
    assert run(app, "import", path).exit_code == 0
    scores = json.loads(run(app, "show", "zed").stdout)["aggregate_scores"]
    assert scores == {"overall": 92, "activity": 87.5} and isinstance(scores["overall"], int)
    assert app.test_client().get("/api/v1/users/zed").json["aggregate_scores"] == {"overall": 92, "activity": 87.5}
