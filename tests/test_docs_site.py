"""The docs site's own pieces (``make docs``; ``make test`` builds it with
``--strict``): the API reference covers every package, and the docstring
rewriting of ``docs/_tooling/griffe_rest.py`` does what the site relies on."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import griffe
import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"


def tooling(name: str) -> ModuleType:
    """A module of ``docs/_tooling`` (not a package: MkDocs loads it by path)."""
    return load_script(ROOT / "docs" / "_tooling" / f"{name}.py", name, register=True)


griffe_rest = tooling("griffe_rest")


def documented() -> set[str]:
    """What the API pages render: ``::: axisflow.x`` directives."""
    names: set[str] = set()
    for page in API.glob("*.md"):
        names |= set(re.findall(r"^::: (\S+)$", page.read_text("utf-8"), re.M))
    return names


def test_every_package_and_top_level_module_has_an_api_page() -> None:
    package = ROOT / "axisflow"
    wanted = {"axisflow"}
    wanted |= {
        f"axisflow.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()
    }
    wanted |= {
        f"axisflow.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"
    }
    assert wanted - documented() == set()
    assert documented() - wanted == set()


def test_every_api_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text("utf-8")
    assert [
        p.name for p in sorted(API.glob("*.md")) if f"api/{p.name}" not in nav
    ] == []


SIMPLE_TABLE = """Lines:

============ ==========
``a``        first
``b``        second, and
             more of it
============ ==========

After."""

HEADED_TABLE = """\
   ======  ======  ====
   role    mode    what
   ======  ======  ====
   Local   result  slice
   LoopInvariant   hoisted
   ======  ======  ===="""


def test_a_simple_table_becomes_a_markdown_table() -> None:
    assert griffe_rest._tables(SIMPLE_TABLE).split("\n") == [
        "Lines:",
        "",
        "|  |  |",
        "|---|---|",
        "| ``a`` | first |",
        "| ``b`` | second, and more of it |",
        "",
        "After.",
    ]


def test_a_header_row_and_a_cell_spanning_two_columns() -> None:
    assert griffe_rest._tables(HEADED_TABLE).split("\n") == [
        "   | role | mode | what |",
        "   |---|---|---|",
        "   | Local | result | slice |",
        "   | LoopInvariant |  | hoisted |",
    ]


def test_a_table_without_its_closing_border_is_refused() -> None:
    with pytest.raises(ValueError, match="closing border"):
        griffe_rest._tables("==== ====\na    b\n")


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> griffe.Module:
    root = tmp_path_factory.mktemp("src")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text('"""See :mod:`.inner`."""\n')
    (root / "pkg" / "inner.py").write_text(
        '"""Uses :class:`Thing`, :meth:`~pkg.inner.Thing.go`,\n'
        ':attr:`the size <pkg.inner.Thing.size>` and :func:`_hidden`."""\n'
        "class Thing:\n"
        '    """A thing."""\n'
        "    size: int = 1\n"
        "    def go(self) -> None:\n"
        '        """Go::\n\n            thing.go()\n\n        Then stop.\n        """\n'
        "def _hidden() -> None: ...\n"
    )
    return griffe.load("pkg", search_paths=[root])  # type: ignore[return-value]


def test_roles_become_cross_references_resolved_in_scope(
    package: griffe.Module,
) -> None:
    inner = package["inner"]
    assert griffe_rest.markdown(inner.docstring.value, inner) == (
        "Uses [`Thing`][pkg.inner.Thing], [`go`][pkg.inner.Thing.go],\n"
        "[`the size`][pkg.inner.Thing.size] and `_hidden`."
    )
    assert package.docstring is not None
    assert griffe_rest.markdown(package.docstring.value, package) == (
        "See [`.inner`][pkg.inner]."
    )


def test_a_literal_block_keeps_its_code_and_loses_the_double_colon(
    package: griffe.Module,
) -> None:
    go = package["inner.Thing.go"]
    assert griffe_rest.markdown(go.docstring.value, go) == (
        "Go:\n\n    thing.go()\n\nThen stop."
    )


def test_a_role_naming_nothing_is_an_error(package: griffe.Module) -> None:
    with pytest.raises(
        griffe_rest.ReferenceError, match=r"pkg.inner: cannot resolve 'Nothing'"
    ):
        griffe_rest.markdown(":class:`Nothing`", package["inner"])


def test_list_items_get_the_indentation_python_markdown_needs() -> None:
    source = "\n".join(
        [
            "1. **Home.** first paragraph",
            "   a lazy line, and a 0. that is text",
            "",
            "   | a | b |",
            "   |---|---|",
            "",
            "2. next item",
            "- bullet",
            "",
            "      code in the item",
            "",
            "```",
            "- not an item",
            "",
            "  x",
            "```",
        ]
    )
    assert griffe_rest.widen_list_indents(source).split("\n") == [
        "1. **Home.** first paragraph",
        "   a lazy line, and a 0. that is text",
        "",
        "    | a | b |",
        "    |---|---|",
        "",
        "2. next item",
        "- bullet",
        "",
        "        code in the item",
        "",
        "```",
        "- not an item",
        "",
        "  x",
        "```",
    ]
