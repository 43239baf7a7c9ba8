"""marshmallow schemas of the /auth routes: the SPA code-exchange request, the sign-in request's query, and
the bodies the OpenAPI document describes."""

import re

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate, validates


class ExchangeRequestSchema(Schema):
    class Meta:
        unknown = RAISE

    code = fields.String(required=True, validate=validate.Length(min=1, max=2048))
    code_verifier = fields.String(required=True, validate=validate.Regexp(r"[A-Za-z0-9\-._~]{43,128}\Z"))
    redirect_uri = fields.String(required=True, validate=validate.Length(min=1, max=2048))
    nonce = fields.String(load_default=None, validate=validate.Length(min=1, max=512))


PROMPTS = {"login", "consent", "select_account", "create", "none"}
MAX_AGE_LIMIT = 31_536_000
LOCALE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")  # a BCP 47 tag's shape


def _words(value: str) -> list[str]:
    """The space-separated members of `value`; ValidationError for an empty one or a repeat."""
    words = value.split(" ")
    if not all(words) or len(set(words)) != len(words):
        raise ValidationError("must be distinct values separated by single spaces")
    return words


def _prompt(value: str) -> None:
    words = _words(value)
    if not set(words) <= PROMPTS:
        raise ValidationError(f"must be among {', '.join(sorted(PROMPTS))}")
    if "none" in words and len(words) > 1:
        raise ValidationError("none must stand alone")


def _login_hint(value: str) -> None:
    if not 1 <= len(value) <= 256 or not value.isprintable():
        raise ValidationError("must be 1 to 256 printable characters")


def _max_age(value: str) -> None:
    if not (value.isascii() and value.isdigit() and len(value) <= 8 and int(value) <= MAX_AGE_LIMIT):
        raise ValidationError(f"must be a whole number of seconds from 0 to {MAX_AGE_LIMIT}")


def _ui_locales(value: str) -> None:
    if len(value) > 64 or not all(LOCALE.fullmatch(tag) for tag in _words(value)):
        raise ValidationError("must be space-separated language tags, at most 64 characters")


class LoginRequestSchema(Schema):
    """GET /auth/login's query: where to come back to, and what this one sign-in asks of the provider.
    Other query parameters are ignored."""

    class Meta:
        unknown = EXCLUDE

    return_to = fields.String(load_default=None)
    prompt = fields.String(validate=_prompt)
    login_hint = fields.String(validate=_login_hint)
    max_age = fields.String(validate=_max_age)
    acr_values = fields.String()
    ui_locales = fields.String(validate=_ui_locales)

    def __init__(self, *, acr_values: list[str], **kwargs):
        super().__init__(**kwargs)
        self._acr_values = set(acr_values)

    @validates("acr_values")
    def _known_acr_values(self, value: str, **_) -> None:
        if not self._acr_values:
            raise ValidationError("is not accepted: this app allows none (LOGIN_ACR_VALUES is empty)")
        if not set(_words(value)) <= self._acr_values:
            raise ValidationError(f"must be among {' '.join(sorted(self._acr_values))}")


class SessionInfoSchema(Schema):
    """GET /auth/session's answer, and POST /auth/exchange's: only `authenticated` without a session."""

    authenticated = fields.Boolean(required=True)
    user = fields.String()
    scopes = fields.List(fields.String())
    expires_at = fields.Integer(metadata={"description": "epoch seconds: the session ends then at the latest"})
    idle_expires_at = fields.Integer(metadata={"description": "epoch seconds: the session ends then unless used"})
    idle_timeout = fields.Integer(metadata={"description": "seconds an unused session lives"})
    acr = fields.String(metadata={"description": "how the user signed in (the ID token's), when known"})
    amr = fields.List(fields.String(), metadata={"description": "the ID token's methods, when known"})
    auth_time = fields.Integer(metadata={"description": "epoch seconds of the sign-in, when known"})


class BrowserSessionSchema(Schema):
    id = fields.String(required=True)
    started_at = fields.DateTime(required=True)
    last_used_at = fields.DateTime(required=True, metadata={"description": "to within a minute"})
    user_agent = fields.String(required=True, metadata={"description": "such as `Firefox on Linux`"})
    current = fields.Boolean(required=True, metadata={"description": "the session of this very request"})


class SessionListSchema(Schema):
    sessions = fields.List(fields.Nested(BrowserSessionSchema), required=True)


class LogoutUrlSchema(Schema):
    logout_url = fields.String(required=True, metadata={"description": "the provider's end-session URL"})


class BackchannelErrorSchema(Schema):
    """Back-Channel Logout 1.0's error body (section 2.8), not the API's envelope."""

    error = fields.String(required=True, metadata={"enum": ["invalid_request"]})
    error_description = fields.String(required=True)


class BackchannelLogoutRequestSchema(Schema):
    """POST /auth/backchannel-logout's form: other fields are ignored."""

    logout_token = fields.String(required=True, metadata={"description": "a logout token (a JWT) the provider signed"})
