"""Drive logins against the development identity provider (dev/idp) over plain HTTP, no browser."""

from __future__ import annotations

import base64
import functools
import json
import secrets
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import requests
from authlib.oauth2.rfc7636 import create_s256_code_challenge

if TYPE_CHECKING:
    from dev.dpop import DpopKey

TIMEOUT = 10
DEFAULT_SCOPE = "openid svc:profile.private svc:interact.poke"
# The dev provider's two authentication levels (dev/idp/server.js) and its one-time code.
ACR_PASSWORD = "urn:profile-poke:acr:pwd"
ACR_OTP = "urn:profile-poke:acr:pwd-otp"
DEMO_OTP = "123456"
_MAX_HOPS = 20


class DriverError(Exception):
    """The identity provider answered something the driver did not expect."""


class LoginFailed(DriverError):
    """The identity provider refused the username or password."""


class _Page(HTMLParser):
    """Collects the forms (fields, submit buttons) and the error text of an HTML page."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[dict] = []
        self.error = ""
        self.text: list[str] = []
        self._in_error = False
        self._skip = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self._skip += tag in ("head", "script", "style")
        if tag == "form":
            self.forms.append(
                {
                    "action": a.get("action", ""),
                    "method": a.get("method", "get").lower(),
                    "fields": {},
                    "submits": [],
                    "password": False,
                }
            )
        elif self.forms and tag in ("input", "button"):
            form, kind = self.forms[-1], a.get("type", "submit" if tag == "button" else "text").lower()
            if kind == "submit":
                form["submits"].append((a.get("name", ""), a.get("value", "")))
            elif a.get("name"):
                form["fields"][a["name"]] = a.get("value", "")
                form["password"] |= kind == "password"
        if a.get("id") == "error" or a.get("role") == "alert":
            self._in_error = True

    def handle_endtag(self, tag: str) -> None:
        self._in_error = False
        self._skip -= tag in ("head", "script", "style")

    def handle_data(self, data: str) -> None:
        if self._in_error:
            self.error += data
        if data.strip() and not self._skip:
            self.text.append(data.strip())


def _submit(http: requests.Session, page_url: str, form: dict, fields: dict) -> requests.Response:
    """Submits a parsed form with extra field values and its first submit button."""
    data = {**form["fields"], **fields}
    name, value = form["submits"][0] if form["submits"] else ("", "")
    if name:
        data[name] = value
    url = urljoin(page_url, form["action"] or page_url)
    if form["method"] == "post":
        return http.post(url, data=data, allow_redirects=False, timeout=TIMEOUT)
    return http.get(url, params=data, allow_redirects=False, timeout=TIMEOUT)


def _same_endpoint(url: str, target: str) -> bool:
    """Tells whether two URLs have the same scheme, host, port and path."""
    a, b = urlsplit(url), urlsplit(target)
    return (a.scheme, a.netloc, a.path) == (b.scheme, b.netloc, b.path)


def discover(issuer: str) -> dict:
    """Fetches the discovery document of the issuer."""
    resp = requests.get(issuer.rstrip("/") + "/.well-known/openid-configuration", timeout=TIMEOUT)
    resp.raise_for_status()
    return resp.json()


@functools.lru_cache(maxsize=16)
def _metadata(issuer: str) -> dict:
    """Discovery document, fetched once per issuer and process (keeps the IdP's counters clean)."""
    return discover(issuer)


def login_at_idp(
    http: requests.Session, authorize_url: str, username: str, password: str, *, otp: str = DEMO_OTP
) -> str:
    """Follows the IdP from an authorization URL through its login form (and its one-time-code form, when
    the request asked for that level); returns the redirect to the client."""
    redirect_uri = parse_qs(urlsplit(authorize_url).query).get("redirect_uri", [""])[0]
    idp_origin = urlsplit(authorize_url).netloc
    resp = http.get(authorize_url, allow_redirects=False, timeout=TIMEOUT)
    posted = otp_posted = False
    for _ in range(_MAX_HOPS):
        if resp.is_redirect:
            location = urljoin(resp.url, resp.headers["Location"])
            if (redirect_uri and _same_endpoint(location, redirect_uri)) or urlsplit(location).netloc != idp_origin:
                return location
            resp = http.get(location, allow_redirects=False, timeout=TIMEOUT)
            continue
        page = _Page(resp.text) if "html" in resp.headers.get("Content-Type", "") else None
        if resp.status_code >= 400 or page is None or not page.forms:
            text = " ".join(page.text) if page else resp.text
            raise DriverError(f"unexpected IdP response {resp.status_code} at {urlsplit(resp.url).path}: {text[:300]}")
        form = page.forms[0]
        if form["password"]:
            if posted:
                raise LoginFailed(page.error.strip() or "login refused")
            posted = True
            resp = _submit(http, resp.url, form, {"username": username, "password": password})
        elif "otp" in form["fields"]:
            if otp_posted:
                raise LoginFailed(page.error.strip() or "one-time code refused")
            otp_posted = True
            resp = _submit(http, resp.url, form, {"otp": otp})
        else:
            resp = _submit(http, resp.url, form, {})
    raise DriverError("too many redirects at the IdP")


def user_tokens(
    issuer: str,
    client_id: str,
    redirect_uri: str,
    username: str,
    password: str,
    scope: str = DEFAULT_SCOPE,
    dpop_key: DpopKey | None = None,
    acr_values: str | None = None,
) -> dict:
    """Logs a user in with Authorization Code + PKCE S256 as a public client; returns the token response.
    With `acr_values`, the authorization request asks for that authentication level.
    With `dpop_key`, the code exchange carries a DPoP proof: the tokens are bound to that key (token_type
    DPoP, `cnf.jkt` in the access token), and so is the refresh token."""
    meta = _metadata(issuer)
    state, nonce, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(64)
    params = {
        "client_id": client_id,
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": state,
        "nonce": nonce,
        "code_challenge": create_s256_code_challenge(verifier),
        "code_challenge_method": "S256",
        **({"acr_values": acr_values} if acr_values else {}),
    }
    with requests.Session() as http:
        final = login_at_idp(http, meta["authorization_endpoint"] + "?" + urlencode(params), username, password)
    query = {k: v[0] for k, v in parse_qs(urlsplit(final).query).items()}
    if "error" in query:
        raise DriverError(f"authorization failed: {query['error']}: {query.get('error_description', '')}")
    if query.get("state") != state:
        raise DriverError("state mismatch in the authorization response")
    if "iss" in query and query["iss"] != meta["issuer"]:
        raise DriverError("iss mismatch in the authorization response")
    resp = _token_request(
        meta["token_endpoint"],
        {
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": query.get("code", ""),
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
        dpop_key,
    )
    if resp.status_code != 200:
        raise DriverError(f"code exchange failed: {resp.status_code} {resp.text}")
    tokens = resp.json()
    if "id_token" in tokens and _jwt_claims(tokens["id_token"]).get("nonce") != nonce:
        raise DriverError("nonce mismatch in the ID token")
    return tokens


def _jwt_claims(token: str) -> dict:
    """Decodes a JWT's payload without verifying it."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _token_request(url: str, data: dict, dpop_key: DpopKey | None) -> requests.Response:
    """POSTs a form to the token endpoint, with a DPoP proof when `dpop_key` is given; if the provider
    asks for a server nonce (`use_dpop_nonce`), retries once with a proof carrying its DPoP-Nonce."""

    def send(nonce: str | None = None) -> requests.Response:
        headers = {"DPoP": dpop_key.proof("POST", url, nonce=nonce)} if dpop_key else {}
        return requests.post(url, data=data, headers=headers, timeout=TIMEOUT)

    resp = send()
    nonce = resp.headers.get("DPoP-Nonce")
    if dpop_key and nonce and resp.status_code in (400, 401) and _error_code(resp) == "use_dpop_nonce":
        resp = send(nonce)
    return resp


def _error_code(resp: requests.Response) -> str | None:
    """The OAuth `error` of a JSON error response, or None."""
    try:
        body = resp.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


def refresh(issuer: str, client_id: str, refresh_token: str, dpop_key: DpopKey | None = None) -> requests.Response:
    """Redeems a refresh token as a public client; returns the raw response. A DPoP-bound refresh token
    (from a login with `dpop_key`) is redeemed only with a proof by the same key."""
    return _token_request(
        _metadata(issuer)["token_endpoint"],
        {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": refresh_token},
        dpop_key,
    )


def app_token(issuer: str, client_id: str, client_secret: str, scope: str | None = None) -> dict:
    """Gets a client-credentials token response (client_secret_basic)."""
    data = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
    resp = requests.post(
        _metadata(issuer)["token_endpoint"], data=data, auth=(client_id, client_secret), timeout=TIMEOUT
    )
    if resp.status_code != 200:
        raise DriverError(f"client credentials failed: {resp.status_code} {resp.text}")
    return resp.json()


def confirm_logout(http: requests.Session, end_session_url: str) -> str:
    """Opens the end-session URL, confirms the sign-out form; returns the post-logout redirect."""
    resp = http.get(end_session_url, allow_redirects=False, timeout=TIMEOUT)
    for _ in range(_MAX_HOPS):
        if resp.is_redirect:
            return urljoin(resp.url, resp.headers["Location"])
        page = _Page(resp.text)
        if resp.status_code >= 400 or not page.forms:
            raise DriverError(f"unexpected IdP response {resp.status_code}: {' '.join(page.text)[:300]}")
        resp = _submit(http, resp.url, page.forms[0], {"logout": "yes"})
    raise DriverError("too many steps at the IdP logout")


def stats(idp_base: str) -> dict:
    """Returns the IdP's request counters."""
    resp = requests.get(idp_base.rstrip("/") + "/__dev/stats", timeout=TIMEOUT)
    resp.raise_for_status()
    return resp.json()


def reset_stats(idp_base: str) -> None:
    """Zeroes the IdP's request counters."""
    requests.post(idp_base.rstrip("/") + "/__dev/stats/reset", timeout=TIMEOUT).raise_for_status()


def delay_token_endpoint(idp_base: str, milliseconds: int) -> None:
    """Makes the IdP hold every token-endpoint request `milliseconds` before answering (0: off)."""
    url = idp_base.rstrip("/") + "/__dev/delay"
    requests.post(url, params={"ms": milliseconds}, timeout=TIMEOUT).raise_for_status()


def rotate_keys(idp_base: str, keep_old: bool, *, same_kid: bool = False) -> str:
    """Makes the IdP sign with a new key (keeping the old ones in the JWKS or not; under the kid in use
    with `same_kid`, the old key dropped); returns its kid."""
    params = {"keep_old": "1" if keep_old else "0", **({"same_kid": "1"} if same_kid else {})}
    resp = requests.post(idp_base.rstrip("/") + "/__dev/rotate-keys", params=params, timeout=TIMEOUT)
    resp.raise_for_status()
    return resp.json()["kid"]


def par_mode(idp_base: str, mode: str, *, ms: int | None = None) -> None:
    """Makes the IdP's PAR endpoint answer as `mode` says (ok, refuse, error, hang, no_request_uri,
    status_200); `ms` is how long hang holds a request."""
    params = {"mode": mode, **({"ms": ms} if ms is not None else {})}
    requests.post(idp_base.rstrip("/") + "/__dev/par", params=params, timeout=TIMEOUT).raise_for_status()


def token_scope(idp_base: str, mode: str) -> None:
    """Makes the IdP's token responses list their `scope` (listed) or leave it out (omitted)."""
    url = idp_base.rstrip("/") + "/__dev/token-scope"
    requests.post(url, params={"mode": mode}, timeout=TIMEOUT).raise_for_status()


def stale_auth_time(idp_base: str, seconds: int) -> None:
    """Makes the IdP's ID tokens report an auth_time `seconds` older than the real one (0: off)."""
    url = idp_base.rstrip("/") + "/__dev/stale-auth-time"
    requests.post(url, params={"seconds": seconds}, timeout=TIMEOUT).raise_for_status()


def throttle_introspection(idp_base: str, status: int, retry_after: int | None = None) -> None:
    """Makes the IdP's introspection endpoint answer `status` (429 or 503, with `retry_after` seconds
    in Retry-After when given) like a provider that throttles its clients; 200 is the real endpoint."""
    params = {"status": status, **({"retry_after": retry_after} if retry_after is not None else {})}
    requests.post(idp_base.rstrip("/") + "/__dev/introspection", params=params, timeout=TIMEOUT).raise_for_status()
