"""Load a script that is not part of a package (a tool, an example) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str, *, register: bool = False) -> ModuleType:
    """The Python file at ``path`` executed as the module ``name``.

    ``register``: also enter it in ``sys.modules`` (needed when its classes
    must be found again by name, as dataclasses and pickling do).
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
