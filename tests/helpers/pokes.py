"""Simultaneous pokes against a served app: the one race every server config must keep exact."""

import re
from concurrent.futures import ThreadPoolExecutor

import requests

COOLDOWN_MESSAGE = re.compile(r"poke on cooldown \((\d+)h(\d+)m(\d+)s remaining\)")


def simultaneous_pokes(base_url: str, token: str, target: str, count: int = 50) -> list[requests.Response]:
    """`count` pokes of `target` with `token`, each on its own connection, all sent at once."""

    def one_poke(_):
        return requests.post(
            f"{base_url}/api/v1/pokes",
            json={"username": target},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one_poke, range(count)))
