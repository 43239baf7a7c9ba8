"""The /auth routes of the backend-for-frontend: thin views over app.auth.flow and its neighbours."""

from functools import partial

from flask import Blueprint, after_this_request, current_app, redirect, request
from marshmallow import ValidationError

from ..errors import LoginFailed, Unauthorized
from ..extensions import rate_limited, services
from ..prefixes import AUTH_PREFIX
from ..security import require_csrf_header, sent_csrf_header
from .flow import safe_return_to
from .pending import USED_UP
from .schemas import ExchangeRequestSchema, LoginRequestSchema

bp = Blueprint("auth", __name__, url_prefix=AUTH_PREFIX)


@bp.get("/login")
@rate_limited("RATE_LIMIT_LOGIN", network="RATE_LIMIT_LOGIN_NETWORK")
def login():
    """Start a browser sign-in: the provider's URL as a 302, and the login cookie that binds it to this browser."""
    config = current_app.config
    params = _sign_in_request(config["LOGIN_ACR_VALUES"])
    return_to = safe_return_to(params.pop("return_to"))
    started = services().sign_in.begin(return_to=return_to, cookies=request.cookies, params=params)
    response = redirect(started.url, 302)
    for name in started.dropped:
        response.delete_cookie(name, **_login_cookie())
    response.set_cookie(*started.cookie, max_age=config["LOGIN_STATE_TTL"], **_login_cookie())
    return response


@bp.get("/callback")
# A callback may reach the token endpoint: it costs what a start does.
@rate_limited("RATE_LIMIT_LOGIN", network="RATE_LIMIT_LOGIN_NETWORK")
def callback():
    """Finish the sign-in the provider sends back: a new session, and a 302 to where the user was going."""
    sign_in = services().sign_in
    cookie = sign_in.login_cookie(request.args.get("state", ""))
    if cookie in request.cookies:  # whatever the outcome, a callback uses up its sign-in in this browser
        after_this_request(partial(_used_up, cookie))
    return redirect(sign_in.finish(request.args, request.cookies), 302)


@bp.post("/exchange")
@rate_limited("RATE_LIMIT_EXCHANGE", network="RATE_LIMIT_EXCHANGE_NETWORK")
def exchange():
    """Sign in with a code a same-origin page obtained itself (X-CSRF: 1); the tokens stay on the server."""
    require_csrf_header(request.headers)
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # the JSON parser gives up on deep nesting with this, not a ValueError
        raise LoginFailed(
            "invalid exchange request: JSON nested too deeply", code="invalid_request", reason="bad_request"
        ) from None
    try:
        fields = ExchangeRequestSchema().load(body if isinstance(body, dict) else {})
    except ValidationError as error:
        raise LoginFailed(
            f"invalid exchange request: {sorted(error.messages)}", code="invalid_request", reason="bad_request"
        ) from None
    sign_in = services().sign_in
    sign_in.exchange(**fields)
    return sign_in.session_info()


@bp.get("/session")
def current_session():
    """Who is signed in and until when, never a token; reading never extends the session."""
    return services().sign_in.session_info()


@bp.post("/logout")
def logout():
    """End the session and revoke its refresh token; the provider's logout URL as JSON (X-CSRF) or a 303."""
    fetch = sent_csrf_header(request.headers)
    if not fetch and not _same_origin_form():
        require_csrf_header(request.headers)
    url = services().sign_in.sign_out()
    return {"logout_url": url} if fetch else redirect(url, 303)


@bp.post("/backchannel-logout")
def backchannel_logout():
    """End the sessions a valid, unused logout token from the provider names; 200 even when none matches."""
    services().backchannel_logout.accept(request.form.get("logout_token"))
    return "", 200


@bp.get("/sessions")
def your_sessions():
    """The signed-in user's browser sessions, newest first, the current one marked (X-CSRF: 1)."""
    return {"sessions": services().browser_sessions.listing(_session_cookie())}


@bp.delete("/sessions/<session_id>")
def end_one_session(session_id: str):
    """End one of the signed-in user's sessions and revoke its refresh token; 404 if it is not theirs."""
    services().browser_sessions.end_one(_session_cookie(), session_id)
    return "", 204


@bp.delete("/sessions")
def end_other_sessions():
    """End every other session of the signed-in user, revoking their refresh tokens."""
    services().browser_sessions.end_others(_session_cookie())
    return "", 204


def _sign_in_request(acr_values: list[str]) -> dict:
    """The query of GET /auth/login, validated; 400 invalid_request naming the first bad parameter."""
    schema = LoginRequestSchema(acr_values=acr_values)
    repeated = sorted(name for name in schema.fields if len(request.args.getlist(name)) > 1)
    try:
        if repeated:
            raise ValidationError({repeated[0]: ["must be sent once"]})
        return schema.load(request.args)
    except ValidationError as error:
        name = sorted(error.messages)[0]
        why = error.messages[name][0] if isinstance(error.messages[name], list) else "is invalid"
        raise LoginFailed(
            f"invalid_request: the sign-in parameter {name} {why}", code="invalid_request", reason="bad_request"
        ) from None


def _session_cookie() -> str:
    """The session cookie of a call that reads or changes sessions: with X-CSRF: 1, or 403."""
    cookie = request.cookies.get(current_app.config["SESSION_COOKIE_NAME"])
    if not cookie:
        raise Unauthorized("sign in first")
    require_csrf_header(request.headers)
    return cookie


def _used_up(name: str, response):
    """`response` with the login cookie `name` replaced by a marker that no state opens: a reload of
    the callback then reads "already used", and the browser's next sign-in drops it first."""
    response.set_cookie(name, USED_UP, max_age=current_app.config["LOGIN_STATE_TTL"], **_login_cookie())
    return response


def _login_cookie() -> dict:
    """How a pending sign-in's cookie is set: HttpOnly, sent on the provider's redirect back (a
    top-level navigation, so SameSite=Lax), for the whole origin as the `__Host-` prefix requires."""
    return {"path": "/", "secure": current_app.config["SESSION_COOKIE_SECURE"], "httponly": True, "samesite": "Lax"}


def _same_origin_form() -> bool:
    # Browsers send Sec-Fetch-Site on every request and a page cannot forge it; Origin is the
    # fallback for older browsers (with Referrer-Policy: no-referrer, Chromium sends Origin: null).
    if request.headers.get("Sec-Fetch-Site") == "same-origin":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and f"{origin}/" == current_app.config["BASE_URL"]
