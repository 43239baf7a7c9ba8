"""The service as a study runs it: Redis, the dev provider and the app under gunicorn options, each on a
free port, with the demo users imported; all stopped when the study ends."""

import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import requests

from dev.services import (
    ROOT,
    Process,
    free_port,
    gunicorn_argv,
    idp_issuer,
    local_app_env,
    start_idp,
    start_redis,
    supervised,
)


@dataclass
class Served:
    base: str  # the app's URL
    idp_url: str  # the provider's URL
    env: dict  # the app's environment (OIDC_ISSUER_URL, OIDC_CLIENT_ID, OIDC_REDIRECT_URI...)
    app: Process  # the gunicorn master


@contextmanager
def served(study: str, gunicorn_options: list[str], **settings) -> Iterator[Served]:
    """The service under `gunicorn_options` and the app `settings`, its logs under .dev/<study>/, healthy."""
    state = ROOT / ".dev" / study
    with supervised() as started:
        redis_port, idp_port, app_port = free_port(), free_port(), free_port()
        started.append(start_redis(redis_port, workdir=state / "redis"))
        base = f"http://127.0.0.1:{app_port}"
        idp_env = {
            "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(24),
            "IDP_REDIRECT_URIS": f"{base}/auth/callback",
            "IDP_POST_LOGOUT_REDIRECT_URIS": f"{base}/",
        }
        started.append(start_idp(idp_port, log_path=state / "idp.log", env=idp_env))
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        env = local_app_env(idp_issuer(idp_port), base, redis_url, **{"LOG_LEVEL": "WARNING", **settings})
        import_users = [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", "dev/demo-users.json"]
        Process("import", import_users, log_path=state / "import.log", env=env).popen.wait()
        app = Process("app", gunicorn_argv(app_port, gunicorn_options), log_path=state / "app.log", env=env)
        started.append(app)
        app.wait_until(lambda: requests.get(f"{base}/healthz", timeout=1).ok)
        yield Served(base, f"http://127.0.0.1:{idp_port}", env, app)
