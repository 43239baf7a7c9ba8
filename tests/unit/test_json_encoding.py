"""The app's JSON provider writes what Flask's own writes, byte for byte, only with encoders reused."""

import dataclasses
import datetime
import decimal
import uuid

import pytest
from flask import Flask
from flask.json.provider import DefaultJSONProvider
from hypothesis import given, settings
from hypothesis import strategies as st

from app.json_encoding import CachedEncoderJSONProvider

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@dataclasses.dataclass
class Point:
    x: int
    y: str


def providers():
    app = Flask(__name__)
    return CachedEncoderJSONProvider(app), DefaultJSONProvider(app), app


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_dumps_and_compact_dumps_match_flasks_provider(value):
    ours, flasks, _ = providers()
    assert ours.dumps(value) == flasks.dumps(value)
    assert ours.dumps(value, separators=(",", ":")) == flasks.dumps(value, separators=(",", ":"))


def test_a_response_body_matches_flasks_for_every_type_flask_knows():
    ours, flasks, app = providers()
    value = {
        "z": "Ærøskøbing ☃",
        "a": [datetime.date(2026, 11, 27), datetime.datetime(2026, 11, 27, 4, 0, tzinfo=datetime.UTC)],
        "id": uuid.UUID(int=7),
        "point": Point(1, "é"),
        "amount": decimal.Decimal("1.50"),
    }
    with app.app_context():
        assert ours.response(value).get_data() == flasks.response(value).get_data()
    assert ours.dumps(value, indent=2) == flasks.dumps(value, indent=2)


def test_options_changed_on_the_provider_after_use_still_apply():
    ours, flasks, _ = providers()
    value = {"b": "ü", "a": 1}
    assert ours.dumps(value) == '{"a": 1, "b": "\\u00fc"}'
    for provider in (ours, flasks):
        provider.sort_keys = False
        provider.ensure_ascii = False
    assert ours.dumps(value) == flasks.dumps(value) == '{"b": "ü", "a": 1}'


def test_an_object_json_cannot_carry_is_refused_as_flask_refuses_it():
    ours, _, _ = providers()
    with pytest.raises(TypeError, match="not JSON serializable"):
        ours.dumps({"x": object()})
