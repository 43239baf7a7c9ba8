"""The walk of one request through the code, traced at run time: a cookie call to GET /api/v1/me/profile
whose access token is due for a refresh calls only downward (by the floors of tests/unit/test_architecture.py),
and crosses exactly the modules docs/architecture.md names for it."""

import re
import sys
from pathlib import Path

import pytest

from tests.helpers.settings import CSRF
from tests.helpers.signin import signed_in_client, stored_session_tokens, wait_until_refresh_is_due
from tests.unit.test_architecture import FLOORS, FRONT_DOORS, floor_of

pytestmark = pytest.mark.integration

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
WALK_HEADING = "### One request, top to bottom"


def documented_walk() -> list[str]:
    """The modules the numbered steps of the map's walk name, as module names, in the order it names them."""
    text = ARCHITECTURE.read_text()
    section = text[text.index(WALK_HEADING) :].split("\n#", 1)[0]
    steps = re.findall(r"^\d+\. .*(?:\n {3,}.*)*", section, flags=re.M)
    paths = re.findall(r"`(app/[\w/]+\.py)`", "\n".join(steps))
    names = [path[: -len(".py")].replace("/", ".").removesuffix(".__init__") for path in paths]
    return list(dict.fromkeys(names))


def traced(call) -> tuple[object, list[str], list[str]]:
    """What `call` returns, the app modules it entered (in first-entry order), and each direct call from
    one app module to another that went up the floors (or across from one front door to the other)."""
    entered: dict[str, None] = {}
    upward: dict[str, None] = {}

    def profile(frame, event, _arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("app"):
            return
        entered.setdefault(module, None)
        # Only a direct call counts: Flask and werkzeug calling the app's hooks and views is dispatch.
        source = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if not source.startswith("app") or source == module:
            return
        (source_floor, source_home), (target_floor, target_home) = floor_of(source), floor_of(module)
        across = source_floor == target_floor == FRONT_DOORS and source_home != target_home
        if target_floor > source_floor or across:
            upward.setdefault(f"{source} ({FLOORS[source_floor][0]}) calls {module} ({FLOORS[target_floor][0]})")

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, list(entered), list(upward)


def test_a_cookie_call_with_a_refresh_calls_only_downward_through_the_modules_the_map_names(make_app):
    app = make_app(OIDC_CLIENT_ID="profile-poke-web-short")  # 62-second access tokens: a refresh is due soon
    client = signed_in_client(app, "alice")
    before = stored_session_tokens(app, client)
    wait_until_refresh_is_due(before)
    response, entered, upward = traced(lambda: client.get("/api/v1/me/profile", headers=CSRF))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert stored_session_tokens(app, client)["v"] == before["v"] + 1, "the call did not refresh"
    assert upward == []
    assert sorted(entered) == sorted(documented_walk()), f"{len(entered)} modules crossed, in order: {entered}"
