"""Running the ``minikafka`` command as an unprivileged user from a test run as root.

The checkout, the virtual environment and the interpreter may lie in folders only
their owner can read (a clone in a mode-700 home folder, ``.venv-test`` inside it), so
a new process of another user could neither start this interpreter nor import
minikafka.  Instead the command runs in a forked copy of this process that drops to
``nobody`` (uid and gid 65534, no supplementary groups) and calls
:func:`minikafka.cli.main.main` with the modules already imported here: nothing is read
from the checkout after the drop.  Run by a user other than root, the copy keeps that
user.
"""
from __future__ import annotations

import os
import select
import signal
import sys
import time
import traceback
from typing import Sequence

from minikafka.cli.main import build_parser, main

NOBODY = 65534


def run_cli_unprivileged(argv: Sequence[str], timeout_s: float = 60) -> tuple[int, str, int]:
    """``minikafka ARGV`` as uid/gid 65534: (exit code, its stderr, the uid it ran as).

    ``argv`` must parse (its parse runs here first, so that every module it needs is
    imported while the checkout can still be read)."""
    build_parser().parse_args(list(argv))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test run
        code = 70
        try:
            os.close(read_fd)
            os.dup2(write_fd, 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            os.chdir("/")
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.write(write_fd, f"uid {os.geteuid()}\n".encode())
            code = main(list(argv))
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stderr.flush()
            finally:
                os._exit(code)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise AssertionError(f"`minikafka {' '.join(argv)}` as uid {NOBODY} did not end within {timeout_s:g} s")
            ready, _, _ = select.select([read_fd], [], [], left)
            if ready:
                data = os.read(read_fd, 65536)
                if not data:
                    break
                chunks.append(data)
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    first, _, stderr = b"".join(chunks).decode(errors="replace").partition("\n")
    return os.waitstatus_to_exitcode(status), stderr, int(first.split()[1]) if first.startswith("uid ") else -1
