"""``minikafka bench ab``: two checkouts of minikafka side by side, row by row.

Two runs of the whole suite cannot tell a 5% change from noise here: a fresh cluster
settles at its own speed (on two cores, three brokers, ZooKeeper and the client share
them), and two fresh clusters of the same code can differ by a quarter on a produce row
for as long as they live. Each row is therefore measured in a way that takes that spread
out (docs/performance.md, "The hallway before and after: the verdict, row by row"):

* **cluster rows** (kcat producing through the Kafka listener): each sample is a fresh
  3-broker cluster (memory storage) of one checkout, the checkouts alternating A, B, B, A,
  ...; on each cluster a new topic per production, the first production only warms up;
  the brokers' CPU seconds (``/proc/PID/stat``) around each production.
* **client rows** (our Producer and Consumer): one cluster of the running tree, and the two
  checkouts' client code alternating, each sample in a process of its own running the
  suite's own function (:mod:`minikafka.bench.scenarios`); the process's CPU time around
  the timed call, after an untimed first one (what a process pays once is not per record).

A checkout is a folder holding the ``minikafka`` package (``git worktree add DIR REV``);
its samples run with it first on ``PYTHONPATH``. The samples use only what every version
since the Kafka listener has (``cluster.launcher.up``, ``bench.scenarios``), so an older
checkout can be measured against a newer one.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable

from ..errors import ClientError


@dataclass(frozen=True)
class Row:
    """One compared row: ``kind`` "cluster" (kcat, a fresh cluster per sample) or "client"
    (our clients' code alternating on one cluster)."""

    name: str
    kind: str
    title: str
    rf: int = 3
    acks: str = "all"
    mode: str = ""  # client rows: send, send_many, acks1, consume_records, consume_values


ROWS = {r.name: r for r in (
    Row("kcat-acks1-rf1", "cluster", "kcat, acks=1, RF 1", rf=1, acks="1"),
    Row("kcat-acks1-rf3", "cluster", "kcat, acks=1, RF 3, min.insync.replicas 2", rf=3, acks="1"),
    Row("send", "client", "our Producer, send, acks=all, RF 3", mode="send"),
    Row("send-many", "client", "our Producer, send_many, acks=all, RF 3", mode="send_many"),
    Row("send-acks1", "client", "our Producer, send, acks=1, RF 1", rf=1, acks="1", mode="acks1"),
    Row("poll", "client", "our Consumer, poll", mode="consume_records"),
    Row("poll-values", "client", "our Consumer, poll_batches + values()", mode="consume_values"),
)}

# One cluster of a checkout: a topic per production, kcat producing RECORDS records; a JSON
# line per production (records/s, the brokers' CPU µs per record).  It spells out the
# cluster's start and the CPU reading (scenarios.start_cluster, scale.cpu_ticks) because an
# older checkout has neither.
CLUSTER_SAMPLE = r'''
import json, os, shutil, signal, sys, tempfile
from minikafka.cluster import free_ports, launcher
from minikafka.cluster.state import load
from minikafka.bench import scenarios as sc
from minikafka.bench.workload import Workload
rf, acks, records, productions, parent = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
tick = os.sysconf("SC_CLK_TCK")
def cpu(pids):
    total = 0.0
    for pid in pids:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += (int(f[11]) + int(f[12])) / tick
    return total
d = tempfile.mkdtemp(prefix="minikafka-ab-", dir=parent or None)
base = free_ports.free_port_block(7)
try:
    launcher.up(d, brokers=3, zookeeper_port=base, base_port=base + 1, kafka_base_port=base + 4, storage="memory")
    state = load(d)
    brokers = [b for _, b in sorted(state.brokers.items())]
    target = sc.Target(",".join(b.endpoint for b in brokers),
                       ",".join(f"{b.host}:{b.kafka_port}" for b in brokers), cluster_dir=d)
    work = Workload(records, 100)
    pids = [b.pid for b in brokers]
    for i in range(productions):
        topic = f"ab-{i}"
        sc.create_topic(target, topic, 3, rf, 2 if rf >= 3 else None)
        before = cpu(pids)
        got = sc.produce_kcat(target, work, topic, acks)
        if got is None:
            sys.exit("kcat is not installed")
        print(json.dumps({"records_per_s": got["records_per_s"],
                          "cpu_us_per_record": (cpu(pids) - before) / records * 1e6}), flush=True)
finally:
    launcher.down(d)
    if not parent:
        shutil.rmtree(d, ignore_errors=True)
'''

# One sample of our client code against a running cluster: one JSON line.
CLIENT_SAMPLE = r'''
import json, sys, time
from minikafka.bench import scenarios as sc
from minikafka.bench.workload import Workload
bootstrap, topic, records, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
target = sc.Target(bootstrap, None)
work = Workload(records, 100)
# once untimed first: what a process pays once (imports, connections) is not per record
if mode.startswith("consume_"):
    sc.consume_python(target, topic, mode.split("_", 1)[1])
else:
    sc.produce_python(target, Workload(1000, 100), topic, 1 if mode == "acks1" else "all")
start = time.process_time()
if mode == "send":
    got = sc.produce_python(target, work, topic, "all")
elif mode == "send_many":
    got = sc.produce_python(target, work, topic, "all", bulk=True)
elif mode == "acks1":
    got = sc.produce_python(target, work, topic, 1)
else:
    got = sc.consume_python(target, topic, mode.split("_", 1)[1])
print(json.dumps({"records_per_s": got["records_per_s"],
                  "cpu_us_per_record": (time.process_time() - start) / records * 1e6}))
'''


def order(rounds: int) -> list[int]:
    """The sides of ``rounds`` rounds: 0, 1, 1, 0 each (so neither side is always first
    or always later in a drifting machine)."""
    return [0, 1, 1, 0] * rounds


@dataclass
class RowResult:
    """Every counted sample of one row, per side (0: A, 1: B)."""

    row: Row
    samples: tuple[list[dict], list[dict]] = field(default_factory=lambda: ([], []))

    def median(self, side: int, key: str) -> float:
        values = [s[key] for s in self.samples[side]]
        return statistics.median(values) if values else float("nan")

    def change(self) -> float:
        """B's median records/s against A's, as a fraction (+0.03: 3% faster)."""
        a, b = self.median(0, "records_per_s"), self.median(1, "records_per_s")
        return b / a - 1 if a > 0 else float("nan")

    def as_dict(self) -> dict:
        return {"row": self.row.name, "title": self.row.title, "samples": [len(s) for s in self.samples],
                "records_per_s": [self.median(i, "records_per_s") for i in (0, 1)],
                "cpu_us_per_record": [self.median(i, "cpu_us_per_record") for i in (0, 1)],
                "change": self.change()}


def table(results: list[RowResult], names: tuple[str, str]) -> str:
    """The comparison as a Markdown table, a line per row."""
    lines = [f"| row | samples a side | {names[0]}, records/s | {names[1]}, records/s | change | "
             f"CPU per record, {names[0]} / {names[1]} |", "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        who = "brokers" if r.row.kind == "cluster" else "client"
        lines.append(f"| {r.row.title} | {min(len(s) for s in r.samples)} | {r.median(0, 'records_per_s'):,.0f} | "
                     f"{r.median(1, 'records_per_s'):,.0f} | {r.change() * 100:+.1f}% | "
                     f"{who} {r.median(0, 'cpu_us_per_record'):.3f} / {r.median(1, 'cpu_us_per_record'):.3f} µs |")
    return "\n".join(lines)


def parse_rows(text: str) -> list[Row]:
    """``kcat-acks1-rf1,send`` -> the rows; an unknown name raises ClientError naming the known ones."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ROWS]
    if unknown or not names:
        raise ClientError(f"unknown row {', '.join(unknown) or repr(text)}: the rows are {', '.join(ROWS)}")
    return [ROWS[n] for n in names]


def checkout(path: str) -> str:
    """The folder of a checkout (it holds ``minikafka/__init__.py``), absolute."""
    full = os.path.abspath(path)
    if not os.path.isfile(os.path.join(full, "minikafka", "__init__.py")):
        raise ClientError(f"{path} holds no minikafka package (give a checkout's folder, e.g. from "
                          f"`git worktree add DIR REV`)")
    return full


def _run(args: list[str], tree: str, timeout_s: float) -> list[dict]:
    """A sample's process with ``tree`` first on PYTHONPATH; its JSON lines.  Stopped with
    SIGTERM (it stops its cluster) when this one is interrupted or it runs too long."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except BaseException as exc:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise ClientError(f"a sample from {tree} ran over {timeout_s:.0f} s and was stopped") from None
        raise
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no output"])[-1]
        raise ClientError(f"a sample from {tree} failed: {last}")
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def run(trees: tuple[str, str], rows: list[Row], clusters: int = 4, rounds: int = 4, records: int = 1_000_000,
        productions: int = 4, parent: str | None = None, say: Callable[[str], None] = print) -> list[RowResult]:
    """Measure ``rows`` with both checkouts: cluster rows on ``clusters`` fresh clusters a
    side (``productions`` each, the first not counted), client rows ``rounds`` times
    A, B, B, A on one cluster of the running tree.  Each cluster's folder is made in
    ``parent`` and left there (stopped), or in a temporary folder removed after it."""
    results = []
    for row in rows:
        res = RowResult(row)
        if row.kind == "cluster":
            for side in order((clusters + 1) // 2)[:clusters * 2]:
                got = _run(["-c", CLUSTER_SAMPLE, str(row.rf), row.acks, str(records), str(productions),
                            parent or ""], trees[side], 900)
                res.samples[side].extend(got[1:])
                say(f"{row.name}: {'AB'[side]} cluster: " + ", ".join(f"{g['records_per_s']:,.0f}" for g in got[1:]))
        else:
            _client_row(res, trees, rounds, records, parent, say)
        results.append(res)
    return results


def _client_row(res: RowResult, trees: tuple[str, str], rounds: int, records: int, parent: str | None,
                say: Callable[[str], None]) -> None:
    from ..cluster import launcher
    from . import scenarios as sc  # imported here: the CLI reads ROWS at every start
    from .workload import Workload

    row = res.row
    d = tempfile.mkdtemp(prefix="minikafka-ab-", dir=parent)
    try:
        target = sc.start_cluster(d)
        bootstrap = target.bootstrap
        consume = row.mode.startswith("consume_")
        if consume:  # one topic, filled once, read by every sample
            sc.create_topic(target, "ab-filled", 3, row.rf, 2)
            sc.produce_python(target, Workload(records, 100), "ab-filled", "all", bulk=True)
        for n, side in enumerate(order(rounds)):
            topic = "ab-filled" if consume else f"ab-{n}"
            if not consume:
                sc.create_topic(target, topic, 3, row.rf, 2 if row.rf >= 3 else None)
            (got,) = _run(["-c", CLIENT_SAMPLE, bootstrap, topic, str(records), row.mode], trees[side], 900)
            res.samples[side].append(got)
            say(f"{row.name}: {'AB'[side]}: {got['records_per_s']:,.0f} records/s")
    finally:
        launcher.down(d)
        if parent is None:
            shutil.rmtree(d, ignore_errors=True)
