"""The /auth routes of the backend-for-frontend: thin views over app.auth.flow."""

from flask import Blueprint, current_app, redirect, request
from marshmallow import ValidationError

from ..errors import BadLogoutToken, Forbidden, LoginFailed, Unauthorized
from ..extensions import services
from ..prefixes import AUTH_PREFIX
from ..security import CSRF_HEADER, sent_csrf_header
from .backchannel import MAX_AGE, logout_token_claims
from .flow import begin_login, exchange_code, finish_login, new_login_binding, safe_return_to, session_info, sign_out
from .schemas import ExchangeRequestSchema

bp = Blueprint("auth", __name__, url_prefix=AUTH_PREFIX)
# Endpoints limited per client address, and the setting that holds each limit (see app.extensions).
RATE_LIMITED = {"auth.login": "RATE_LIMIT_LOGIN", "auth.exchange": "RATE_LIMIT_EXCHANGE"}


@bp.get("/login")
def login():
    config = current_app.config
    binding = request.cookies.get(config["LOGIN_COOKIE_NAME"]) or new_login_binding()
    url = begin_login(return_to=safe_return_to(request.args.get("return_to")), binding=binding)
    response = redirect(url, 302)
    response.set_cookie(
        config["LOGIN_COOKIE_NAME"],
        binding,
        max_age=config["LOGIN_STATE_TTL"],
        path="/",
        secure=config["SESSION_COOKIE_SECURE"],
        httponly=True,
        samesite="Lax",
    )
    return response


@bp.get("/callback")
def callback():
    return_to = finish_login(request.args, request.cookies.get(current_app.config["LOGIN_COOKIE_NAME"]))
    return redirect(return_to, 302)


@bp.post("/exchange")
def exchange():
    if not sent_csrf_header(request.headers):
        raise Forbidden(f"this call needs the header {CSRF_HEADER}: 1")
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # the JSON parser gives up on deep nesting with this, not a ValueError
        raise LoginFailed("invalid exchange request: JSON nested too deeply", code="invalid_request") from None
    try:
        fields = ExchangeRequestSchema().load(body if isinstance(body, dict) else {})
    except ValidationError as error:
        raise LoginFailed(f"invalid exchange request: {sorted(error.messages)}", code="invalid_request") from None
    exchange_code(**fields)
    return session_info()


@bp.get("/session")
def current_session():
    return session_info()


@bp.post("/logout")
def logout():
    fetch = sent_csrf_header(request.headers)
    if not fetch and not _same_origin_form():
        raise Forbidden(f"sign-out needs the header {CSRF_HEADER}: 1 or a same-origin form")
    url = sign_out()
    return {"logout_url": url} if fetch else redirect(url, 303)


@bp.post("/backchannel-logout")
def backchannel_logout():
    config = current_app.config
    claims = logout_token_claims(
        services().provider, request.form.get("logout_token"), client_id=config["OIDC_CLIENT_ID"],
        leeway=config["TOKEN_LEEWAY"],
    )  # fmt: skip
    # Remembered as long as the token can be accepted: an iat up to `leeway` ahead adds to MAX_AGE.
    if not services().store.session_index.first_use_of_logout_token(claims["jti"], MAX_AGE + config["TOKEN_LEEWAY"]):
        raise BadLogoutToken("this logout token was already used")
    try:
        services().browser_sessions.end_for_logout_token(claims)
    except Exception:
        # Sessions may still be alive: the provider's retry of this same token must be accepted.
        services().store.session_index.forget_logout_token(claims["jti"])
        raise
    return "", 200


@bp.get("/sessions")
def your_sessions():
    return {"sessions": services().browser_sessions.listing(_session_cookie())}


@bp.delete("/sessions/<session_id>")
def end_one_session(session_id: str):
    services().browser_sessions.end_one(_session_cookie(), session_id)
    return "", 204


@bp.delete("/sessions")
def end_other_sessions():
    services().browser_sessions.end_others(_session_cookie())
    return "", 204


def _session_cookie() -> str:
    """The session cookie of a call that reads or changes sessions: with X-CSRF: 1, or 403."""
    cookie = request.cookies.get(current_app.config["SESSION_COOKIE_NAME"])
    if not cookie:
        raise Unauthorized("sign in first")
    if not sent_csrf_header(request.headers):
        raise Forbidden(f"this call needs the header {CSRF_HEADER}: 1")
    return cookie


def _same_origin_form() -> bool:
    # Browsers send Sec-Fetch-Site on every request and a page cannot forge it; Origin is the
    # fallback for older browsers (with Referrer-Policy: no-referrer, Chromium sends Origin: null).
    if request.headers.get("Sec-Fetch-Site") == "same-origin":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and f"{origin}/" == current_app.config["BASE_URL"]
