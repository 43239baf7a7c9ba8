"""Safe linking of identity-provider subjects to profiles (decisions: "Users and profiles"), through
the API with bearer tokens from the stub issuer, on fakeredis."""

import pytest

from app import create_app
from app.extensions import services
from app.store import subject_links
from app.store.import_plan import ImportRecord
from app.store.profile_record import Profile, normalize_username
from config import Config
from tests.helpers.settings import app_env

PROFILE = "/api/v1/me/profile"


def make_app(stub, redis, **env):
    app = create_app(Config(app_env(stub.issuer, **env)), redis=redis)
    with app.app_context():
        services().store.profiles.put(Profile("kate", "@kate", "Kate", sub=None))  # imported without sub
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="alice-sub"))
    return app


def call(app, stub, **claims):
    token = stub.sign(stub.access_claims(**claims))
    return app.test_client().get(PROFILE, headers={"Authorization": f"Bearer {token}"})


def owner_of(app, username):
    with app.app_context():
        return services().store.profiles.get(username).sub


@pytest.mark.parametrize("raw", ["\u212aate", "\u212aATE", "k\u0430te"])
def test_unicode_look_alikes_are_not_usernames(raw):
    assert normalize_username(raw) is None


def test_ascii_letters_are_lowered():
    assert normalize_username("KaTe.B-1_") == "kate.b-1_"


def test_an_unclaimed_profile_is_not_claimed_by_username_by_default(stub_issuer, fake_redis, capsys):
    app = make_app(stub_issuer, fake_redis)
    response = call(app, stub_issuer, sub="intruder-sub", preferred_username="KATE")
    assert response.status_code == 403
    assert response.json["error"] == {
        "code": "forbidden",
        "message": "the username kate is taken by a profile not yet linked to an account; an operator must link it",
    }
    assert owner_of(app, "kate") is None
    log = capsys.readouterr().out
    assert "intruder-sub" in log and "LINK_UNCLAIMED_PROFILES is off" in log


def test_the_kelvin_sign_never_reaches_kate(stub_issuer, fake_redis):
    app = make_app(stub_issuer, fake_redis, LINK_UNCLAIMED_PROFILES="true")
    response = call(app, stub_issuer, sub="kelvin-sub", preferred_username="\u212aate")
    assert response.status_code == 403
    assert response.json["error"]["message"].startswith("this account's username is not a valid username here")
    assert owner_of(app, "kate") is None


def test_with_the_operator_opt_in_an_unclaimed_profile_is_claimed_once(stub_issuer, fake_redis):
    app = make_app(stub_issuer, fake_redis, LINK_UNCLAIMED_PROFILES="true")
    assert call(app, stub_issuer, sub="kate-sub", preferred_username="Kate").status_code == 200
    assert owner_of(app, "kate") == "kate-sub"
    second = call(app, stub_issuer, sub="other-sub", preferred_username="kate")
    assert second.status_code == 403
    assert second.json["error"]["message"] == "this account's username belongs to another account"


def test_a_clash_with_an_owned_profile_is_logged_with_both_subjects(stub_issuer, fake_redis, capsys):
    app = make_app(stub_issuer, fake_redis, LINK_UNCLAIMED_PROFILES="true")
    response = call(app, stub_issuer, sub="mallory-sub", preferred_username="ALICE")
    assert response.json["error"]["message"] == "this account's username belongs to another account"
    log = capsys.readouterr().out
    assert "mallory-sub" in log and "alice-sub" in log
    assert owner_of(app, "alice") == "alice-sub"


def test_a_new_subject_with_a_free_valid_username_gets_a_new_profile(stub_issuer, fake_redis):
    app = make_app(stub_issuer, fake_redis)
    assert call(app, stub_issuer, sub="zed-sub", preferred_username="Zed").status_code == 200
    assert owner_of(app, "zed") == "zed-sub"


def test_an_email_as_username_never_creates_a_profile(stub_issuer, fake_redis):
    app = make_app(stub_issuer, fake_redis)
    response = call(app, stub_issuer, sub="mail-sub", preferred_username="zed@example.com")
    assert response.status_code == 403
    assert response.json["error"]["message"] == (
        "this account's username is not a valid username here; an operator must import its profile "
        "with its subject, or set TOKEN_USERNAME_CLAIM"
    )


def test_integer_scores_come_back_as_integers(stub_issuer, fake_redis):
    app = make_app(stub_issuer, fake_redis)
    with app.app_context():
        services().store.profiles.put(
            Profile(
                "alice",
                "@alice",
                "Alice",
                sub="alice-sub",
                stats={"steam": {"hours": 92}},
                aggregate_scores={"overall": 92, "activity": 87.5},
            )
        )
    own = call(app, stub_issuer, sub="alice-sub").json["data"]
    public = app.test_client().get("/api/v1/users/alice").json
    for body in (own, public):
        assert body["aggregate_scores"] == {"overall": 92, "activity": 87.5}
        assert isinstance(body["aggregate_scores"]["overall"], int)
    assert isinstance(own["stats"]["steam"]["hours"], int)


def test_a_relink_by_the_operator_reaches_a_running_process_within_the_link_memory(
    stub_issuer, fake_redis, monkeypatch
):
    monkeypatch.setattr(subject_links, "LINK_MEMORY_SECONDS", 0)  # as if the memory had run out
    app = make_app(stub_issuer, fake_redis, REDIS_KEY_PREFIX="relink:")
    assert call(app, stub_issuer, sub="alice-sub").status_code == 200  # this process now remembers the link
    operator = create_app(Config(app_env(stub_issuer.issuer, REDIS_KEY_PREFIX="relink:")), redis=fake_redis)
    with operator.app_context():  # what `users import --relink` does, in another process
        services().store.profile_import.run([ImportRecord("alice", {}, "alice-new-sub")], relink=True)
    response = call(app, stub_issuer, sub="alice-sub", preferred_username="alice")
    assert response.status_code == 403
    assert response.json["error"]["message"] == "this account's username belongs to another account"
    assert call(app, stub_issuer, sub="alice-new-sub").json["data"]["handle"] == "@alice"
