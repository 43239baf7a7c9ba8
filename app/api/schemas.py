"""marshmallow schemas for the poke request and every response body; the OpenAPI document uses them."""

import math

from marshmallow import RAISE, Schema, ValidationError, fields, validate


class JsonNumber(fields.Float):
    """A finite JSON number kept as it came: an integer stays an integer (92, not 92.0)."""

    def _format_num(self, value):
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError("not a finite number")
        return value


class PokeRequestSchema(Schema):
    class Meta:
        unknown = RAISE

    username = fields.String(
        required=True,
        validate=validate.Length(min=1, error="username must not be empty"),
        error_messages={
            "required": "username is required",
            "invalid": "username must be a string",
            "null": "username must be a string",
        },
        metadata={"description": "username of the user to poke"},
    )


class PokeResultSchema(Schema):
    success = fields.Boolean(required=True)
    error = fields.String(metadata={"description": "present only on failure"})


class PublicProfileSchema(Schema):
    username = fields.String(required=True)
    handle = fields.String(required=True)
    display_name = fields.String(required=True)
    aggregate_scores = fields.Dict(keys=fields.String(), values=JsonNumber(), required=True)


class OwnProfileSchema(Schema):
    handle = fields.String(required=True)
    display_name = fields.String(required=True)
    stats = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(),
        required=True,
        metadata={"description": "per-platform figures, keyed by platform name"},
    )
    aggregate_scores = fields.Dict(keys=fields.String(), values=JsonNumber(), required=True)


class OwnProfileEnvelopeSchema(Schema):
    data = fields.Nested(OwnProfileSchema, required=True)


class ErrorSchema(Schema):
    code = fields.String(required=True)
    message = fields.String(required=True)
    # insufficient_user_authentication only (RFC 9470): what to ask for when signing in again.
    acr_values = fields.String(metadata={"description": "space-separated acr values, any one will do"})
    max_age = fields.Integer(metadata={"description": "the sign-in must be at most this many seconds old"})


class ErrorEnvelopeSchema(Schema):
    error = fields.Nested(ErrorSchema, required=True)


_POKE_REQUEST = PokeRequestSchema()


def poke_target(body) -> str:
    """The username a poke body names; ValueError with a clear message when the body is wrong."""
    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    try:
        return _POKE_REQUEST.load(body)["username"]
    except ValidationError as error:
        raise ValueError(_first_message(error.messages)) from None


def _first_message(messages: dict) -> str:
    field, problems = next(iter(sorted(messages.items())))
    if problems == ["Unknown field."]:
        return f"unknown field: {field}"
    return problems[0]
