"""``axisflow-opt``: the stock ``xdsl-opt`` with clean error reports.

``xdsl-opt`` re-raises a failed verification, a parse error or a bad option
as a Python traceback unless ``--verify-diagnostics`` or
``--parsing-diagnostics`` is given. ``axisflow-opt`` takes exactly the same
arguments (it is ``xDSLOptMain``) and prints such errors as a message on
standard error, exiting with status 1. For its run it raises the cyclic
collector's thresholds (``axisflow.gc_pause.collector_tuned``; measured in
docs/benchmarks-phases.md); importing the plugin changes nothing.
"""

from __future__ import annotations

import sys

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from axisflow.gc_pause import collector_tuned


def _report(error: BaseException) -> int:
    print(f"error: {error}", file=sys.stderr)
    for note in getattr(error, "__notes__", ()):
        print(note, file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run ``xdsl-opt`` with ``argv``; return the exit status."""
    try:
        with collector_tuned():
            xDSLOptMain(args=argv).run()
    except (DiagnosticException, ParseError, ArgSpecParseError, ValueError) as error:
        return _report(error)
    except OSError as error:
        return _report(error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
