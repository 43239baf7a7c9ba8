"""Print an access token from the development identity provider: `python -m dev.mint_token user alice` or `... app`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # Run as `python dev/mint_token.py`: import from the repo root.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from dev.oidc_driver import DEFAULT_SCOPE, DriverError, app_token, user_tokens


def _env(name: str, default: str | None = None) -> str:
    """Reads an environment variable; a missing required one is an error."""
    value = os.environ.get(name) or default
    if not value:
        raise SystemExit(f"mint_token: {name} is not set")
    return value


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; prints only the access token on stdout."""
    parser = argparse.ArgumentParser(prog="python -m dev.mint_token", description=__doc__)
    sub = parser.add_subparsers(dest="kind", required=True)
    user = sub.add_parser("user", help="log a demo user in (Authorization Code + PKCE) with OIDC_CLIENT_ID")
    user.add_argument("username")
    user.add_argument("--scope", help="scopes to request (default: OIDC_SCOPES or the app's default)")
    app = sub.add_parser("app", help="client-credentials token of IDP_API_CLIENT_ID")
    app.add_argument("--scope", help="scopes to request (default: all of the client's API scopes)")
    args = parser.parse_args(argv)

    issuer = _env("OIDC_ISSUER_URL")
    try:
        if args.kind == "user":
            tokens = user_tokens(
                issuer,
                _env("OIDC_CLIENT_ID"),
                _env("OIDC_REDIRECT_URI"),
                args.username,
                _env("IDP_DEMO_PASSWORD", "demo"),
                scope=args.scope or os.environ.get("OIDC_SCOPES") or DEFAULT_SCOPE,
            )
        else:
            tokens = app_token(
                issuer,
                _env("IDP_API_CLIENT_ID", "profile-poke-service"),
                _env("IDP_API_CLIENT_SECRET"),
                scope=args.scope,
            )
    except (DriverError, OSError) as exc:  # requests' errors are OSErrors
        print(f"mint_token: {exc}", file=sys.stderr)
        return 1
    print(tokens["access_token"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
