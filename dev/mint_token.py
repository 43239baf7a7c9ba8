"""Print an access token from the development identity provider: `python -m dev.mint_token user alice` or `... app`.

`user alice --dpop ES256` (or PS256 / RS256) prints a DPoP-bound token instead; its key is made once in
.dev/dpop-<alg>.json and reused after (stderr says where); sign each request's proof with it (dev/dpop.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # Run as `python dev/mint_token.py`: import from the repo root.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from dev.dpop import ALGORITHMS, DpopKey
from dev.oidc_driver import DEFAULT_SCOPE, DriverError, app_token, user_tokens

STATE = Path(__file__).resolve().parent.parent / ".dev"


def _env(name: str, default: str | None = None) -> str:
    """Reads an environment variable; a missing required one is an error."""
    value = os.environ.get(name) or default
    if not value:
        raise SystemExit(f"mint_token: {name} is not set")
    return value


def _dpop_key(alg: str) -> DpopKey:
    """The dev DPoP key for `alg` in .dev/, made on first use; says on stderr where it is."""
    path = STATE / f"dpop-{alg}.json"
    if path.exists():
        try:
            key, state = DpopKey.from_file(path), "using"
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"mint_token: {path} is not a DPoP key ({exc}); delete it to make a new one") from exc
        if key.alg != alg:
            raise SystemExit(f"mint_token: {path} holds a {key.alg} key; delete it to make a new one")
    else:
        STATE.mkdir(exist_ok=True)
        key, state = DpopKey.generate(alg), "created"
        key.to_file(path)
    print(f"mint_token: {state} DPoP key {path} (jkt {key.thumbprint()})", file=sys.stderr)
    return key


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; prints only the access token on stdout."""
    parser = argparse.ArgumentParser(prog="python -m dev.mint_token", description=__doc__)
    sub = parser.add_subparsers(dest="kind", required=True)
    user = sub.add_parser("user", help="log a demo user in (Authorization Code + PKCE) with OIDC_CLIENT_ID")
    user.add_argument("username")
    user.add_argument("--scope", help="scopes to request (default: OIDC_SCOPES or the app's default)")
    user.add_argument("--dpop", metavar="ALG", choices=ALGORITHMS, help="bind the token to a DPoP key for ALG")
    user.add_argument("--acr", help="acr_values to ask the provider for (default: STEP_UP_ACR, so that pokes pass)")
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
                dpop_key=_dpop_key(args.dpop) if args.dpop else None,
                acr_values=args.acr or os.environ.get("STEP_UP_ACR") or None,
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
