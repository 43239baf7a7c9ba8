"""`make mutation`: mutmut over the security core with the fast test layer, then the reports.

Writes docs/mutation-report.md and docs/mutation-report.json. Fails when fewer than 90 % of the
mutants are killed, or when a survivor has no reason recorded in dev/mutation-equivalents.toml.

`python -m dev.mutation --report-only` writes the reports again from the results in mutants/ without
running mutmut (after recording an equivalent, or after `python -m dev.mutmut_run run <names>` re-ran a few mutants
against new tests); the run time stays that of the last full run, or is `--seconds N` (the mutmut time
of a run that was stopped and resumed with `python -m dev.mutmut_run run`, added up by whoever resumed it).
"""

import ast
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

TARGET = 0.90
ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "dev" / "mutation-equivalents.toml"
REPORT_MD = ROOT / "docs" / "mutation-report.md"
REPORT_JSON = ROOT / "docs" / "mutation-report.json"
LOG = ROOT / ".mutmut.log"
KILLED = {"killed", "timeout", "caught by type check"}


def modules() -> list[str]:
    """The files mutmut mutates, as pyproject.toml's `only_mutate` names them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    found = set()
    for pattern in config["only_mutate"]:
        found.update(str(path.relative_to(ROOT)) for path in ROOT.glob(pattern) if path.suffix == ".py")
    return sorted(found)


def run_mutmut() -> float:
    """Run mutmut from a clean slate; return how long it took in seconds. Exits when mutmut fails."""
    subprocess.run(["rm", "-rf", "mutants"], cwd=ROOT, check=True)
    started = time.monotonic()
    with LOG.open("w") as log:
        run = [sys.executable, "-m", "dev.mutmut_run", "run"]
        finished = subprocess.run(run, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    if finished.returncode != 0:
        tail = LOG.read_text().replace("\r", "\n").splitlines()[-30:]
        sys.exit("\n".join([*tail, f"mutmut failed (exit {finished.returncode}); no report written; see {LOG.name}"]))
    return time.monotonic() - started


def results() -> dict[str, str]:
    """Each mutant's name and status, as mutmut recorded them."""
    from mutmut.__main__ import SourceFileMutationData, walk_mutatable_files
    from mutmut.stats import status_by_exit_code

    statuses = {}
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        statuses.update({name: status_by_exit_code[code] for name, code in data.exit_code_by_key.items()})
    return statuses


def changed(name: str) -> dict:
    """File and changed line of one mutant ("- original" and "+ mutated"), with mutmut's whole diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.utils.format_utils import get_module_from_key

    path = get_module_from_key(name).replace(".", "/") + ".py"
    diff = get_diff_for_mutant(name, path=path)
    removed = next((line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")), "")
    added = next((line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")), "")
    return {"name": name, "file": path, "diff": f"- {removed.strip()}\n+ {added.strip()}", "unified": diff}


def located(name: str) -> dict:
    """File, line and diff of one mutant; the line is the first changed line in the original file."""
    found = changed(name)
    line = _line_of(found["file"], name, found["unified"])
    return {"name": name, "file": found["file"], "line": line, "diff": found["diff"]}


def _line_of(path: str, name: str, diff: str) -> int:
    """The file line of the diff's first removed line: mutmut diffs one function, numbered from its start."""
    node = _function(path, name)
    if node is None:
        return 0
    start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    number = start
    for line in diff.splitlines():
        hunk = re.match(r"@@ -(\d+)", line)
        if hunk:
            number = start + int(hunk.group(1)) - 1
        elif line.startswith("-") and not line.startswith("---"):
            return number
        elif not line.startswith(("+", "---")):
            number += 1  # a context line
    return start


def _function(path: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition a mutant name points at: `x_function` or `xǁClassǁmethod` after the module."""
    mangled = name.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[-1]
    owner, function = mangled.split("ǁ")[1:3] if mangled.startswith("xǁ") else (None, mangled[2:])
    scope: list[ast.stmt] = ast.parse((ROOT / path).read_text()).body
    if owner is not None:
        classes = [node for node in scope if isinstance(node, ast.ClassDef) and node.name == owner]
        scope = classes[0].body if classes else []
    functions = (node for node in scope if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    return next((node for node in functions if node.name == function), None)


def reasons() -> list[dict]:
    """The recorded equivalent mutants: file, the original and mutated line, and why."""
    if not EQUIVALENTS.exists():
        return []
    return tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", [])


def reason_for(survivor: dict, recorded: list[dict]) -> str | None:
    """Why a mutant survives, if an entry with its file and changed line records it."""
    for entry in recorded:
        if entry["file"] == survivor["file"] and entry["diff"].strip() == survivor["diff"].strip():
            return entry["why"]
    return None


def main(argv: list[str]) -> int:
    last = json.loads(REPORT_JSON.read_text()) if REPORT_JSON.exists() else {}
    equivalents_run = os.environ.get("MUTATION_RUN_EQUIVALENTS") == "1"
    if "--report-only" in argv:  # the run's own figures, not those of whoever writes the report again
        seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else last.get("seconds", 0)
        equivalents_run = last.get("equivalents_run", equivalents_run)
    else:
        seconds = run_mutmut()
    statuses = results()
    unchecked = [name for name, status in statuses.items() if status == "not checked"]
    if unchecked:
        sys.exit(f"mutmut left {len(unchecked)} mutants unchecked (first: {unchecked[0]}); no report written")
    recorded = reasons()
    killed = sum(status in KILLED for status in statuses.values())
    survived = []
    for name, status in sorted(statuses.items()):
        if status in KILLED or status == "skipped":
            continue
        entry = located(name)
        entry["status"] = status
        entry["why"] = reason_for(entry, recorded) or "UNEXPLAINED"
        survived.append(entry)
    survived.sort(key=lambda entry: (entry["file"], entry["line"], entry["diff"]))
    report = {
        "modules": modules(),
        "mutants": len(statuses),
        "killed": killed,
        "seconds": round(seconds),
        "timeouts": sum(status == "timeout" for status in statuses.values()),
        "equivalents_run": equivalents_run,
        "survived": survived,
    }
    REPORT_JSON.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    REPORT_MD.write_text(markdown(report))
    score = killed / max(1, len(statuses))
    unexplained = [entry for entry in survived if entry["why"] == "UNEXPLAINED"]
    print(
        f"mutation: {killed}/{len(statuses)} killed ({score:.1%}) in {seconds:.0f} s; "
        f"{len(survived)} survived, {len(unexplained)} unexplained; see {REPORT_MD.relative_to(ROOT)}"
    )
    return 0 if score >= TARGET and not unexplained else 1


def markdown(report: dict) -> str:
    score = report["killed"] / max(1, report["mutants"])
    lines = [
        "# Mutation report",
        "",
        "Written by `make mutation` (mutmut over the security core, killed by the fast test layer "
        "`tests/unit`). Do not edit by hand.",
        "",
        f"- Modules: {', '.join(f'`{module}`' for module in report['modules'])}",
        f"- Mutants: {report['mutants']}; killed: {report['killed']} ({score:.1%}, "
        f"{report.get('timeouts', 0)} of them by timeout); "
        f"survived: {len(report['survived'])}; run time: {report['seconds']} s on this machine",
        "- Survivors with a recorded reason "
        + ("were run too (`MUTATION_RUN_EQUIVALENTS=1`)." if report.get("equivalents_run") else "were not run again."),
        "",
        "## Survivors and why each is equivalent",
        "",
        "| file:line | change | status | why it cannot be told apart |",
        "|---|---|---|---|",
    ]
    for entry in report["survived"]:
        change = "<br>".join(_code(line) for line in entry["diff"].replace("|", "\\|").splitlines())
        lines.append(f"| `{entry['file']}:{entry['line']}` | {change} | {entry['status']} | {entry['why']} |")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """`text` as a Markdown code span, also when it holds a backtick itself."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
