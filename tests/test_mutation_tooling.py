"""The mutation-testing driver's bookkeeping (``mutation/run.py``)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import ModuleType

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[1]


def _driver() -> ModuleType:
    return load_script(ROOT / "mutation/run.py", "mutation_run")


def test_an_entry_naming_no_survivor_of_its_campaign_is_stale() -> None:
    """An entry drifted onto a killed mutant, or onto a number the function no
    longer has, is reported; a survivor's entry and another module's are not."""
    statuses = {
        "pkg.mod.x_f__mutmut_1": "survived",
        "pkg.mod.x_f__mutmut_2": "killed",
        "pkg.mod.x_g__mutmut_1": "timeout",
    }
    known = {
        "pkg.mod.x_f__mutmut_1": "judged",
        "pkg.mod.x_f__mutmut_2": "drifted onto a killed mutant",
        "pkg.mod.x_g__mutmut_1": "drifted onto a timeout",
        "pkg.mod.x_f__mutmut_9": "the function has no ninth mutant any more",
        "pkg.other.x_h__mutmut_1": "another campaign's module",
    }
    assert _driver().stale_equivalents(statuses, known) == [
        "pkg.mod.x_f__mutmut_2",
        "pkg.mod.x_f__mutmut_9",
        "pkg.mod.x_g__mutmut_1",
    ]


def test_every_equivalent_entry_gives_a_reason() -> None:
    table = tomllib.loads((ROOT / "mutation/equivalent.toml").read_text("utf-8"))
    missing = [
        name
        for name, entry in table["mutant"].items()
        if not entry.get("why", "").strip()
    ]
    assert missing == []
