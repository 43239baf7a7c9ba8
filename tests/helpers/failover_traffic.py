"""Requests of every kind against a served app, from threads, while something happens to its Redis: browser
sign-ins, cookie calls (refreshing every 2 s with the short-token client), bearer calls, DPoP calls and
pokes. Every answer is kept with its timing; every write the app acknowledged (a poke answered 200, a
sign-in that set its cookie) is remembered, for checking from the outside afterwards."""

import html
import itertools
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import requests

from dev import oidc_driver
from dev.dpop import DpopKey
from dev.dpop_client import call as dpop_call
from tests.helpers.log_capture import remember_secrets
from tests.helpers.real_services import PASSWORD
from tests.helpers.settings import CSRF, SESSION_COOKIE

UNAVAILABLE = {"unavailable", "the service's storage is unavailable"}  # the API's code, the sign-in page's words
TIMEOUT = 10  # seconds: an answer slower than this counts as none (a hung worker)
USERS = ("alice", "bob", "carol")  # accounts at the dev provider with an enabled demo profile


@dataclass(frozen=True)
class Answer:
    kind: str
    started: float  # time.monotonic()
    ended: float
    status: int | None  # None: no HTTP answer at all (reset, refused, timed out)
    retry_after: str | None = None
    code: str | None = None  # the error envelope's code, the error page's message, or the exception's name
    route: str = ""  # "GET /api/v1/me/profile": what was asked, for telling failures apart
    message: str | None = None  # the error envelope's message, or the first 80 characters of another body

    @property
    def ok(self) -> bool:
        return self.status is not None and self.status < 400

    def told(self) -> str:
        """The failure as a line: its load, route, status, code and message (never a token: the app returns none)."""
        return f"{self.kind} {self.route} {self.status} {self.code}: {self.message}"


@dataclass
class Traffic:
    """The load: start(), let things happen, stop(); then `answers`, `pokes` (acknowledged (poker, target))
    and `sessions` (signed-in requests.Session objects, the ones made before plus those signed in meanwhile)."""

    base_url: str
    sessions: list[requests.Session]
    bearer_token: str
    dpop: tuple[str, DpopKey]
    pokers: dict[str, str]  # username -> access token
    targets: dict[str, Iterator[str]]  # poker -> the usernames it has never poked, one at a time
    answers: list[Answer] = field(default_factory=list)
    pokes: list[tuple[str, str]] = field(default_factory=list)
    new_sessions: list[requests.Session] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def _profile(self) -> str:
        return f"{self.base_url}/api/v1/me/profile"

    def start(self) -> "Traffic":
        self._stop.clear()
        loops = [self._sign_ins, self._bearer_calls, self._dpop_calls]
        loops += [lambda half=half: self._cookie_calls(half) for half in (0, 1)]
        loops += [lambda poker=poker: self._pokes(poker) for poker in self.pokers]
        self._threads = [threading.Thread(target=loop, daemon=True) for loop in loops]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(TIMEOUT + 5)
        assert not any(thread.is_alive() for thread in self._threads), "a load thread hung"

    def _record(self, kind: str, started: float, response: requests.Response | None, error=None) -> None:
        if response is None:
            route = f"{error.request.method} {urlsplit(error.request.url).path}" if error.request else ""
            self.answers.append(Answer(kind, started, time.monotonic(), None, code=type(error).__name__, route=route))
            return
        code = message = None
        if response.status_code >= 400 and response.headers.get("Content-Type", "").startswith("application/json"):
            body = response.json()
            if isinstance(body.get("error"), dict):
                code, message = body["error"]["code"], body["error"].get("message")
            else:
                code = message = body.get("error")
        elif response.status_code >= 400 and "<h1>Sign-in problem</h1>" in response.text:
            code = message = html.unescape(re.search(r'<p id="message">(.*?)</p>', response.text, re.S).group(1))
        elif response.status_code >= 400:
            message = response.text[:80]
        route = f"{response.request.method} {urlsplit(response.request.url).path}"
        retry_after = response.headers.get("Retry-After")
        answer = Answer(kind, started, time.monotonic(), response.status_code, retry_after, code, route, message)
        self.answers.append(answer)

    def _request(self, kind: str, send, *args, **kwargs) -> requests.Response | None:
        """`send(*args, **kwargs)` (a requests call), its answer or failure recorded under `kind`."""
        started = time.monotonic()
        try:
            response = send(*args, timeout=TIMEOUT, **kwargs)
        except requests.RequestException as error:
            self._record(kind, started, None, error)
            return None
        self._record(kind, started, response)
        return response

    def _cookie_calls(self, half: int) -> None:
        with requests.Session() as http:
            for browser in itertools.cycle(self.sessions[half::2]):
                if self._stop.is_set():
                    return
                self._request("cookie", http.get, self._profile, cookies=browser.cookies, headers=CSRF)

    def _bearer_calls(self) -> None:
        headers = {"Authorization": f"Bearer {self.bearer_token}"}
        with requests.Session() as http:
            while not self._stop.is_set():
                self._request("bearer", http.get, self._profile, headers=headers)

    def _dpop_calls(self) -> None:
        token, key = self.dpop
        while not self._stop.is_set():
            self._request("dpop", lambda **_: dpop_call("GET", self._profile, token, key))

    def _pokes(self, poker: str) -> None:
        headers = {"Authorization": f"Bearer {self.pokers[poker]}"}
        with requests.Session() as http:
            for target in self.targets[poker]:
                if self._stop.is_set():
                    return
                url = f"{self.base_url}/api/v1/pokes"
                response = self._request("poke", http.post, url, json={"username": target}, headers=headers)
                if response is not None and response.status_code == 200:
                    self.pokes.append((poker, target))

    def _sign_ins(self) -> None:
        for username in itertools.cycle(USERS):
            if self._stop.is_set():
                return
            browser = self._sign_in(username)
            if browser is not None:
                self.new_sessions.append(browser)

    def _sign_in(self, username: str) -> requests.Session | None:
        """A browser signed in through the real redirects, or None when the app refused a step (recorded)."""
        browser = requests.Session()
        login = f"{self.base_url}/auth/login"
        start = self._request("signin", browser.get, login, allow_redirects=False)
        if start is None or start.status_code != 302:
            return None
        callback = oidc_driver.login_at_idp(browser, start.headers["Location"], username, PASSWORD)
        assert urlsplit(callback).path == "/auth/callback"
        remember_secrets(*(value for values in parse_qs(urlsplit(callback).query).values() for value in values))
        done = self._request("signin", browser.get, callback, allow_redirects=False)
        if done is None or done.status_code != 302 or SESSION_COOKIE not in browser.cookies:
            return None
        remember_secrets(browser.cookies[SESSION_COOKIE])
        return browser
