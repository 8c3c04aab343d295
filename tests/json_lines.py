"""A child process that prints one JSON object per line (Kafka's Verifiable* tools, the
Java example program), read as it runs.

``JsonLinesProcess(argv, log)`` starts it (stderr to ``log``); ``wait_event(pred, timeout_s)``
waits for the first line matching ``pred`` (a dict -> bool); ``events`` is everything read so
far; ``stop()`` ends the child by its pid (TERM, then KILL) and returns its exit code.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable


class JsonLinesProcess:
    def __init__(self, argv: list[str], log: str | os.PathLike, env: dict | None = None,
                 cwd: str | os.PathLike | None = None) -> None:
        self.log = Path(log)
        self._err = open(self.log, "wb")
        self._out = open(self.log.with_suffix(".out"), "w")  # stdout as read, for a look after a failure
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._err, env=env, cwd=cwd, start_new_session=True)
        self.events: list[dict] = []
        self.other_lines: list[str] = []
        self._changed = threading.Condition()
        self._eof = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            self._out.write(line + "\n")
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self._changed:
                if isinstance(event, dict):
                    self.events.append(event)
                elif line:
                    self.other_lines.append(line)
                self._changed.notify_all()
        self._out.close()
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    def wait_event(self, pred: Callable[[dict], bool], timeout_s: float, what: str = "an event") -> dict:
        """The first event matching ``pred``; fails after ``timeout_s`` or when the output ends without it."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        with self._changed:
            while True:
                for e in self.events[seen:]:
                    if pred(e):
                        return e
                seen = len(self.events)
                if self._eof:
                    raise AssertionError(f"{what}: the program ended (exit {self.proc.wait()}) without it\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}\n{self.tail()}")
                self._changed.wait(min(left, 1.0))

    def select(self, pred: Callable[[dict], bool]) -> list[dict]:
        with self._changed:
            return [e for e in self.events if pred(e)]

    def wait_exit(self, timeout_s: float) -> int:
        """Wait for the child to exit by itself and its output to be read; its exit code."""
        code = self.proc.wait(timeout_s)
        self._reader.join(30)
        return code

    def stop(self, grace_s: float = 15) -> int:
        """TERM the child (Kafka's tools print their summary then), KILL it after ``grace_s``."""
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._reader.join(30)
        self._err.close()
        return self.proc.returncode

    def tail(self, lines: int = 40) -> str:
        """The last lines of the child's stderr, for failure messages."""
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])
