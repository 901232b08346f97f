"""The shim side of ``warm_tools``: run a tool in the warm server, or afresh.

Imported by the shims ``warm_tools.write_shims`` writes, under ``python -I
-S``, so it imports only what the interpreter has built in or at hand.
"""

from __future__ import annotations

import marshal
import os
import socket
import struct
import sys

# The wire format of warm_tools.HEADER and warm_tools.STATUS, written again
# here: importing warm_tools would import what the server preloads.
HEADER = struct.Struct("!I")
STATUS = struct.Struct("!i")


def run(path: str, tool: str, script: str) -> None:
    """Have the server at ``path`` run ``tool`` with this process's
    arguments, directory, environment and standard streams, and exit with its
    status; without a server, replace this process by ``script``."""
    argv = [script, *sys.argv[1:]]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        os.execv(script, argv)
    payload = marshal.dumps((tool, argv, os.getcwd(), dict(os.environ)))
    socket.send_fds(connection, [HEADER.pack(len(payload))], [0, 1, 2])
    connection.sendall(payload)
    reply = b""
    while len(reply) < STATUS.size:
        chunk = connection.recv(STATUS.size - len(reply))
        if not chunk:
            sys.stderr.write(
                f"{tool}: the warm server's child ended without a status\n"
            )
            sys.exit(70)
        reply += chunk
    sys.exit(STATUS.unpack(reply)[0])
