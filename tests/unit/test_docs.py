"""The repository documents itself: every link in the README and docs/ stays inside it and finds its
file and heading, and app.json asks Heroku for exactly what the service needs."""

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from config import Config, ConfigError

ROOT = Path(__file__).resolve().parent.parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


# What GitHub drops from a heading to make its anchor: everything but letters, digits, `_`, `-` and spaces.
PUNCTUATION = re.compile(r"[^\w\- ]")
HEADING = re.compile(r"^#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose(text: str) -> list[str]:
    """The lines of a Markdown text outside its fenced code blocks, where links and headings are read."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def github_anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: a link's text kept, lower case, punctuation dropped,
    each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return PUNCTUATION.sub("", text.lower()).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    """Every heading anchor of `document`; a repeated one gets -1, -2, ... as GitHub numbers them."""
    seen, found = Counter(), set()
    for line in prose(document.read_text()):
        heading = HEADING.match(line)
        if heading:
            anchor = github_anchor(heading.group(1))
            found.add(f"{anchor}-{seen[anchor]}" if seen[anchor] else anchor)
            seen[anchor] += 1
    return found


def test_anchors_are_made_as_github_makes_them(tmp_path):
    assert github_anchor("Step-up (RFC 9470)") == "step-up-rfc-9470"
    assert github_anchor("Browser sign-in: `/auth`") == "browser-sign-in-auth"
    assert github_anchor("Rotate `SECRET_KEY`") == "rotate-secret_key"
    assert github_anchor("The [BFF](architecture.md) & you") == "the-bff--you"
    page = tmp_path / "page.md"
    page.write_text("# Limits\n## Limits\n```\n# not a heading\n```\n## Limits\n")
    assert anchors(page) == {"limits", "limits-1", "limits-2"}


def broken_links(document: Path) -> list[str]:
    """Each relative link of `document` that leaves the repository, names a missing file, or names an
    anchor its target Markdown file lacks."""
    found = []
    for line in prose(document.read_text()):
        for target in LINK.findall(line):
            if "://" in target or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            # A leading slash is the repository's root, as the repository's web view resolves it.
            base = ROOT if path.startswith("/") else document.parent
            resolved = (base / path.lstrip("/")).resolve() if path else document
            if not resolved.is_relative_to(ROOT):
                found.append(f"{target}: outside the repository")
            elif not resolved.exists():
                found.append(f"{target}: no such file")
            elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
                found.append(f"{target}: no such heading")
    return found


def test_the_link_check_finds_each_kind_of_broken_link(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Top\n[a](#top) [b](#gone) [c](../../outside.md) [d](missing.md) [e](/docs/page.md#top)\n"
        "```\n[f](#in-code-only)\n```\n[g](https://example.com/#x) [h](page.md#nowhere)\n"
    )
    assert broken_links(page) == [
        "#gone: no such heading",
        "../../outside.md: outside the repository",
        "missing.md: no such file",
        "page.md#nowhere: no such heading",
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_relative_link_and_anchor_resolves_inside_the_repository(document):
    assert broken_links(document) == []
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
