"""The /auth routes of the backend-for-frontend: thin views over app.auth.flow and its neighbours."""

from flask import Blueprint, current_app, redirect, request
from marshmallow import ValidationError

from ..errors import LoginFailed, Unauthorized
from ..extensions import rate_limited, services
from ..prefixes import AUTH_PREFIX
from ..security import require_csrf_header, sent_csrf_header
from .flow import new_login_binding, safe_return_to
from .schemas import ExchangeRequestSchema

bp = Blueprint("auth", __name__, url_prefix=AUTH_PREFIX)


@bp.get("/login")
@rate_limited("RATE_LIMIT_LOGIN")
def login():
    config = current_app.config
    binding = request.cookies.get(config["LOGIN_COOKIE_NAME"]) or new_login_binding()
    url = services().sign_in.begin(return_to=safe_return_to(request.args.get("return_to")), binding=binding)
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
    return_to = services().sign_in.finish(request.args, request.cookies.get(current_app.config["LOGIN_COOKIE_NAME"]))
    return redirect(return_to, 302)


@bp.post("/exchange")
@rate_limited("RATE_LIMIT_EXCHANGE")
def exchange():
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
    services().sign_in.exchange(**fields)
    return services().sign_in.session_info()


@bp.get("/session")
def current_session():
    return services().sign_in.session_info()


@bp.post("/logout")
def logout():
    fetch = sent_csrf_header(request.headers)
    if not fetch and not _same_origin_form():
        require_csrf_header(request.headers)
    url = services().sign_in.sign_out()
    return {"logout_url": url} if fetch else redirect(url, 303)


@bp.post("/backchannel-logout")
def backchannel_logout():
    services().backchannel_logout.accept(request.form.get("logout_token"))
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
    require_csrf_header(request.headers)
    return cookie


def _same_origin_form() -> bool:
    # Browsers send Sec-Fetch-Site on every request and a page cannot forge it; Origin is the
    # fallback for older browsers (with Referrer-Policy: no-referrer, Chromium sends Origin: null).
    if request.headers.get("Sec-Fetch-Site") == "same-origin":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and f"{origin}/" == current_app.config["BASE_URL"]
