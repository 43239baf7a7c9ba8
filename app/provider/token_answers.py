"""How the token endpoint's answers are read: a refresh refused (the session is over, with the
provider's error code for the audit trail), an outage (the session keeps its tokens), or a 2xx
without usable tokens; at sign-in, an answer that is neither a 2xx nor an OAuth error is an outage."""

import math
import re

from authlib.integrations.base_client import OAuthError

from ..audit import UNLISTED_ERROR, provider_error
from ..errors import LoginFailed, ProviderUnavailable
from .signatures import is_number

REFUSALS = (400, 401)
ERROR_CODE = re.compile(r"[^A-Za-z0-9_.-]")  # RFC 6749 error codes are plain ASCII words
MAX_ERROR_CODE = 64


class RefreshRejected(Exception):
    """The provider refused the refresh token (any 400 or 401, JSON body or not): the session is over.
    `reason` is the audit reason for the provider's error code (app.audit.provider_error), `error` the
    code as sent (printable characters only) when it is none of those the reason can name."""

    def __init__(self, code: str | None):
        super().__init__(code)
        self.reason = provider_error(code)
        self.error = ERROR_CODE.sub("", code)[:MAX_ERROR_CODE] if self.reason == UNLISTED_ERROR else None


class Refused(OAuthError):
    """A 400 or 401 from the token endpoint, whatever its body (an OAuthError, so metrics say refused),
    with the error code its body names (`code`, None without one)."""

    def __init__(self, code: str | None):
        super().__init__(error=code)
        self.code = code


def refusal_or_outage(response):
    """Authlib hook on the refresh response: a refusal ends the session; anything else not 2xx is an outage."""
    if response.status_code in REFUSALS:
        raise Refused(_error_code(response))
    if not 200 <= response.status_code < 300:
        raise ProviderUnavailable(f"token endpoint answered {response.status_code}")
    problem = _body_problem(response)
    if problem:
        raise ProviderUnavailable(f"token endpoint sent {problem}")  # the session keeps its tokens
    return response


def _error_code(response) -> str | None:
    """The `error` member of a refusal's JSON body, or None when it has none."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else None


def malformed_exchange(response):
    """Authlib hook on the code exchange response: a 2xx without usable tokens fails the sign-in; any
    other answer is a refusal when it names an error code, else an outage (only a 2xx carries tokens)."""
    if not 200 <= response.status_code < 300:
        if _error_code(response) is None:  # Authlib would read any other JSON object as a token response
            raise ProviderUnavailable(f"token endpoint answered {response.status_code}")
        return response
    problem = _body_problem(response)
    if problem:
        raise LoginFailed(f"the identity provider sent {problem}", status=502, reason="bad_token_response")
    return response


def _body_problem(response) -> str | None:
    """Why a 2xx token response cannot be used (Authlib and the session read these members), or None."""
    try:
        body = response.json()
    except ValueError:
        return None  # Authlib's own parse fails on it: an outage
    if not isinstance(body, dict):
        return "a token response that is not a JSON object"
    if "error" in body:
        return None  # Authlib raises it as an OAuthError
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        return "no access token"
    expires_in = body.get("expires_in")
    seconds = (is_number(expires_in) and math.isfinite(expires_in)) or (
        isinstance(expires_in, str) and expires_in.isascii() and expires_in.isdigit()
    )
    if expires_in is not None and not seconds:
        return "an expires_in that is not a number of seconds"
    return None
