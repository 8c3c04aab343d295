"""The differential fuzzer: seeded sequences of Kafka requests on minikafka and on Apache Kafka 3.9.

    minikafka reference fuzz --seeds 1..20 --ops 100      # start both clusters, fuzz, stop them
    minikafka reference fuzz --replay repro.json           # run one reproduction on both

For each seed, :func:`.fuzz_ops.generate` makes a sequence; it runs on the minikafka
cluster, then on the Kafka cluster (one after the other, never both at once), each time
with names prefixed by the seed (``fz<seed>-``), so that seeds share the two clusters
without seeing each other's topics, groups or transactional ids.  The answers and the end
state are compared (:mod:`.fuzz_compare`); a difference not in the allow-list is shrunk to
a shorter sequence that still shows one, and printed as a reproduction.

Both clusters run with the settings of :data:`FUZZ_CONFIGS`: no topic auto-creation (a
produce to a missing topic is not sent, on both), 10 partitions for the two internal
topics (Kafka's 50 only make its start slower), and for the fault steps
(:mod:`.fuzz_faults`) the same ZooKeeper session and replica lag timeouts, no leadership
moved back by a timer and no time retention; minikafka keeps its logs on disk
(:data:`STORAGE`), as Kafka does, so that a broker killed and started again has them.
Each :class:`.fuzz_run.Side` names its cluster's folder, whose recorded pids the fault
steps signal.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import ClientError
from . import fuzz_compare, fuzz_faults, fuzz_ops
from .fuzz_run import ACKS0_WAIT_S, Runner, Side

FUZZ_CONFIGS = {
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.num.partitions": "10",
    # fault steps: the same short timeouts on both, and no leadership moved back by a timer
    # (Kafka's every 5 minutes) at a moment that differs between the two runs
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "10000",
    "auto.leader.rebalance.enable": "false",
    # records carry 2020 timestamps: no time retention, which Kafka checks 30 s after a broker's start
    "log.retention.ms": "-1",
    # nor compaction, whose moment (Kafka's cleaner looks every 15 s, and rolls a segment at each append
    # of 2020 records, segment.ms being counted from a segment's first timestamp) differs between the runs
    "log.cleaner.enable": "false",
    # a consumer's group is formed at once (Kafka's default waits 3 s for more members)
    "group.initial.rebalance.delay.ms": "0",
    # log starts checkpointed each second, so that a broker a fault step kills comes back with
    # the log start of the sequence's last DeleteRecords on both (Kafka writes every 60 s)
    "log.flush.start.offset.checkpoint.interval.ms": "1000",
}
# Kafka's side only: its log tasks (the log start checkpoint among them) begin at once rather
# than 30 s after a broker's start; minikafka's begin one interval after it
KAFKA_ONLY_CONFIGS = {"log.initial.task.delay.ms": "0"}


@dataclass
class SeedResult:
    seed: int | None
    ops: list[dict]
    diffs: list[dict]
    shrunk: list[dict] | None = None
    shrunk_diffs: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unexplained(self) -> list[dict]:
        return fuzz_compare.unexplained(self.diffs)


def run_side(side: Side, prefix: str, ops: list[dict]) -> dict:
    """``{"answers": [...], "state": {...}}`` of ``ops`` on one cluster, in this process."""
    runner = Runner(side, prefix, fault_step=fuzz_faults.fault)
    try:
        answers = [runner.run(op) for op in ops]
        return {"answers": answers, "state": runner.state(ops)}
    finally:
        runner.close()


def run_side_apart(side: Side, prefix: str, ops: list[dict], attempts: int = 2) -> dict:
    """:func:`run_side` in a child process (``python -m minikafka.reference.fuzz``), so that a
    client library that aborts (librdkafka asserts now and then while a fenced transactional
    producer is torn down) costs one attempt, not the whole run.  A second attempt uses a
    new prefix; if it fails too, ClientError (the cluster is out of reach, say)."""
    last = ""
    for attempt in range(attempts):
        job = json.dumps({"side": [side.name, side.bootstrap, side.zookeeper, side.dir],
                          "prefix": f"{prefix}{attempt}", "ops": ops})
        done = subprocess.run([sys.executable, "-m", "minikafka.reference.fuzz", "--side"], input=job, text=True,
                              capture_output=True, timeout=3600)
        for line in done.stderr.splitlines():  # the fault steps' notes (librdkafka's logs stay out)
            if line.startswith(f"{side.name}: "):
                print(line, file=sys.stderr)
        if done.returncode == 0:
            return json.loads(done.stdout)
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:300]
        if side.dir and any(op["op"] == "fault" for op in ops):
            from .fuzz_faults import Processes
            Processes(side).heal()  # a broker the failed run left paused or down
    raise ClientError(f"the fuzzer could not run a sequence on {side.name} ({side.bootstrap}): {last}")


class Fuzzer:
    """Both clusters, and a counter that makes every run's prefix new."""

    def __init__(self, kafka: Side, ours: Side, progress=lambda msg: None) -> None:  # noqa: ANN001
        self.kafka, self.ours, self.progress = kafka, ours, progress
        self.runs = 0
        self.last: dict[str, dict] = {}  # the last runs compared, by side

    def diffs(self, seed: int | None, ops: list[dict]) -> list[dict]:
        """Run ``ops`` on minikafka, then on Kafka; their differences."""
        self.runs += 1
        prefix = f"fz{seed if seed is not None else 'r'}-{self.runs}-"
        ours = run_side_apart(self.ours, prefix, ops)
        kafka = run_side_apart(self.kafka, prefix, ops)
        self.last = {"kafka": kafka, "ours": ours}
        return fuzz_compare.compare(ops, kafka, ours)

    def check(self, seed: int | None, ops: list[dict], shrink: bool = True) -> SeedResult:
        start = time.monotonic()
        result = SeedResult(seed, ops, self.diffs(seed, ops))
        if result.unexplained and shrink:
            self.progress(f"seed {seed}: {len(result.unexplained)} unexplained differences; shrinking "
                          f"{len(ops)} operations")
            last: dict[str, list[dict]] = {}

            def fails(candidate: list[dict]) -> bool:
                found = fuzz_compare.unexplained(self.diffs(seed, candidate))
                if found:
                    last["diffs"] = found
                return bool(found)
            result.shrunk = fuzz_compare.shrink(ops, fails)
            result.shrunk_diffs = last.get("diffs", result.unexplained) if result.shrunk != ops else result.unexplained
        result.seconds = time.monotonic() - start
        return result


STORAGE = "disk"  # minikafka's brokers keep their logs on disk, as Kafka's do: a broker killed comes back with them


@contextmanager
def clusters(folder: str | os.PathLike, progress=lambda msg: None) -> Iterator[tuple[Side, Side]]:  # noqa: ANN001
    """A fresh 3-broker minikafka cluster and a fresh 3-broker Kafka 3.9 cluster (each with
    its own ZooKeeper, on free ports), stopped by pid after."""
    from ..cluster import free_ports, launcher
    from . import cluster as reference

    root = Path(folder)
    ref = reference.up(root / "kafka", configs={**FUZZ_CONFIGS, **KAFKA_ONLY_CONFIGS}, progress=lambda m: progress(f"Kafka: {m}"))
    try:
        zk_port = free_ports.free_port()
        base = free_ports.free_port_block(3, avoid=(zk_port,))
        kbase = free_ports.free_port_block(3, avoid=(zk_port, base, base + 1, base + 2))
        progress("minikafka: starting 3 brokers")
        ours = launcher.up(root / "minikafka", zookeeper_port=zk_port, base_port=base, kafka_base_port=kbase,
                           broker_configs=FUZZ_CONFIGS, storage=STORAGE)
        try:
            sides = (Side("Kafka", ref.bootstrap, ref.zookeeper_connect, str(root / "kafka")),
                     Side("minikafka", ",".join(f"127.0.0.1:{b.kafka_port}" for b in ours.brokers.values()),
                          ours.zookeeper.connect, str(root / "minikafka")))
            for side in sides:
                progress(f"{side.name}: creating the internal topics")
                warm_up(side)
            yield sides
        finally:
            launcher.down(root / "minikafka")
    finally:
        reference.down(root / "kafka")


def warm_up(side: Side, timeout_s: float = 120.0) -> None:
    """Create ``__consumer_offsets`` and ``__transaction_state`` on a new cluster (an offset
    commit and a transaction, under names no seed uses) and wait until both answer, so that no
    seed's first group or transactional request meets a coordinator still loading (Kafka
    answers NOT_COORDINATOR for a moment after it creates the topic, minikafka does not)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    deadline = time.monotonic() + timeout_s
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    while True:
        try:
            admin.create_topics([NewTopic("warm-up", 1, 3)], request_timeout=30)["warm-up"].result(60)
            break
        except Exception as exc:  # noqa: BLE001 (brokers still starting; or it exists from an earlier try)
            if "already exists" in str(exc):
                break
            if time.monotonic() > deadline:
                raise ClientError(f"{side.name} ({side.bootstrap}) did not create a topic: {exc}") from None
            time.sleep(1)
    while True:
        consumer = Consumer({"bootstrap.servers": side.bootstrap, "group.id": "warm-up"})
        try:
            consumer.commit(offsets=[TopicPartition("warm-up", 0, 0)], asynchronous=False)
            break
        except Exception as exc:  # noqa: BLE001 (the coordinator is loading)
            if time.monotonic() > deadline:
                raise ClientError(f"{side.name} ({side.bootstrap}) refused an offset commit: {exc}") from None
            time.sleep(1)
        finally:
            consumer.close()
    producer = Producer({"bootstrap.servers": side.bootstrap, "transactional.id": "warm-up"})
    producer.init_transactions(max(deadline - time.monotonic(), 1))
    producer.begin_transaction()
    producer.produce("warm-up", b"x")
    producer.commit_transaction(max(deadline - time.monotonic(), 1))


# the run that tests/process/test_reference_fuzz.py (CI) and `python -m minikafka.reference.fidelity` make
CI_SEEDS = (1, 2, 3)
CI_OPS = 40


def _values(allowed: object) -> str:
    if allowed is ...:
        return "any"
    return " or ".join(f"`{json.dumps(v)}`" for v in (allowed if isinstance(allowed, tuple) else (allowed,)))


def render_section() -> str:
    """The differential fuzzing section of docs/fidelity.md: what is run, how, and the
    allow-list with each entry's reason (the differences the fuzzer explains)."""
    kinds = ", ".join(f"`{k}`" for k in sorted(fuzz_ops.KINDS))
    lines = [
        "## Differential fuzzing",
        "",
        "Scripts find only what someone thought to script, so `minikafka reference fuzz` also asks both clusters "
        "random questions: for each seed a sequence of operations (`minikafka/reference/fuzz_ops.py`: "
        f"{kinds}) runs on a fresh 3-broker minikafka cluster and then on a fresh 3-broker Apache Kafka cluster, "
        "one after the other, each through the same clients (confluent-kafka's AdminClient, Producer and "
        "Consumer; Fetch, ListOffsets, OffsetsForLeaderEpoch and OffsetDelete built by hand and sent to the "
        "partition's leader or the group's coordinator). Seeds share the two clusters under their own name "
        "prefixes (`--jobs N` starts N pairs of clusters, each running its share of the seeds). Before the first "
        "seed, each cluster creates its internal topics (an offset commit and a transaction under names no seed "
        "uses), so that no seed meets a coordinator still loading. An AlterConfigs waits until every broker's "
        "log says it applied the change (Kafka's `Processing override`, minikafka's `overrides now`), and an "
        f"acks=0 produce until its records are in the log (at most {ACKS0_WAIT_S:.0f} s), since the next request "
        "goes over another connection. Every answer is compared, normalized (producer ids, broker clocks, ports and brokers masked; "
        "a read waits for a settled partition: a leader, the full ISR, the high watermark at the log end and the "
        "last stable offset at the high watermark; a batch cut off at the end of a Fetch answer is left out, and "
        "so are aborted transactions starting after the last batch returned, which Kafka lists up to its offset "
        "index's next entry), and then the end state: each partition's batches and "
        "records, log start, high watermark, last stable offset and aborted transactions, the groups' committed "
        "offsets and states, and the topics' znodes. Both clusters run with "
        + ", ".join(f"{k}={v}" for k, v in FUZZ_CONFIGS.items()) + f" (minikafka with {STORAGE} storage; Kafka with "
        + ", ".join(f"{k}={v}" for k, v in KAFKA_ONLY_CONFIGS.items()) + " too).",
        "",
        "About one operation in " + str(fuzz_ops.FAULT_EVERY) + " is a fault step (`minikafka/reference/"
        "fuzz_faults.py`), drawn from a second random stream of the seed so that the seed's other operations stay "
        "the same: a role (" + ", ".join(f"`{r}`" for r in fuzz_ops.FAULT_ROLES) + ") is resolved to a broker on "
        "each cluster (a partition's leader, its first follower in replica order, /controller, FindCoordinator), "
        "which gets " + ", ".join(f"SIG{s}" for s in fuzz_ops.FAULT_SIGNALS) + " by its recorded pid, "
        f"{fuzz_faults.CHECKPOINT_S:.0f} s after the cluster settled (both have written their log start checkpoints by "
        "then). The step "
        "waits until the others have moved on without it (its registration gone, a controller, every partition it "
        "held with another leader and an ISR without it, or leaderless with it as the last ISR member), starts it "
        "again with its data (SIGSTOP: SIGCONT) and waits until the cluster has settled (three brokers registered, "
        "every partition of the sequence's and the internal topics with a leader and its full ISR, the "
        "coordinators found). Its answer holds no broker id and no time: the target partition's outcome (another "
        "leader or offline, its leader epoch's steps), whether the controller or coordinator moved, and checks "
        "over every partition (leaders moved, ISRs left, leader epochs stepped as Kafka's controller steps them: one "
        "step for each change, two where a new controller took over from the dead broker and elected a leader for "
        "a partition it led; elections on the return only where a partition was offline, every high watermark "
        "kept). Whether the broker was the controller too is not in the answer (it may be on one cluster only); "
        "the target partition's epoch steps leave a takeover's extra step out. A fault step costs seconds (about "
        "zookeeper.session.timeout.ms plus a JVM's start); `--no-faults` leaves them out.",
        "",
        "A difference not explained below fails the run; it is shrunk (delta debugging over the operations) to a "
        "short sequence and written as a reproduction that `minikafka reference fuzz --replay FILE` runs on "
        f"both clusters again. CI runs seeds {CI_SEEDS[0]}..{CI_SEEDS[-1]} with {CI_OPS} operations each, and a "
        "short sequence around a leader's SIGKILL (`fuzz_ops.fault_drill`; the seeds hold a SIGTERM and a SIGSTOP) "
        "(tests/process/test_reference_fuzz.py); a long sweep is "
        "`minikafka reference fuzz --seeds 1..200 --ops 300 --repro-dir repros`.",
        "",
        "The known differences (`minikafka/reference/fuzz_compare.py`, `ALLOWED`), each matched by the path of "
        "the answer or state it concerns; one marked *and what follows* explains everything later in the same "
        "sequence too:",
        "",
        "| name | where | why |",
        "| --- | --- | --- |",
    ]
    for a in fuzz_compare.ALLOWED:
        where = "`" + a.pattern.replace("|", "\\|") + "`"
        if a.kafka is not ... or a.ours is not ...:
            where += f" (Kafka {_values(a.kafka)}, minikafka {_values(a.ours)})"
        if a.after:
            where += f", after a `{a.after}`"
        if a.cascade:
            where += ", *and what follows*"
        lines.append(f"| {a.name} | {where} | {a.reason} |")
    return "\n".join(lines) + "\n"


def parse_seeds(text: str) -> list[int]:
    """``7``, ``1..20`` or ``1,4,9`` as a list of seeds (ValueError otherwise)."""
    out: list[int] = []
    for part in text.split(","):
        if ".." in part:
            lo, hi = part.split("..", 1)
            if int(hi) < int(lo):
                raise ValueError(f"an empty range of seeds: {part}")
            out += range(int(lo), int(hi) + 1)
        else:
            out.append(int(part))
    return out


def load_replay(path: str) -> tuple[int | None, list[dict]]:
    """The seed and operations of a reproduction file (ValueError if it is not one)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the reproduction {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("ops"), list) or \
            not all(isinstance(op, dict) and op.get("op") in fuzz_ops.KINDS for op in data["ops"]):
        raise ValueError(f"{path} is not a reproduction (a JSON object with an `ops` list of operations)")
    return data.get("seed"), data["ops"]


def report(result: SeedResult, out=sys.stdout, repro_dir: str | None = None) -> None:  # noqa: ANN001
    """Print one seed's outcome; an unexplained difference with its reproduction."""
    names: dict[str, int] = {}
    for d in result.diffs:
        if d["allowed"] is not None:
            names[d["allowed"].name] = names.get(d["allowed"].name, 0) + 1
    known = ", ".join(f"{n} x{c}" for n, c in sorted(names.items())) or "none"
    print(f"seed {result.seed}: {len(result.ops)} ops, {len(result.unexplained)} unexplained differences "
          f"(known: {known}) in {result.seconds:.0f} s", file=out, flush=True)
    for d in result.unexplained[:20]:
        print(f"  {fuzz_compare.describe(d)}", file=out)
    if result.unexplained:
        ops = result.shrunk or result.ops
        text = fuzz_compare.reproduction(result.seed, ops, result.shrunk_diffs or result.unexplained)
        if repro_dir:
            Path(repro_dir).mkdir(parents=True, exist_ok=True)
            path = Path(repro_dir) / f"repro-seed-{result.seed}.json"
            path.write_text(text + "\n")
            print(f"  reproduction ({len(ops)} ops): {path}", file=out, flush=True)
        else:
            print(f"  reproduction ({len(ops)} ops):\n{text}", file=out, flush=True)


def main_run(seeds: list[int] | None, ops: int, replay: str | None, repro_dir: str | None, shrink: bool,
             progress=lambda msg: print(msg, file=sys.stderr, flush=True), faults: bool = True,
             jobs: int = 1) -> int:  # noqa: ANN001
    """What ``minikafka reference fuzz`` does: 0 when no difference is unexplained, else 1
    (``faults``: the seeds' sequences hold fault steps; ``jobs``: that many pairs of clusters,
    each running its share of the seeds, since a fault step disturbs every seed on its cluster)."""
    work = [load_replay(replay)] if replay else [(s, fuzz_ops.generate(s, ops, faults)) for s in seeds or []]
    jobs = max(1, min(jobs, len(work)))
    lock = threading.Lock()
    found: list[SeedResult] = []

    def worker(share: list[tuple[int | None, list[dict]]], say) -> None:  # noqa: ANN001
        with tempfile.TemporaryDirectory(prefix="minikafka-fuzz-") as tmp, clusters(tmp, say) as (kafka, ours):
            fuzzer = Fuzzer(kafka, ours, say)
            for seed, sequence in share:
                result = fuzzer.check(seed, sequence, shrink=shrink and not replay)
                with lock:
                    report(result, repro_dir=repro_dir)
                    found.append(result)

    if jobs == 1:
        worker(work, progress)
    else:
        with ThreadPoolExecutor(jobs) as pool:
            done = [pool.submit(worker, work[i::jobs], lambda m, i=i: progress(f"[{i + 1}] {m}")) for i in range(jobs)]
            for f in done:
                f.result()
    bad = sum(1 for r in found if r.unexplained)
    total = sum(len(r.unexplained) for r in found)
    print(f"{len(work)} sequences, {bad} with unexplained differences ({total} in all)", flush=True)
    return 1 if bad else 0

if __name__ == "__main__":
    # the child of run_side_apart: a job on stdin, its answers on stdout
    if sys.argv[1:] != ["--side"]:
        sys.exit("usage: python -m minikafka.reference.fuzz --side < job.json (see run_side_apart)")
    job = json.load(sys.stdin)
    json.dump(run_side(Side(*job["side"]), job["prefix"], job["ops"]), sys.stdout)
    sys.stdout.flush()
    os._exit(0)  # no client teardown: its answers are out
