"""Run the mutation-testing campaigns of mutation/modules.toml with mutmut.

Usage: ``python mutation/run.py [--report | --resume | --recheck] [CAMPAIGN ...]``
(all campaigns when none is named; ``--report`` prints the table of the
campaigns already run, without running anything; ``--resume`` continues a
stopped campaign in its scratch directory, testing only the mutants not
tested yet; ``--recheck`` runs the campaign's tests as they are now against
each surviving mutant that is not listed as equivalent, and counts those
they kill: mutmut picks the tests of a mutant from the coverage it recorded
when the campaign started, so a test written afterwards is seen only so.
Test paths after the campaign names (``tests/...``) restrict the recheck to
them: the tests written after the campaign, which are the only ones that
can kill a survivor). Each campaign runs in its own scratch directory
``mutation/work/<campaign>/`` (git-ignored) holding links to ``axisflow/`` and
``tests/`` (with ``examples/`` and ``docs/``, which tests read) and a generated ``pyproject.toml`` whose ``[tool.mutmut]`` section
names the campaign's files and tests: mutmut reads its configuration only
from the working directory, and one directory per campaign keeps each
module's mutants and coverage apart. Campaigns run one after the other with
one worker (the machine is shared).

Afterwards it prints one table row per campaign: mutants, killed, survived,
equivalent (listed with a justification in mutation/equivalent.toml),
mutants no selected test executes, and the share of non-equivalent mutants
killed (of those run so far, marked partial, when a campaign was stopped). Timeouts and segfaults count as killed (the test run failed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MUTMUT = Path(sys.executable).parent / "mutmut"
RESULT = re.compile(r"^\s*(\S+__mutmut_\d+): (.+)$")
KILLED = {"killed", "timeout", "segfault"}
RECHECK_TIMEOUT = 600
"""Seconds a recheck of one mutant may take (wall clock, shared machine)."""
PYTEST = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]


def campaigns() -> dict[str, dict[str, object]]:
    """The campaigns of modules.toml, in file order."""
    return tomllib.loads((HERE / "modules.toml").read_text())


def equivalents() -> dict[str, str]:
    """Mutant name -> why it changes no observable behaviour."""
    table = tomllib.loads((HERE / "equivalent.toml").read_text())
    return {name: entry["why"] for name, entry in table.get("mutant", {}).items()}


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{value}"' for value in values) + "]"


def prepare(name: str, spec: dict[str, object], resume: bool = False) -> Path:
    """A fresh scratch directory for one campaign (with ``resume``, the
    existing one, its configuration rewritten). ``timeout_multiplier`` in a
    campaign bounds a mutant's CPU time at that many times the run of its
    tests (mutmut's default, 15, lets every endless loop a mutant makes run
    for minutes)."""
    work = HERE / "work" / name
    if not (resume and (work / "mutants").is_dir()):
        subprocess.run(["rm", "-rf", str(work)], check=True)
        work.mkdir(parents=True)
        for entry in ("axisflow", "tests", "examples", "docs"):
            (work / entry).symlink_to(ROOT / entry)
    mutate, tests = spec["mutate"], spec["tests"]
    assert isinstance(mutate, list) and isinstance(tests, list)
    multiplier = spec.get("timeout_multiplier")
    timeout = "" if multiplier is None else f"timeout_multiplier = {multiplier}\n"
    (work / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["axisflow/"]\n'
        f"only_mutate = {toml_list(mutate)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        'also_copy = ["examples/", "docs/"]\n'
        f"{timeout}"
        "\n[tool.pytest.ini_options]\n"
        'addopts = "-q -p no:cacheprovider"\n'
    )
    return work


def results(work: Path) -> dict[str, str]:
    """Mutant name -> mutmut's status, for every mutant of the campaign."""
    shown = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        match[1]: match[2].strip()
        for match in map(RESULT.match, shown.splitlines())
        if match
    }


def recheck(
    work: Path, spec: dict[str, object], survivors: list[str], only: list[str]
) -> set[str]:
    """The ``survivors`` that the campaign's current tests (or ``only``)
    kill, run in the campaign's mutated tree one mutant at a time (the
    first failure stops)."""
    shutil.copytree(ROOT / "tests", work / "mutants" / "tests", dirs_exist_ok=True)
    tests = only or spec["tests"]
    assert isinstance(tests, list)
    killed: set[str] = set()
    for mutant in survivors:
        try:
            code = subprocess.run(
                [*PYTEST, "--rootdir=.", *map(str, tests)],
                cwd=work / "mutants",
                capture_output=True,
                env={
                    **os.environ,
                    "MUTANT_UNDER_TEST": mutant,
                    "PYTHONDONTWRITEBYTECODE": "1",
                },
                timeout=RECHECK_TIMEOUT,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            code = 1  # a hang counts as killed, as mutmut's timeouts do
        print(f"   recheck {mutant}: {'killed' if code == 1 else 'survives'}")
        if code == 1:
            killed.add(mutant)
    return killed


def summarize(
    name: str,
    statuses: dict[str, str],
    known: dict[str, str],
    late: set[str] | None = None,
) -> str:
    """One markdown table row for a campaign (``late``: survivors killed by
    the recheck, counted as killed)."""
    late = late or set()
    statuses = {m: "killed" if m in late else s for m, s in statuses.items()}
    counts = Counter(statuses.values())
    killed = sum(counts[status] for status in KILLED)
    survivors = [m for m, s in statuses.items() if s == "survived"]
    equivalent = sum(1 for mutant in survivors if mutant in known)
    untested = counts["no tests"]
    unfinished = len(statuses) - killed - len(survivors) - untested
    # Of the mutants run so far (all of them when the campaign finished).
    live = len(statuses) - unfinished - equivalent
    share = 100.0 * killed / live if live else 100.0
    note = f" (partial: {unfinished} not run yet)" if unfinished else ""
    if late:
        note += f" ({len(late)} killed on recheck)"
    return (
        f"| {name} | {len(statuses)} | {killed} | {len(survivors) - equivalent} "
        f"| {equivalent} | {untested} | {share:.1f}%{note} |"
    )


def stale_equivalents(statuses: dict[str, str], known: dict[str, str]) -> list[str]:
    """The entries of equivalent.toml for this campaign's modules that name no
    survivor of its run: mutmut numbers a function's mutants in order, so
    when the function changes an entry can come to name another mutant (one
    the tests kill, or none). Each must be judged again or removed."""
    modules = {name.rsplit(".", 1)[0] for name in statuses}
    return sorted(
        name
        for name in known
        if name.rsplit(".", 1)[0] in modules and statuses.get(name) != "survived"
    )


def main(argv: list[str]) -> int:
    """Run the named campaigns (all by default) and print the table."""
    report_only = "--report" in argv
    resume = "--resume" in argv
    again = "--recheck" in argv
    argv = [arg for arg in argv if arg not in ("--report", "--resume", "--recheck")]
    only = [arg for arg in argv if arg.startswith("tests/")]
    argv = [arg for arg in argv if not arg.startswith("tests/")]
    table = campaigns()
    chosen = argv or list(table)
    unknown = [name for name in chosen if name not in table]
    if unknown:
        print(f"unknown campaign(s): {', '.join(unknown)}; known: {', '.join(table)}")
        return 2
    known = equivalents()
    rows = []
    for name in chosen:
        work = HERE / "work" / name
        if report_only or again:
            if (work / "mutants").is_dir():
                statuses = results(work)
                late: set[str] = set()
                if again:
                    alive = [
                        m
                        for m, s in sorted(statuses.items())
                        if s == "survived" and m not in known
                    ]
                    late = recheck(work, table[name], alive, only)
                rows.append(summarize(name, statuses, known, late))
                for mutant in stale_equivalents(statuses, known):
                    print(
                        f"   stale equivalent entry ({statuses.get(mutant, 'no such mutant')}): {mutant}"
                    )
            continue
        work = prepare(name, table[name], resume)
        mutated = table[name]["mutate"]
        assert isinstance(mutated, list)
        print(f"== mutation campaign {name}: {', '.join(map(str, mutated))}")
        with open(work / "mutmut.log", "a" if resume else "w") as log:
            subprocess.run(
                [str(MUTMUT), "run", "--max-children", "1"],
                cwd=work,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                check=False,
            )
        statuses = results(work)
        for mutant, status in sorted(statuses.items()):
            if status == "survived" and mutant not in known:
                print(f"   survived: {mutant}")
        rows.append(summarize(name, statuses, known))
    print(
        "| campaign | mutants | killed | survived | equivalent | no tests | killed of non-equivalent |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
