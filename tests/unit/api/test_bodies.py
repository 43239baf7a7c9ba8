"""The profile bodies built by hand (app/api/bodies.py) are what the documented schemas dump."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.bodies import own_profile_body, public_profile_body
from app.api.schemas import OwnProfileEnvelopeSchema, PublicProfileSchema
from app.store.profile_record import Profile

PUBLIC, OWN = PublicProfileSchema(), OwnProfileEnvelopeSchema()

texts = st.text(max_size=12)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8
)
finite_numbers = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
profiles = st.builds(
    Profile,
    username=texts,
    handle=st.none() | texts,
    display_name=st.none() | texts,
    stats=st.dictionaries(texts, st.none() | st.dictionaries(texts, json_values, max_size=3), max_size=4),
    aggregate_scores=st.none() | st.dictionaries(texts, finite_numbers, max_size=4),
    disabled=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(profiles)
def test_the_public_body_is_the_public_profile_schemas_dump(profile):
    assert public_profile_body(profile) == PUBLIC.dump(profile)


@settings(max_examples=300, deadline=None)
@given(profiles)
def test_the_own_body_is_the_own_profile_envelope_schemas_dump(profile):
    assert own_profile_body(profile) == OWN.dump({"data": profile})


def test_integer_scores_stay_integers_and_floats_stay_floats_as_the_schema_keeps_them():
    profile = Profile(username="alice", handle="@alice", display_name="Alice", aggregate_scores={"a": 92, "b": 87.5})
    scores = public_profile_body(profile)["aggregate_scores"]
    assert scores == PUBLIC.dump(profile)["aggregate_scores"]
    assert [type(value) for value in scores.values()] == [int, float]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "12", [1], {"x": 1}])
def test_a_score_json_cannot_carry_as_a_number_is_refused_by_both_alike(bad):
    profile = Profile(username="alice", handle="@alice", display_name="Alice", aggregate_scores={"overall": bad})
    for build, dump in ((public_profile_body, PUBLIC.dump), (own_profile_body, lambda p: OWN.dump({"data": p}))):
        with pytest.raises(ValueError, match="not a finite number"):
            dump(profile)
        with pytest.raises(ValueError, match="not a finite number"):
            build(profile)
