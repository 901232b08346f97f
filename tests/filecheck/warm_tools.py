"""Warm starts for the lit suite's Python tools (``xdsl-opt``, ``axisflow-opt``,
``filecheck``).

Each RUN line starts its tools afresh, and a fresh ``xdsl-opt`` spends about
0.4 s of CPU importing xDSL, NumPy and axisflow before it reads a byte: over
the suite's ~260 tool runs that was over half of lit's CPU time. ``lit.cfg``
starts one server per lit run (``serve``): it imports the tools' modules once
and then forks a child per request. The RUN lines are unchanged: ``lit.cfg``
puts a directory of shims ahead of the tools on ``PATH``; a shim
(``warm_client.py``) hands the server its arguments, working directory,
environment and standard streams, and exits with the child's status.

A child is the tool's own entry point run in a process that has imported the
same modules, with the same arguments, streams, directory and environment
(the server itself runs with lit's environment for the RUN lines), so what
the tests check is what a fresh process prints. Two differences are
deliberate: children share the server's hash seed (one per lit run instead
of one per tool run), and a module the server imported is not imported
again. A shim that finds no server (not started yet, or gone) runs the tool
itself, so the suite never depends on the server.

The server is reaped with its children (their CPU time counts as lit's), and
it exits when lit does.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import marshal
import os
import select
import signal
import socket
import struct
import sys
import threading
import traceback
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import cast

TOOLS = ("xdsl-opt", "axisflow-opt", "filecheck")
"""The console scripts served warm (the others, e.g. ``axisflow``, whose
``run`` starts Dask, always start afresh)."""

PRELOAD = ("numpy", "axisflow.cli")
"""Modules the tools import on most runs, imported once by the server (with
every dialect, pass and frontend of the axisflow plugin)."""

HEADER = struct.Struct("!I")
"""A request's payload length; the reply is the exit status in the same form
(signed)."""
STATUS = struct.Struct("!i")


def _preload() -> dict[str, Callable[[], object]]:
    """The tools' entry points, loaded, and the modules their runs import."""
    for name in PRELOAD:
        importlib.import_module(name)
    from axisflow.universe import AXISFLOW_UNIVERSE

    for factories in (
        AXISFLOW_UNIVERSE.all_dialects,
        AXISFLOW_UNIVERSE.all_passes,
        AXISFLOW_UNIVERSE.all_frontends,
    ):
        for factory in factories.values():
            factory()
    scripts = entry_points(group="console_scripts")
    entries = {ep.name: ep.load() for ep in scripts if ep.name in TOOLS}
    # xdsl-opt looks its plugins up on every run: warm importlib.metadata's
    # directory caches once.
    entry_points(group="xdsl.universe")
    return entries


def _receive(connection: socket.socket) -> tuple[str, list[str], str, dict[str, str]]:
    """A request: the client's standard streams (now this process's 0, 1, 2)
    and its tool, arguments, working directory and environment."""
    header, fds, _flags, _address = socket.recv_fds(connection, HEADER.size, 3)
    if len(header) != HEADER.size or len(fds) != 3:
        raise ConnectionError("incomplete request")
    (length,) = HEADER.unpack(header)
    payload = bytearray()
    while len(payload) < length:
        chunk = connection.recv(length - len(payload))
        if not chunk:
            raise ConnectionError("incomplete request")
        payload += chunk
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    _reopen_standard_streams()
    tool, argv, cwd, environment = marshal.loads(bytes(payload))
    return tool, argv, cwd, environment


def _reopen_standard_streams() -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` made anew on the
    received descriptors, as Python makes them at start-up (``create_stdio``
    on POSIX): the server's were made for other files (a seekable
    ``/dev/null``, a log), and a stream caches what it found then."""
    streams: list[io.TextIOWrapper] = []
    for fd, old, name in (
        (0, sys.stdin, "<stdin>"),
        (1, sys.stdout, "<stdout>"),
        (2, sys.stderr, "<stderr>"),
    ):
        # open() as Python's start-up does: the buffer sized by the file
        binary = (
            open(fd, "rb", closefd=False)  # noqa: SIM115 (the stream outlives this)
            if fd == 0
            else open(fd, "wb", closefd=False)  # noqa: SIM115
        )
        cast(io.FileIO, binary.raw).name = name
        streams.append(
            io.TextIOWrapper(
                binary,
                encoding=old.encoding,
                errors=old.errors,
                newline="\n",
                line_buffering=fd == 2 or (fd == 1 and os.isatty(1)),
            )
        )
    sys.stdin = sys.__stdin__ = streams[0]
    sys.stdout = sys.__stdout__ = streams[1]
    sys.stderr = sys.__stderr__ = streams[2]


def _exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` gives."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_tool(entry: Callable[[], object], argv: list[str]) -> int:
    """Run a console script's entry point as its script does
    (``sys.exit(main())``) and end as Python ends: non-daemon threads
    joined, exit functions run, streams flushed."""
    sys.argv = argv
    try:
        status = _exit_status(entry())
    except SystemExit as stop:
        status = _exit_status(stop.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120  # Python's status when it cannot flush
    return status


def _child(
    connection: socket.socket,
    entries: dict[str, Callable[[], object]],
    record: str | None,
) -> None:
    """Serve one request in this forked process, then exit; with ``record``,
    append the tool and its status to that file."""
    status = 70  # EX_SOFTWARE: the request could not be served
    tool = "?"
    try:
        tool, argv, cwd, environment = _receive(connection)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environment)
        status = _run_tool(entries[tool], argv)
    finally:
        with contextlib.suppress(OSError):
            connection.sendall(STATUS.pack(status))
        if record is not None:
            with contextlib.suppress(OSError), open(record, "a") as file:
                file.write(f"{tool} {status}\n")
        os._exit(status)


def _reap() -> None:
    """Collect the finished children (so that their CPU time is counted)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def serve(path: str, parent: int, record: str | None = None) -> None:
    """Serve requests on the Unix socket ``path`` until process ``parent``
    (lit) is gone or SIGTERM arrives; with ``record``, each request's tool
    and status are appended to that file."""
    entries = _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    # The socket appears under its name only once it accepts requests.
    os.rename(path + ".new", path)
    signal.signal(signal.SIGTERM, lambda _signal, _frame: sys.exit(0))
    gc.freeze()  # children need not scan (and so copy) what is imported
    try:
        while os.getppid() == parent:
            ready, _, _ = select.select([listener], [], [], 0.5)
            _reap()
            if not ready:
                continue
            connection, _address = listener.accept()
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                _child(connection, entries, record)
            connection.close()
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        with contextlib.suppress(ChildProcessError):
            while True:
                os.wait()


def write_shims(directory: Path, path: str, scripts: dict[str, str]) -> None:
    """One shim per tool in ``directory``: it asks the server at ``path`` to
    run the tool, or runs ``scripts[tool]`` (the installed script) itself."""
    client = Path(__file__).with_name("warm_client.py")
    directory.mkdir(parents=True, exist_ok=True)
    for tool, script in scripts.items():
        shim = directory / tool
        shim.write_text(
            f"#!{sys.executable} -IS\n"
            "import sys\n"
            f"sys.path.insert(0, {str(client.parent)!r})\n"
            "from warm_client import run\n"
            f"run({path!r}, {tool!r}, {script!r})\n"
        )
        shim.chmod(0o755)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), *sys.argv[3:4])
