"""The SPA code-exchange request: a PKCE verifier is 43 to 128 unreserved characters and nothing else
(RFC 7636 4.1), refused before the provider is asked."""

import pytest
from marshmallow import ValidationError

from app.auth.schemas import ExchangeRequestSchema

REQUEST = {"code": "a-code", "redirect_uri": "http://127.0.0.1:8000/"}


@pytest.mark.parametrize("verifier", ["v" * 43, "A-b.c_d~" + "9" * 120])
def test_a_verifier_of_unreserved_characters_within_the_length_is_taken(verifier):
    assert ExchangeRequestSchema().load({**REQUEST, "code_verifier": verifier})["code_verifier"] == verifier


@pytest.mark.parametrize(
    "verifier",
    ["v" * 42, "v" * 129, "v" * 43 + " trailing", "v" * 43 + "\n", "v" * 43 + "/", "v" * 43 + "é"],
    ids=["short", "long", "trailing-junk", "trailing-newline", "slash", "non-ascii"],
)
def test_any_other_verifier_is_refused_by_the_schema(verifier):
    with pytest.raises(ValidationError) as refused:
        ExchangeRequestSchema().load({**REQUEST, "code_verifier": verifier})
    assert list(refused.value.messages) == ["code_verifier"]
