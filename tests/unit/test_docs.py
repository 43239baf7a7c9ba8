"""The repository documents itself: every link in the README and docs/ stays inside it, and app.json
asks Heroku for exactly what the service needs."""

import json
import re
from pathlib import Path

import pytest

from config import Config, ConfigError

ROOT = Path(__file__).resolve().parent.parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_relative_link_resolves_inside_the_repository(document):
    relative = [target for target in LINK.findall(document.read_text()) if "://" not in target]
    for target in relative:
        # A leading slash is the repository's root, as the repository's web view resolves it.
        base = ROOT if target.startswith("/") else document.parent
        resolved = (base / target.split("#", 1)[0].lstrip("/")).resolve()
        assert resolved.is_relative_to(ROOT), f"{document.name} links outside the repository: {target}"
        assert resolved.exists(), f"{document.name} links to a missing file: {target}"
    assert "../shared" not in document.read_text()


def test_the_docs_the_readme_promises_exist():
    for name in ("api.md", "decisions.md", "operations.md"):
        assert f"(docs/{name})" in (ROOT / "README.md").read_text(), name


def test_app_json_provisions_redis_and_generates_the_secret_key():
    manifest = json.loads((ROOT / "app.json").read_text())
    assert [addon["plan"].split(":")[0] for addon in manifest["addons"]] == ["heroku-redis"]
    assert manifest["env"]["SECRET_KEY"]["generator"] == "secret"
    assert "/readyz" in manifest["description"]
    assert all(entry.get("description") for entry in manifest["env"].values())


def test_app_json_requires_exactly_what_config_requires():
    manifest = json.loads((ROOT / "app.json").read_text())
    required = {name for name, entry in manifest["env"].items() if entry.get("required")}
    supplied = {name: "x" * 40 for name in required | {"SECRET_KEY"}}
    supplied["OIDC_REDIRECT_URI"] = "https://app.example.com/auth/callback"
    Config(supplied)  # everything app.json asks for is enough to start
    for name in required:
        with pytest.raises(ConfigError, match=name):
            Config({key: value for key, value in supplied.items() if key != name})
