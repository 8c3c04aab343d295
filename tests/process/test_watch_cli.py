"""``--watch`` against live clusters: ``topics describe`` in an 80-column pseudo-terminal
highlights the new leader after its leader stops; ``cluster status`` and ``groups
describe`` piped print frame after frame, changed cells marked; Ctrl-C exits 0."""
from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import uuid

import pytest

from minikafka import Admin, TopicPartition
from process_helpers import wait_for

pytestmark = pytest.mark.process

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
REVERSE = r"\x1b\[[0-9;]*?\b7\b[0-9;]*m"


class Watched:
    """``python -m minikafka ARGS`` with its output collected by a reader thread, on a
    pseudo-terminal of ``columns`` x 40 or (``tty=False``) on a pipe."""

    def __init__(self, args: list[str], tty: bool, columns: int = 80):
        env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(columns), LINES="40")
        for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
            env.pop(name, None)
        self.chunks: list[bytes] = []
        if tty:
            master, slave = os.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
            self.proc = subprocess.Popen([sys.executable, "-m", "minikafka", *args], stdin=subprocess.DEVNULL,
                                         stdout=slave, stderr=slave, env=env)
            os.close(slave)
            read = lambda: os.read(master, 65536)  # noqa: E731
            self._close = lambda: os.close(master)  # noqa: E731
        else:
            self.proc = subprocess.Popen([sys.executable, "-m", "minikafka", *args], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
            read = lambda: self.proc.stdout.read1(65536)  # noqa: E731
            self._close = lambda: self.proc.stdout.close()  # noqa: E731

        def pump() -> None:
            while True:
                try:
                    chunk = read()
                except OSError:  # EIO: the terminal's other side closed
                    return
                if not chunk:
                    return
                self.chunks.append(chunk)

        self.reader = threading.Thread(target=pump, daemon=True)
        self.reader.start()

    def output(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def frames(self, title: str) -> list[str]:
        return self.output().split(title)[1:]

    def interrupt(self) -> int:
        """SIGINT (Ctrl-C); the exit status."""
        assert self.proc.poll() is None, self.output()
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(30)
        self.reader.join(10)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        self._close()


def test_topics_describe_watch_fits_80_columns_and_highlights_the_new_leader(make_cluster):
    c = make_cluster(brokers=2)
    topic = "watched-orders-with-a-long-name-that-does-not-fit-in-a-narrow-column"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=2, replication_factor=2)
        wait_for(lambda: all(p.leader > 0 and len(p.isr) == 2 for p in admin.describe_topics([topic])[0].partitions),
                 30, message="leaders and full ISRs")
        leader = admin.describe_topics([topic])[0].partitions[0].leader
    other = 3 - leader
    title = "minikafka topics describe"
    w = Watched(["topics", "describe", topic, "--bootstrap-server", c.bootstrap, "--watch", "--interval", "0.3"],
                tty=True)
    try:
        wait_for(lambda: len(w.frames(title)) >= 2 or w.proc.poll() is not None, 60, message="two frames")
        c.stop(leader)  # controlled shutdown: partition 0 moves to the other broker at once

        def highlighted_new_leader() -> bool:
            for frame in w.frames(title):
                for line in frame.split("\n"):
                    cells = ANSI.sub("", line).split()
                    if len(cells) >= 3 and cells[0].startswith("watched-orders") and cells[1] == "0" \
                            and cells[2] == str(other):
                        return bool(re.search(REVERSE + rf"\s*{other}\s*\x1b\[0m", line))
            return False

        wait_for(highlighted_new_leader, 60, message=f"a frame with leader {other} of partition 0 highlighted")
        code = w.interrupt()
    finally:
        w.close()
    assert code == 0
    text = ANSI.sub("", w.output().replace("\r", "\n"))
    lines = [line for line in text.split("\n") if line.strip()]
    assert any(line.startswith("TOPIC") and "LEADER" in line and "LEO" in line for line in lines)
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert "…" in text  # the long topic name is cut, not wrapped
    assert "Traceback" not in text


def test_cluster_status_watch_prints_frames_on_a_pipe_until_ctrl_c(cluster):
    title = "minikafka cluster status  every 0.2s"
    w = Watched(["cluster", "status", "--dir", cluster.dir, "--watch", "--interval", "0.2"], tty=False)
    try:
        wait_for(lambda: len(w.frames(title)) >= 3 or w.proc.poll() is not None, 60, message="three frames")
        code = w.interrupt()
    finally:
        w.close()
    assert code == 0
    frame = w.frames(title)[1]
    assert "\x1b[" not in frame  # a pipe gets plain text
    assert re.search(r"^BROKER\s+PID\s+PROCESS\s+REGISTERED\s+CTRL\s+ENDPOINT\s+KAFKA", frame, re.M), frame
    assert re.search(r"^127\.0\.0\.1:\d+\s+\d+\s+running\s+serving\s+\d", frame, re.M), frame
    assert all(len(line) <= 80 for line in w.output().splitlines())


def test_groups_describe_watch_marks_a_moved_offset(cluster):
    group, topic = f"watched-{uuid.uuid4().hex[:8]}", f"watched-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=2)
        admin.alter_group_offsets(group, {tp: 0})
        title = "minikafka groups describe  every 0.2s"
        w = Watched(["groups", "describe", group, "--bootstrap-server", cluster.bootstrap, "--watch",
                     "--interval", "0.2"], tty=False)
        try:
            wait_for(lambda: len(w.frames(title)) >= 2 or w.proc.poll() is not None, 60, message="two frames")
            assert re.search(rf"^{topic}\s+0\s+0\s+0\s+0\s", w.frames(title)[1], re.M), w.output()
            admin.alter_group_offsets(group, {tp: 0})  # the same offset: nothing changes
            count = len(w.frames(title))
            wait_for(lambda: len(w.frames(title)) >= count + 2, 60, message="two more frames")
            assert "*" not in "".join(w.frames(title)[1:])
            with Admin(cluster.bootstrap) as a2:
                a2.delete_group(group)  # gone: the group row changes state
            wait_for(lambda: "does not exist" in w.output(), 60, message="the group to go away")
            code = w.interrupt()
        finally:
            w.close()
    assert code == 0
    assert re.search(r"\bDead\*", w.output()), w.output()


def test_watch_json_prints_one_document_per_line(cluster):
    w = Watched(["cluster", "status", "--dir", cluster.dir, "--watch", "--json", "--interval", "0.2"], tty=False)
    try:
        wait_for(lambda: w.output().count("\n") >= 2 or w.proc.poll() is not None, 60, message="two documents")
        code = w.interrupt()
    finally:
        w.close()
    assert code == 0
    docs = [json.loads(line) for line in w.output().splitlines() if line.startswith("{")]
    assert len(docs) >= 2 and all(len(d["brokers"]) == 3 for d in docs)
