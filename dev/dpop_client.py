"""A short DPoP client (RFC 9449) for the Profile & Poke API: one proof per request, and one retry
when the server asks for its nonce. With `make dev` running:

    set -a; . .dev/dev.env; set +a
    .venv/bin/python -m dev.dpop_client alice          # signs in headless, prints alice's own profile
"""

import json
import os
import sys

import requests

from dev.dpop import DpopKey
from dev.oidc_driver import user_tokens


def call(method: str, url: str, token: str, key: DpopKey, **kwargs) -> requests.Response:
    """`method url` with a DPoP-bound `token`; retried once with the server's nonce when it asks."""
    nonce = None
    for _ in range(2):
        proof = key.proof(method, url, access_token=token, nonce=nonce)
        headers = {"Authorization": f"DPoP {token}", "DPoP": proof}
        response = requests.request(method, url, headers=headers, timeout=10, **kwargs)
        if response.status_code != 401 or "DPoP-Nonce" not in response.headers:
            return response
        nonce = response.headers["DPoP-Nonce"]
    return response


def main(username: str) -> int:
    key = DpopKey.generate("ES256")
    env = os.environ
    base = env["OIDC_REDIRECT_URI"].removesuffix("/auth/callback")
    tokens = user_tokens(
        env["OIDC_ISSUER_URL"], env["OIDC_CLIENT_ID"], env["OIDC_REDIRECT_URI"], username, "demo", dpop_key=key
    )
    response = call("GET", f"{base}/api/v1/me/profile", tokens["access_token"], key)
    print(response.status_code, json.dumps(response.json(), indent=2))
    return 0 if response.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "alice"))
