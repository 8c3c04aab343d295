"""Runs docs/tutorial.md: every `$ minikafka ...` command in its console blocks, in order,
checking that each line of output the tutorial promises appears.

Rules of the format (so the tutorial stays readable):
* a console block line starting with `$ ` is a command; the lines after it, up to the
  next command, are output it must print (in any order, whitespace-insensitive);
  `...` inside an expected line matches anything;
* commands that only look (describe, status, list, consume, grep, curl, cat, scenario) are
  re-run until their promised output appears or 60 s pass: the tutorial's own
  "run it again until" steps;
* the tutorial's ports (2181, 9092-9094) are replaced by free ones and it runs in a
  temporary folder, so its `.minikafka` cluster folder is the test's own;
* a process a page starts in the background saves its pid in a `*.pid` file, and is
  SIGKILLed when the test ends.

docs/groups.md and docs/retention.md are run the same way (tests/docs/test_groups_doc.py,
tests/docs/test_retention_doc.py).
"""
from __future__ import annotations

import pytest

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from process_helpers import free_port, free_port_block, stop_cluster

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
# The tutorial's "be quick" step: three commands (produce, consume, describe) must run
# within replica.lag.time.max.ms of freezing a follower, before the leader drops it from
# the ISR. The page says 6 s; the test gives its cluster 12 s, so that a loaded machine's
# slower command starts stay inside the window (the steps that wait for the ISR to
# shrink are re-run until it has, and take those seconds longer). The times that count
# against it are doubled too: the strict topic's producer waits out an ISR shrink within
# its delivery timeout.
PAGE_LAG_MS, TEST_LAG_MS = 6000, 12000
TIMES = ((f"replica.lag.time.max.ms={PAGE_LAG_MS} ", f"replica.lag.time.max.ms={TEST_LAG_MS} "),
         ("--delivery-timeout-ms 12000", "--delivery-timeout-ms 24000"))
LOOKING = ("topics describe", "topics list", "groups describe", "groups list", "cluster status", "consume", "scenario", "grep", "curl", "cat ")


def parse(text: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:].strip(), []))
            elif steps and line.strip():
                steps[-1][1].append(line.strip())
    return steps


def _norm(s: str) -> str:
    return " ".join(s.split())


def _matches(expected: str, output_lines: list[str]) -> bool:
    pattern = ".*".join(re.escape(part) for part in _norm(expected).split("..."))
    rx = re.compile(pattern)
    return any(rx.search(_norm(line)) for line in output_lines)


def run_console_doc(doc: Path, tmp_path: Path, min_steps: int = 15) -> None:
    """Run every ``$ `` command of ``doc``'s console blocks in ``tmp_path``, checking
    the promised output; stop the doc's cluster and any process whose pid the doc
    saved in a ``*.pid`` file, also when a step fails."""
    steps = parse(doc.read_text())
    assert len(steps) >= min_steps, f"{doc.name} should walk through many steps"
    zk = free_port()
    base = free_port_block(3, avoid=(zk,))
    kafka_base = free_port_block(3, avoid=(zk, base, base + 1, base + 2))
    ports = {"2181": str(zk), "9092": str(base), "9093": str(base + 1), "9094": str(base + 2)}
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    try:
        for command, expected in steps:
            swap = lambda text: re.sub(r"\b(2181|9092|9093|9094)\b", lambda m: ports[m.group(1)], text)  # noqa: E731
            cmd = swap(command)
            expected = [swap(e) for e in expected]
            cmd = cmd.replace("cluster up", f"cluster up --zookeeper-port {zk} --base-port {base} "
                                            f"--kafka-base-port {kafka_base}", 1) \
                if "cluster up" in cmd and "--base-port" not in cmd else cmd
            for page_value, test_value in TIMES:
                cmd = cmd.replace(page_value, test_value)
            looking = any(k in cmd for k in LOOKING) and "produce" not in cmd and "--group" not in cmd
            deadline = time.monotonic() + (60 if looking else 0)
            while True:
                proc = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                                      timeout=180, stdin=subprocess.DEVNULL)
                lines = (proc.stdout + proc.stderr).splitlines()
                missing = [e for e in expected if not _matches(e, lines)]
                if not missing:
                    break
                if time.monotonic() >= deadline:
                    raise AssertionError(f"`{command}` did not print {missing!r}; it printed:\n{proc.stdout}{proc.stderr}")
                time.sleep(0.5)
    finally:
        for pidfile in tmp_path.glob("*.pid"):
            try:
                pid = int(pidfile.read_text().split()[0])
                # only a process the page started: it runs in the page's folder (a pid that
                # another process took over since, pids wrapping around, is left alone)
                if os.readlink(f"/proc/{pid}/cwd") == os.path.realpath(tmp_path):
                    os.kill(pid, signal.SIGKILL)
            except (ValueError, IndexError, OSError):
                pass
        if (tmp_path / ".minikafka").exists():
            stop_cluster(tmp_path / ".minikafka")


@pytest.mark.process
def test_tutorial_commands_print_what_the_tutorial_promises(tmp_path):
    run_console_doc(TUTORIAL, tmp_path)


def test_parse_reads_commands_and_their_output():
    steps = parse("text\n```console\n$ minikafka a\nout 1\n\n$ minikafka b\n```\n")
    assert steps == [("minikafka a", ["out 1"]), ("minikafka b", [])]
    assert _matches("Leader: ... Isr: 1,2", ["Topic: t\tLeader: 1\tIsr: 1,2"])
    assert not _matches("Isr: 1,2,3", ["Isr: 1,2"])


def test_the_page_sets_the_lag_time_the_test_widens():
    # the rewrite above finds the page's setting (else the "be quick" step runs at 6 s again)
    text = TUTORIAL.read_text()
    assert all(page_value in text for page_value, _ in TIMES)
