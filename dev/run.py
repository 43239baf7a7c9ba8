"""`make dev`: Redis (or REDIS_URL), the dev identity provider, the demo profiles and the app under
gunicorn on http://127.0.0.1:8000. Ctrl-C stops everything it started."""

import os
import secrets
import shlex
import subprocess
import sys
import time

from dev.oidc_driver import ACR_OTP, ACR_PASSWORD, DEMO_OTP
from dev.otlp_receiver import Receiver, TracePrinter
from dev.services import ROOT, StartFailed, free_port, idp_issuer, start_gunicorn, start_idp, start_redis, supervised

STATE = ROOT / ".dev"
ENV_FILE = STATE / "dev.env"
TRACES_FILE = STATE / "traces.txt"
TRACES_HINT = f"tail -f {TRACES_FILE.relative_to(ROOT)}   (each request as a tree of spans)"
APP_PORT = int(os.environ.get("APP_PORT", "8000"))
IDP_PORT = int(os.environ.get("IDP_PORT", "9000"))


def _secrets() -> dict:
    """Dev-only random secrets, made once per checkout and kept out of git (.dev/ is ignored)."""
    path = STATE / "secrets.env"
    if not path.exists():
        STATE.mkdir(exist_ok=True)
        path.write_text(f"SECRET_KEY={secrets.token_urlsafe(48)}\nIDP_API_CLIENT_SECRET={secrets.token_urlsafe(32)}\n")
        path.chmod(0o600)
    return dict(line.split("=", 1) for line in path.read_text().split())


def write_env(path, env: dict) -> None:
    """`env` as a file a POSIX shell can source (`set -a; . .dev/dev.env; set +a`): each value quoted,
    so that LOGIN_ACR_VALUES, with its space, is one value and not a command."""
    path.write_text("".join(f"{name}={shlex.quote(value)}\n" for name, value in env.items()))
    path.chmod(0o600)


def app_env(redis_url: str, dev_secrets: dict) -> dict:
    """The app's settings under `make dev`, written to .dev/dev.env for the CLI and `make token`."""
    base = f"http://127.0.0.1:{APP_PORT}/"
    return {
        "OIDC_ISSUER_URL": idp_issuer(IDP_PORT),
        "OIDC_CLIENT_ID": "profile-poke-web",
        "OIDC_REDIRECT_URI": f"{base}auth/callback",
        "SESSION_COOKIE_SECURE": "false",
        "REDIS_URL": redis_url,
        "SECRET_KEY": dev_secrets["SECRET_KEY"],
        "IDP_API_CLIENT_SECRET": dev_secrets["IDP_API_CLIENT_SECRET"],
        # Step-up on show: a password sign-in may do everything but poke, which wants the one-time code.
        "LOGIN_ACR_VALUES": f"{ACR_PASSWORD} {ACR_OTP}",
        "STEP_UP_ACR": ACR_OTP,
    }


def _tracing_env() -> dict:
    """Starts a local OTLP/HTTP receiver writing each trace as a tree to .dev/traces.txt (no trace
    viewer or collector is installable here); returns the variables that send the app's spans to it."""
    STATE.mkdir(exist_ok=True)
    out = TRACES_FILE.open("w", buffering=1)
    receiver = Receiver(on_spans=TracePrinter(out), keep=False).start()
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "profile-poke-dev"}


def main() -> int:
    try:
        with supervised() as started:
            return _run(started)
    except KeyboardInterrupt:
        return 0
    except (StartFailed, subprocess.CalledProcessError) as error:
        print(f"make dev: {error}", file=sys.stderr)
        return 1


def _run(started: list) -> int:
    """Start Redis (unless REDIS_URL), the provider and the app; serve until gunicorn stops."""
    dev_secrets = _secrets()
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        port = free_port()
        started.append(start_redis(port, workdir=STATE / "redis"))
        redis_url = f"redis://127.0.0.1:{port}/0"
    base = f"http://127.0.0.1:{APP_PORT}/"
    started.append(
        start_idp(
            IDP_PORT,
            log_path=STATE / "idp.log",
            env={
                "IDP_API_CLIENT_SECRET": dev_secrets["IDP_API_CLIENT_SECRET"],
                "IDP_REDIRECT_URIS": f"{base}auth/callback,{base}",
                "IDP_POST_LOGOUT_REDIRECT_URIS": base,
                "IDP_BACKCHANNEL_LOGOUT_URI": f"{base}auth/backchannel-logout",
            },
        )
    )
    env = app_env(redis_url, dev_secrets)
    write_env(ENV_FILE, env)
    subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", "dev/demo-users.json"],
        env={**os.environ, **env},
        cwd=ROOT,
        check=True,
    )
    # Only the app's workers trace, not the import above.
    traces = _tracing_env() if os.environ.get("TRACES") else {}
    app = start_gunicorn(APP_PORT, env={**env, **traces}, workers=2)
    started.append(app)
    print(
        f"""
Profile & Poke is running (dev identity provider: {idp_issuer(IDP_PORT)}, Redis: {redis_url}).

  Demo page       {base}   (sign in as alice, bob, carol or erin; password: demo; dave is disabled)
  Step-up         poking asks for a stronger sign-in: password, then the one-time code {DEMO_OTP}
  API             {base}api/v1/openapi.json
  User token      make token USER=alice      (code + PKCE flow, driven headlessly)
  DPoP token      make token USER=alice DPOP=ES256   (bound to .dev/dpop-ES256.json; see docs/dpop.md)
  App token       make app-token             (client credentials)
  Traces          {TRACES_HINT if traces else "make dev TRACES=1"}
  Stop            Ctrl-C
""",
        flush=True,
    )
    while app.alive():
        time.sleep(0.5)
    print("gunicorn stopped", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
