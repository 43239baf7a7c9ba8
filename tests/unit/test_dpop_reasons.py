"""DPoP refusal reasons have one home, app.metrics' DPOP_REFUSAL_REASONS (issue 26, point 5): every
reason the code counts is in it, every one in it is counted somewhere, and docs/dpop.md lists the same
set, so the counter's labels stay bounded, each starts at 0, and the docs name each."""

import ast
import re
from pathlib import Path

from app.metrics import DPOP_REFUSAL_REASONS, DPOP_REFUSALS, KNOWN_LABELS

ROOT = Path(__file__).resolve().parent.parent.parent
# The calls that count a refusal: the counter itself anywhere, and dpop.py's refusal builder.
COUNTING = {"count_dpop_refusal": "app", "_refused": "app/tokens/dpop.py"}


def counted_reasons() -> list[tuple[str, object]]:
    """(file:line, the reason argument) of every call that counts a DPoP refusal in app/."""
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        tree = ast.parse(path.read_text())
        forwarders = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name in COUNTING]
        forwarded = {id(inner) for forwarder in forwarders for inner in ast.walk(forwarder)}  # `_refused` itself
        for node in ast.walk(tree):
            if id(node) in forwarded:
                continue
            name = getattr(getattr(node, "func", None), "id", None)
            if isinstance(node, ast.Call) and name in COUNTING and path.is_relative_to(ROOT / COUNTING[name]):
                reason = node.args[0] if node.args else None
                found.append((f"{path.name}:{node.lineno}", getattr(reason, "value", reason)))
    return found


def test_every_dpop_refusal_the_code_counts_names_a_reason_of_the_one_list():
    counted = counted_reasons()
    assert len(counted) >= 20
    assert [(where, reason) for where, reason in counted if reason not in DPOP_REFUSAL_REASONS] == []


def test_every_reason_of_the_list_is_counted_somewhere_and_starts_at_zero():
    assert {reason for _, reason in counted_reasons()} == set(DPOP_REFUSAL_REASONS)
    assert KNOWN_LABELS[DPOP_REFUSALS] == [(reason,) for reason in DPOP_REFUSAL_REASONS]


def test_the_dpop_guide_lists_exactly_the_reasons_metrics_counts():
    guide = (ROOT / "docs" / "dpop.md").read_text()
    paragraph = guide[guide.index("`pp_dpop_refusals_total{reason}`, with `reason` one of") :].split("\n\n")[0]
    paragraph = paragraph.partition(" one of ")[2]
    assert set(re.findall(r"`([a-z_]+)`", paragraph)) == set(DPOP_REFUSAL_REASONS)
